"""The paper's reported accuracies (percent): the project's copy ``ssot/paper_accuracy.csv``.

One row per task of the paper's tables: ``dataset, task, source, target, ssot_acc,
source_only_acc, best_other_method, best_other_acc`` (Table 1-3 of the SSOT paper; the best other
method is the strongest competitor the paper lists). The final-results table
(:mod:`ssot.results.final_table`) and the dashboard's cross-task table read it here.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pandas as pd

from ssot.errors import ResultsError
from ssot.results.experiment import Problem

__all__ = ["COLUMNS", "paper_accuracy_path", "read_paper_accuracy", "paper_row"]

#: The columns every reader needs (the file may hold more).
COLUMNS: tuple[str, ...] = ("dataset", "task", "ssot_acc", "source_only_acc", "best_other_method", "best_other_acc")


def paper_accuracy_path() -> Path:
    """The project's copy of the paper's accuracies, inside the installed ``ssot`` package."""
    return Path(__file__).parent.parent / "paper_accuracy.csv"


def read_paper_accuracy(path: str | Path | None = None, problems: list[Problem] | None = None) -> pd.DataFrame:
    """Read the paper's reported accuracies (percent), indexed by task.

    Parameters
    ----------
    path : str or Path, optional
        A CSV with at least :data:`COLUMNS`; default :func:`paper_accuracy_path`.
    problems : list of Problem, optional
        Where a missing or unreadable file is reported (an empty frame is then returned) instead
        of raising: the dashboard draws without the paper's numbers.

    Raises
    ------
    ResultsError
        Without ``problems``, if the file is missing, unreadable or lacks one of :data:`COLUMNS`.
    """
    path = Path(path) if path is not None else paper_accuracy_path()
    try:
        paper = pd.read_csv(path, dtype={"task": str, "dataset": str})
        missing = [c for c in COLUMNS if c not in paper.columns]
        if missing:
            raise ResultsError(f"The paper's accuracies {path} lack the column(s) {', '.join(missing)}.")
    except (OSError, ValueError, pd.errors.ParserError, ResultsError) as exc:
        reason = str(exc) if isinstance(exc, ResultsError) else f"The paper's accuracies {path} cannot be read ({exc})"
        if problems is None:
            raise ResultsError(f"{reason.rstrip('.')}; reinstall the project.") from None
        problems.append(Problem(path, f"{reason.rstrip('.')}; the cross-task table shows no paper numbers"))
        return pd.DataFrame(columns=[c for c in COLUMNS if c != "task"], index=pd.Index([], name="task"))
    return paper.set_index("task")


def paper_row(paper: pd.DataFrame, task: str) -> dict[str, Any]:
    """The paper's numbers for ``task`` (NaN and ``""`` when the paper does not report it)."""
    if task in paper.index:
        row = paper.loc[task]
        return {"dataset": str(row["dataset"]), "ssot_acc": float(row["ssot_acc"]),
                "source_only_acc": float(row["source_only_acc"]),
                "best_other_method": str(row["best_other_method"]), "best_other_acc": float(row["best_other_acc"])}
    return {"dataset": "", "ssot_acc": math.nan, "source_only_acc": math.nan, "best_other_method": "",
            "best_other_acc": math.nan}
