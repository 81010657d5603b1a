"""The final-results table: our multi-seed accuracies beside the paper's reported ones.

The table has one row per task, built from the run records of that task's final runs (one record
per seed, :mod:`ssot.results.record`) and the paper's numbers (:mod:`ssot.results.paper`,
percent). Our accuracies are converted from fractions to percent so
that every accuracy column of the table is in percent.

Columns (:data:`COLUMNS`):

``task``, ``dataset``
    the task and its dataset (``digits`` for the embedded task, which is not a paper task).
``seeds``
    the seeds of the runs, space-separated (``"0 1 2"``).
``ssot_acc_mean``, ``ssot_acc_std``
    mean and sample standard deviation over seeds of each run's final accuracy
    (:func:`ssot.results.record.summarize`: the target accuracy at the *last* epoch; a diverged
    run counts with its last finished epoch, and its status says so).
``source_only_acc_mean``, ``source_only_acc_std``
    the same for the target accuracy after source pretraining, before adaptation.
``paper_ssot_acc``, ``paper_source_only_acc``
    the paper's reported SSOT and source-only accuracies (empty for a task the paper lacks).
``delta_vs_paper``
    ``ssot_acc_mean - paper_ssot_acc`` (empty for a task the paper lacks).
``statuses``
    each run's status, in the order of ``seeds`` (``completed``, ``diverged``, ...).

Nothing here trains or parses the command line; ``tune/final.py`` does.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from ssot.data.registry import dataset_of
from ssot.errors import ResultsError
from ssot.results.markdown import markdown_table
from ssot.results.outputs import check_output
from ssot.results.paper import read_paper_accuracy
from ssot.results.record import RunRecord, records, summarize

__all__ = ["COLUMNS", "CSV_NAME", "MARKDOWN_NAME", "task_row", "results_table", "format_mean_std", "to_markdown",
           "result_paths", "write_results"]

#: The columns of ``results.csv``, in order.
COLUMNS: tuple[str, ...] = (
    "task", "dataset", "seeds", "ssot_acc_mean", "ssot_acc_std", "source_only_acc_mean",
    "source_only_acc_std", "paper_ssot_acc", "paper_source_only_acc", "delta_vs_paper", "statuses",
)

#: Names of the two table files written into a results folder.
CSV_NAME, MARKDOWN_NAME = "results.csv", "results.md"


# ------------------------------------------------------------------------------------ table
def _percent(fraction: float) -> float:
    return 100.0 * float(fraction)


def _summarizable(runs: Sequence[RunRecord]) -> list[RunRecord]:
    """The records that have an accuracy (a run that diverged in pretraining has none)."""
    return [r for r in runs if r.source_only_target_acc is not None]


def task_row(task: str, runs: Sequence[Mapping[str, Any] | RunRecord], paper: pd.DataFrame | None = None) -> dict[str, Any]:
    """One row of the results table: the runs of one task beside the paper's numbers.

    Parameters
    ----------
    task : str
        The task name (looked up in ``paper``'s index).
    runs : sequence of dict or RunRecord
        The run records of the task's final runs, one per seed; accuracies are fractions.
    paper : pandas.DataFrame, optional
        The paper's accuracies from :func:`read_paper_accuracy` (default: read them).

    Returns
    -------
    dict
        The values of :data:`COLUMNS`; our accuracies in percent, NaN where there is no value.
    """
    if not runs:
        raise ResultsError(f"No run record for task {task!r}; nothing to summarise.")
    typed = records(runs)
    paper = read_paper_accuracy() if paper is None else paper
    reported = paper.loc[task] if task in paper.index else None
    usable = _summarizable(typed)
    nan = math.nan
    if usable:
        summary = summarize(usable)
        ours, base = summary["target_acc"], summary["source_only_target_acc"]
        ours_mean, ours_std = _percent(ours["mean"]), _percent(ours["std"])
        base_mean, base_std = _percent(base["mean"]), _percent(base["std"])
    else:
        ours_mean = ours_std = base_mean = base_std = nan
    paper_ssot = float(reported["ssot_acc"]) if reported is not None else nan
    paper_base = float(reported["source_only_acc"]) if reported is not None else nan
    if reported is not None:
        dataset = str(reported["dataset"])
    else:
        dataset = dataset_of(task)
    return {
        "task": task,
        "dataset": dataset,
        "seeds": " ".join(str(r.seed) for r in typed),
        "ssot_acc_mean": ours_mean,
        "ssot_acc_std": ours_std,
        "source_only_acc_mean": base_mean,
        "source_only_acc_std": base_std,
        "paper_ssot_acc": paper_ssot,
        "paper_source_only_acc": paper_base,
        "delta_vs_paper": ours_mean - paper_ssot,
        "statuses": " ".join(r.status for r in typed),
    }


def results_table(records_by_task: Mapping[str, Sequence[Mapping[str, Any] | RunRecord]],
                  paper: pd.DataFrame | None = None) -> pd.DataFrame:
    """The results table, one row per task in the order of ``records_by_task``.

    Parameters
    ----------
    records_by_task : mapping of str to sequence of dict
        Task name -> the run records of its final runs (one per seed).
    paper : pandas.DataFrame, optional
        The paper's accuracies from :func:`read_paper_accuracy` (default: read them).

    Returns
    -------
    pandas.DataFrame
        Columns :data:`COLUMNS`; accuracies in percent.
    """
    paper = read_paper_accuracy() if paper is None else paper
    rows = [task_row(task, runs, paper) for task, runs in records_by_task.items()]
    return pd.DataFrame(rows, columns=list(COLUMNS))


# ------------------------------------------------------------------------------------ Markdown
def _fmt(value: float, fmt: str = ".1f") -> str:
    return "" if value is None or (isinstance(value, float) and math.isnan(value)) else format(value, fmt)


def format_mean_std(mean: float, std: float) -> str:
    """``97.2 ± 1.3`` (one decimal), or an empty string when there is no value."""
    if _fmt(mean) == "":
        return ""
    return f"{mean:.1f} ± {std:.1f}"


def to_markdown(table: pd.DataFrame) -> str:
    """Render a :func:`results_table` as a GitHub Markdown table (percent, one decimal).

    Parameters
    ----------
    table : pandas.DataFrame
        A table with the columns :data:`COLUMNS`.

    Returns
    -------
    str
        The Markdown text, ending with a newline.
    """
    header = ["task", "dataset", "seeds", "SSOT (ours, %)", "source-only (ours, %)", "SSOT (paper, %)",
              "source-only (paper, %)", "ours - paper", "statuses"]
    rows = [[row["task"], row["dataset"], row["seeds"], format_mean_std(row["ssot_acc_mean"], row["ssot_acc_std"]),
             format_mean_std(row["source_only_acc_mean"], row["source_only_acc_std"]), _fmt(row["paper_ssot_acc"]),
             _fmt(row["paper_source_only_acc"]), _fmt(row["delta_vs_paper"], "+.1f"), row["statuses"]]
            for row in table.to_dict("records")]
    return markdown_table(header, rows, "lllrrrrrl")


# ------------------------------------------------------------------------------------ files
def result_paths(out_dir: str | Path) -> tuple[Path, Path]:
    """``(out_dir / "results.csv", out_dir / "results.md")``."""
    out_dir = Path(out_dir)
    return out_dir / CSV_NAME, out_dir / MARKDOWN_NAME


def write_results(table: pd.DataFrame, out_dir: str | Path) -> tuple[Path, Path]:
    """Write ``results.csv`` and ``results.md`` into ``out_dir``; never overwrites either.

    Returns
    -------
    tuple of Path
        The CSV and Markdown paths.

    Raises
    ------
    ResultsError
        If either file already exists (checked before anything is written).
    """
    csv_path, md_path = result_paths(out_dir)
    check_output(out_dir, "--out", folder=True, new=[CSV_NAME, MARKDOWN_NAME])
    csv_path.parent.mkdir(parents=True, exist_ok=True)
    with open(csv_path, "x", newline="") as fh:
        table.to_csv(fh, index=False)
    with open(md_path, "x") as fh:
        fh.write(to_markdown(table))
    return csv_path, md_path
