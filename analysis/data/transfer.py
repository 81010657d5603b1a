"""The transfer matrix of an atlas: each task's best config replayed on every task.

``tune/transfer.py`` runs the replays and writes them in the format of
:mod:`ssot.results.transfer`, which also owns the rule (the loss of a source config on a task
against that task's own best config, paired over seeds). This module finds the replays of an
atlas's tasks and lays them out as matrices: rows are the source configs (each task's best, then
the paper's default), columns the tasks they ran on.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ssot.results.experiment import Problem
from ssot.results.transfer import DEFAULT_SOURCE, Transfer, find_transfers, read_transfer

__all__ = ["TransferInfo", "transfer_info", "find_atlas_transfer", "TRANSFER_COMMAND"]

#: How to produce the replays (the atlas's section says it when there are none).
TRANSFER_COMMAND = "python tune/transfer.py RESULTS --out RESULTS/transfer --seeds 0 1 2"


@dataclass
class TransferInfo:
    """The replays as matrices (points and percent), rows ``sources``, columns ``targets``.

    Attributes
    ----------
    path : Path
        The transfer folder.
    sources, targets : list of str
        Rows (the tasks' best configs, then :data:`ssot.results.transfer.DEFAULT_SOURCE`) and
        columns (the tasks replayed on).
    loss, loss_std : numpy.ndarray
        The loss against the target's own best (points, mean and std of the paired differences
        over seeds); 0 on the diagonal.
    acc : numpy.ndarray
        Mean target accuracy of each replay (%).
    own : numpy.ndarray
        Each target's own best config on it (%), per column.
    n_seeds : numpy.ndarray
        Seeds each cell rests on.
    seeds : list of int
    values : dict of str to dict
        The searched values each source replays.
    notes : list of str
        What differs from the atlas (tasks missing, other searches), missing replays.
    problems : list of Problem
    """

    path: Path
    sources: list[str]
    targets: list[str]
    loss: np.ndarray
    loss_std: np.ndarray
    acc: np.ndarray
    own: np.ndarray
    n_seeds: np.ndarray
    seeds: list[int]
    values: dict[str, dict[str, object]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)


def _same(a: object, b: object) -> bool:
    try:
        return os.path.realpath(str(a)) == os.path.realpath(str(b))
    except (OSError, ValueError):
        return str(a) == str(b)


def transfer_info(transfer: Transfer, searches: Mapping[str, object] | None = None) -> TransferInfo:
    """The matrices of ``transfer``; ``searches`` (task -> the path of the atlas's search of it)
    restricts the columns to the atlas's tasks and notes every difference from the atlas."""
    table = transfer.table()
    notes: list[str] = []
    targets = [t for t in transfer.targets if searches is None or t in searches]
    sources = [s for s in transfer.sources if s != DEFAULT_SOURCE and (searches is None or s in searches)]
    if DEFAULT_SOURCE in transfer.sources:
        sources.append(DEFAULT_SOURCE)
    if searches is not None:
        missing = [t for t in searches if t not in transfer.targets]
        if missing:
            notes.append(f"tasks of the atlas not replayed in {transfer.path}: {', '.join(missing)}")
        extra = [t for t in transfer.targets if t not in searches]
        if extra:
            notes.append(f"replays on tasks outside the atlas left out: {', '.join(extra)}")
        for source, spec in transfer.manifest.get("sources", {}).items():
            if source in searches and spec.get("experiment") and not _same(spec["experiment"], searches[source]):
                notes.append(f"the best config of {source} replayed comes from {spec['experiment']}, not from the "
                             f"atlas's search {searches[source]}")
    shape = (len(sources), len(targets))
    loss, loss_std, acc, n_seeds = (np.full(shape, np.nan) for _ in range(4))
    own = np.full(len(targets), np.nan)
    indexed = table.set_index(["source", "target"])
    for i, source in enumerate(sources):
        for j, target in enumerate(targets):
            if (source, target) not in indexed.index:
                continue
            row = indexed.loc[(source, target)]
            loss[i, j], loss_std[i, j], acc[i, j] = row["loss"], row["loss_std"], row["mean_acc"]
            n_seeds[i, j] = row["n_seeds"]
            own[j] = row["own_acc"]
    values = {s: dict(transfer.manifest["sources"][s].get("values", {})) for s in sources}
    if transfer.problems:
        notes.append(f"{len(transfer.problems)} replay(s) missing or unreadable (an interrupted transfer? rerun tune/transfer.py "
                     "to continue); their cells rest on fewer seeds")
    return TransferInfo(transfer.path, sources, targets, loss, loss_std, acc, own, n_seeds, transfer.seeds, values,
                        notes, list(transfer.problems))


def find_atlas_transfer(roots: Sequence[str | os.PathLike[str]], tasks: Sequence[str]) -> tuple[Transfer | None, list[str]]:
    """The transfer folder under ``roots`` (searched recursively) that replays the most of
    ``tasks`` (ties: the last in path order, the newest name), and one line per other one found."""
    found = [read_transfer(p) for root in roots if Path(root).is_dir() for p in find_transfers(root)]
    usable = [t for t in found if t.manifest]
    notes = [str(p) for t in found if not t.manifest for p in t.problems]
    if not usable:
        return None, notes
    best = max(usable, key=lambda t: (len(set(t.targets) & set(tasks)), str(t.path)))
    notes += [f"another transfer folder {t.path} left out (the atlas draws {best.path})" for t in usable if t is not best]
    return best, notes
