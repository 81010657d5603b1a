"""Fixtures of the benchmark scripts' tests."""
from __future__ import annotations

import pytest

from tests.fixtures.features import vector_cache


@pytest.fixture(scope="session")
def small_cache(tmp_path_factory):
    """A small feature cache of the digits task: 10 classes of 32-d vectors, 5 in the target."""
    return vector_cache(tmp_path_factory.mktemp("population-bench") / "small.pt", n_source=300, n_target=120, dim=32,
                        spread=3.0, shift=0.3, positive=True)
