"""Results: what runs and searches leave on disk, and the rules that read them (standard library
and pandas only; ``pyarrow`` is imported only for URIs).

One module per concept, each the one owner of its files, names and rules:

:mod:`ssot.results.metrics`
    the metric registry: names, directions, roles, labels (the validators' directions included).
:mod:`ssot.results.trials`
    the trial model: trial statuses, the per-trial table and the best-trial rule.
:mod:`ssot.results.experiment`
    an experiment's files (``experiment.json``, ``trials.csv``, ``best_config.json``): names,
    statuses, the writer, the reader (:class:`~ssot.results.experiment.Experiment`) and its problems.
:mod:`ssot.results.storage`
    local paths and URIs (object storage): reading, writing, listing, probing a store.
:mod:`ssot.results.atomic`
    writing a whole file at once (renamed or linked into place, one object on a store).
:mod:`ssot.results.io_errors`
    which errors say that the file system failed (read-only, full, over quota, I/O).
:mod:`ssot.results.names`
    names that become folders (an experiment's ``--name``).
:mod:`ssot.results.outputs`
    the check of every output location before a command works.
:mod:`ssot.results.discovery`
    finding and reading every experiment under a root (local or a URI).
:mod:`ssot.results.lock`
    the lock of an experiment folder: one search driver at a time, stale locks of dead drivers.
:mod:`ssot.results.record`
    the run record (:class:`~ssot.results.record.RunRecord`), its final-accuracy and score rules,
    the mean +- std over seeds, its reader and writer.
:mod:`ssot.results.paper`
    the paper's reported accuracies.
:mod:`ssot.results.final_table`
    the final-results table beside the paper.

Importing this package loads neither torch nor Ray (``tests/ssot/results`` checks it); the
submodules are imported by name.
"""
