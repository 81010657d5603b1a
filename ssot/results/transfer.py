"""Transfer replays: the best config of each task run on every task, their files and table.

``tune/transfer.py RESULTS --out OUT --seeds 0 1 2`` replays, on every task of the searches under
``RESULTS`` (:func:`ssot.results.searches.task_searches`), the best config of every task (its
``best_config.json``) and the paper's default (:data:`DEFAULT_SOURCE`), once per seed. A replay on
task ``t`` is ``t``'s own search setting (``base_config`` in its ``experiment.json``: its data,
epochs, feature cache, ...) with the source's searched values, so a replay on a feature-cache
screen is a screen on ``t``'s cache. The atlas (``analysis/atlas.py``) reads the result.

Files of a transfer folder ``OUT``
    ``OUT/transfer.json`` (:data:`MANIFEST_FILE`)
        what was replayed: ``results`` (the folder read), ``seeds``, ``sources`` (per source: the
        ``experiment`` it comes from, its best ``trial_id`` and the searched ``values`` replayed),
        ``targets`` (per task: its ``experiment``), ``created``; written last, so a folder with
        it is complete;
    ``OUT/runs/<target>/<source>_seed<s>.json`` (:func:`run_path`)
        one run record (:mod:`ssot.results.record`) per (source, target, seed), reused when the
        command is run again;
    ``OUT/transfer.csv``, ``OUT/transfer.md`` (:data:`CSV_NAME`, :data:`MARKDOWN_NAME`)
        the table, one row per (source, target), columns :data:`COLUMNS`.

The rule
--------
A run's value is its target accuracy at its last epoch (:meth:`ssot.results.record.RunRecord.score`
of ``target_acc``: a run that did not complete counts as 0, as a diverged trial does in a search).
The *own best* of target ``t`` is ``t``'s best config replayed on ``t`` with the same seeds. The
loss of source ``s`` on ``t``, in accuracy points, is the mean over the seeds :math:`i` that both
ran of the paired differences

.. math:: \\ell_{s \\to t} = \\frac{100}{n} \\sum_{i=1}^{n} (a_{t \\to t, i} - a_{s \\to t, i}),

with the sample standard deviation of those differences beside it; the diagonal is 0 by
construction. A positive loss means that ``s``'s config is worse on ``t`` than ``t``'s own.
"""
from __future__ import annotations

import json
import math
import os
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from ssot.errors import ResultsError
from ssot.results.experiment import Problem, now
from ssot.results.markdown import markdown_table
from ssot.results.numbers import fixed
from ssot.results.record import RUNS_DIR, RunRecord, read_record

__all__ = ["MANIFEST_FILE", "CSV_NAME", "MARKDOWN_NAME", "DEFAULT_SOURCE", "COLUMNS", "METRIC", "Transfer", "run_path",
           "new_manifest", "transfer_table", "to_markdown", "output_names", "find_transfers", "read_transfer"]

MANIFEST_FILE, CSV_NAME, MARKDOWN_NAME = "transfer.json", "transfer.csv", "transfer.md"
#: The source name of the paper's default config (not a task name: tasks have no ``-``).
DEFAULT_SOURCE = "paper-default"
#: What a replay is scored by (the oracle: the atlas measures accuracy).
METRIC = "target_acc"
#: Columns of ``transfer.csv``; accuracies and losses in percent (points).
COLUMNS: tuple[str, ...] = ("source", "target", "seeds", "values", "mean_acc", "std_acc", "own_acc", "loss", "loss_std",
                            "n_seeds", "statuses")


def run_path(out_dir: str | os.PathLike[str], target: str, source: str, seed: int) -> Path:
    """``out_dir/runs/<target>/<source>_seed<seed>.json``: the run record of one replay."""
    return Path(out_dir) / RUNS_DIR / target / f"{source}_seed{seed}.json"


