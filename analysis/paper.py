"""The paper's reported accuracies (``ssot/paper_accuracy.csv``), read without importing ``ssot``."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from tune.schema import Problem

__all__ = ["paper_accuracy_path", "read_paper_accuracy", "paper_row"]

_PAPER_FILE = "paper_accuracy.csv"




def paper_accuracy_path() -> Path:
    """Locate the project's copy of the paper's reported accuracies.

    Uses the installed ``ssot`` package's folder without importing it (analysis never loads
    torch); falls back to ``ssot/`` beside this package in a source checkout.
    """
    spec = importlib.util.find_spec("ssot")
    if spec is not None and spec.submodule_search_locations:
        candidate = Path(list(spec.submodule_search_locations)[0]) / _PAPER_FILE
        if candidate.is_file():
            return candidate
    return Path(__file__).resolve().parent.parent / "ssot" / _PAPER_FILE


def read_paper_accuracy(
    path: Path | None = None, problems: list[Problem] | None = None
) -> pd.DataFrame:
    """Read the paper's reported accuracies (percent), indexed by task.

    Parameters
    ----------
    path : Path, optional
        The CSV (columns ``dataset, task, source, target, ssot_acc, source_only_acc,
        best_other_method, best_other_acc``); defaults to :func:`paper_accuracy_path`.
    problems : list of Problem, optional
        A missing or unreadable file is reported here and an empty frame returned.
    """
    path = path or paper_accuracy_path()
    columns = ["dataset", "ssot_acc", "source_only_acc", "best_other_method", "best_other_acc"]
    try:
        paper = pd.read_csv(path, dtype={"task": str})
        paper = paper.set_index("task")[columns]
    except (OSError, ValueError, KeyError, pd.errors.ParserError) as exc:
        if problems is not None:
            problems.append(
                Problem(path, f"the paper's accuracies cannot be read ({exc}); the cross-task "
                        "table shows no paper numbers")
            )
        return pd.DataFrame(columns=columns, index=pd.Index([], name="task"))
    return paper


def paper_row(paper: pd.DataFrame, task: str) -> dict[str, Any]:
    """The paper's numbers for a task (NaN and ``""`` when the paper does not report it)."""
    if task in paper.index:
        row = paper.loc[task]
        return {
            "dataset": str(row["dataset"]), "ssot_acc": float(row["ssot_acc"]),
            "source_only_acc": float(row["source_only_acc"]),
            "best_other_method": str(row["best_other_method"]),
            "best_other_acc": float(row["best_other_acc"]),
        }
    return {"dataset": "", "ssot_acc": np.nan, "source_only_acc": np.nan,
            "best_other_method": "", "best_other_acc": np.nan}
