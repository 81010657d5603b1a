"""The test suite: one package per package of the project (``tests/ssot``, ``tests/tune``,
``tests/analysis``, ``tests/benchmarks``), each test module named after the module it tests;
fixtures shared by several modules in ``tests/conftest.py`` (``tests/<package>/conftest.py``
for one package's), helpers in :mod:`tests.fixtures` (no test module imports another)."""