def new_manifest(results: str, seeds: Sequence[int], sources: Mapping[str, Mapping[str, Any]],
                 targets: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """The content of ``transfer.json`` (module docstring)."""
    return {"results": str(results), "seeds": [int(s) for s in seeds], "metric": METRIC,
            "sources": {k: dict(v) for k, v in sources.items()}, "targets": {k: dict(v) for k, v in targets.items()},
            "created": now()}


def _score(record: RunRecord | None) -> float:
    return math.nan if record is None else record.score(METRIC)


def transfer_table(manifest: Mapping[str, Any], records: Mapping[tuple[str, str, int], RunRecord]) -> pd.DataFrame:
    """One row per (source, target) of ``manifest`` (module docstring: the rule), from ``records``
    keyed ``(source, target, seed)``; a missing record leaves its seed out of that row."""
    seeds = [int(s) for s in manifest["seeds"]]
    rows = []
    for target in manifest["targets"]:
        own = {s: _score(records.get((target, target, s))) for s in seeds}
        for source, spec in manifest["sources"].items():
            runs = {s: records[(source, target, s)] for s in seeds if (source, target, s) in records}
            values = {s: _score(r) for s, r in runs.items()}
            paired = [own[s] - v for s, v in values.items() if not math.isnan(own[s])]
            mean_acc = 100 * statistics.fmean(values.values()) if values else math.nan
            rows.append({
                "source": source, "target": target, "seeds": " ".join(map(str, runs)),
                "values": json.dumps(spec.get("values", {}), sort_keys=True),
                "mean_acc": mean_acc,
                "std_acc": 100 * statistics.stdev(values.values()) if len(values) > 1 else (0.0 if values else math.nan),
                "own_acc": 100 * statistics.fmean(v for v in own.values() if not math.isnan(v))
                if any(not math.isnan(v) for v in own.values()) else math.nan,
                "loss": 100 * statistics.fmean(paired) if paired else math.nan,
                "loss_std": 100 * statistics.stdev(paired) if len(paired) > 1 else (0.0 if paired else math.nan),
                "n_seeds": len(paired), "statuses": " ".join(r.status for r in runs.values()),
            })
    return pd.DataFrame(rows, columns=list(COLUMNS))


def to_markdown(table: pd.DataFrame) -> str:
    """The table as Markdown: accuracy (mean +- std over seeds, %) and the loss against the
    target's own best (points, paired over seeds)."""
    header = ["source config", "on task", "seeds", "target acc (%)", "own best (%)", "loss (points)", "statuses"]
    rows = [[r.source, r.target, r.seeds, f"{fixed(r.mean_acc)} ± {fixed(r.std_acc)}", fixed(r.own_acc),
             f"{fixed(r.loss)} ± {fixed(r.loss_std)}", r.statuses] for r in table.itertuples()]
    return markdown_table(header, rows, "lllrrrl")


def output_names() -> list[str]:
    """The files a transfer writes once every replay ended (never overwritten)."""
    return [CSV_NAME, MARKDOWN_NAME, MANIFEST_FILE]


# ------------------------------------------------------------------------------------ reading
@dataclass
class Transfer:
    """A transfer folder as :func:`read_transfer` found it."""

    path: Path
    manifest: dict[str, Any]
    records: dict[tuple[str, str, int], RunRecord] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)

    @property
    def sources(self) -> list[str]:
        return list(self.manifest.get("sources", {}))

    @property
    def targets(self) -> list[str]:
        return list(self.manifest.get("targets", {}))

    @property
    def seeds(self) -> list[int]:
        return [int(s) for s in self.manifest.get("seeds", [])]

    def table(self) -> pd.DataFrame:
        """:func:`transfer_table` of its records."""
        return transfer_table(self.manifest, self.records)


def find_transfers(root: str | os.PathLike[str]) -> list[Path]:
    """Every folder under ``root`` (itself included) holding ``transfer.json``, sorted; hidden
    folders are skipped."""
    found: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root):
        if MANIFEST_FILE in filenames:
            found.append(Path(dirpath))
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d != RUNS_DIR)
    return sorted(found)


def read_transfer(folder: str | os.PathLike[str]) -> Transfer:
    """The transfer in ``folder`` with every run record its manifest names. A missing or
    unreadable ``transfer.json`` gives an empty transfer whose one problem (severity ``error``)
    says so; missing or unreadable run records are problems. Never raises on a bad file."""
    folder = Path(folder)
    path = folder / MANIFEST_FILE
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(manifest, dict) or not {"seeds", "sources", "targets"} <= set(manifest):
            raise ValueError("it lacks seeds, sources or targets")
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        return Transfer(folder, {}, {}, [Problem(path, f"cannot be read as a transfer manifest ({exc}); rerun tune/transfer.py", "error")])
    transfer = Transfer(folder, manifest)
    for target in transfer.targets:
        for source in transfer.sources:
            for seed in transfer.seeds:
                run = run_path(folder, target, source, seed)
                try:
                    transfer.records[(source, target, seed)] = read_record(run, "rerun tune/transfer.py to replay it")
                except ResultsError as exc:  # a missing or unreadable record: a problem, never a crash
                    transfer.problems.append(Problem(run, str(exc)))
    return transfer
