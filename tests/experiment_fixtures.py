"""Write experiment folders for the tests, through the same writer as ``tune/`` (:mod:`ssot.results.experiment`).

The accuracies are made up (no training involved); the format, the metadata and the best config
(the one best-trial rule) are those of a real search.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ssot.results import experiment as results_experiment
from ssot.results.experiment import FINISHED, new_meta, now, parse_trials
from ssot.results.trials import PARAMS, RUNNING, best_trial, trial_columns, trial_table
from tune.space import default_space, paper_grid_space

#: The paper's grid for lambda_OT and lambda_Ent, and tune/'s default TPE/random space.
PAPER_GRID: tuple[float, ...] = (0.001, 0.01, 0.1, 1.0, 10.0)
TPE_SPACE: dict[str, dict[str, Any]] = default_space()


def grid_space(eps: float = 1.0, potential_width: int = 256) -> dict[str, dict[str, Any]]:
    """The paper's 5x5 grid over (lambda_OT, lambda_Ent) with eps and width fixed (tune/space.py)."""
    return paper_grid_space(eps, potential_width)


def _dataset_of(task: str) -> str:
    from ssot.data.registry import dataset_of

    return dataset_of(task) or "digits"


def write_experiment(
    folder: Path,
    rows: pd.DataFrame | Iterable[Mapping[str, Any]],
    *,
    task: str,
    search: str,
    space: Mapping[str, Any],
    max_epochs: int,
    name: str = "demo",
    status: str = FINISHED,
    dataset: str | None = None,
    best_config: Mapping[str, Any] | None = None,
) -> Path:
    """Write an experiment as tune/ does; ``best_config.json`` (unless running) defaults to the
    paper's four hyperparameters of the trial the best-trial rule picks, plus task and epochs."""
    frame = pd.DataFrame(list(rows) if not isinstance(rows, pd.DataFrame) else rows)
    for column in trial_columns(PARAMS):
        if column not in frame:
            frame[column] = task if column == "task" else (search if column == "search" else math.nan)
    columns = trial_columns(PARAMS)
    frame = frame[columns + [c for c in frame.columns if c not in columns]]
    meta = new_meta(task=task, dataset=dataset if dataset is not None else _dataset_of(task), name=name,
                           search=search, space=space, max_epochs=max_epochs,
                           num_samples=int(frame["trial_id"].nunique()))
    table = trial_table(parse_trials(frame.to_csv(index=False), folder, []), max_epochs)
    best = best_trial(table)
    meta.update(status=status, finished=now() if status == FINISHED else None,
                best_trial=None if best is None else str(best["trial_id"]))
    if status != RUNNING and best_config is None and best is not None:
        best_config = {"task": task, "epochs": max_epochs, "seed": 0}
        best_config.update({p: (int if p == "potential_width" else float)(best[p]) for p in PARAMS})
    return results_experiment.write_experiment(folder, meta, frame, None if status == RUNNING else best_config)


def trial_rows(
    task: str,
    search: str,
    trial_id: str,
    config: Mapping[str, float],
    accuracies: Sequence[float] | np.ndarray,
    status: str,
    reason: str = "",
) -> list[dict[str, Any]]:
    """The ``trials.csv`` rows of one trial, one per epoch, with plausible side metrics."""
    rows = []
    for epoch, acc in enumerate(accuracies, start=1):
        rows.append(
            {
                "task": task, "trial_id": trial_id, "search": search, **config, "epoch": epoch,
                "target_acc": round(float(acc), 4), "source_acc": round(0.9 + 0.005 * epoch, 4),
                "loss_total": round(1.5 / epoch, 4), "loss_ce": round(1.0 / epoch, 4),
                "loss_ot": round(0.3 / epoch, 4), "loss_ent": round(0.2 / epoch, 4),
                "ot_value": round(0.5 / epoch, 4), "outlier_mass": round(0.2 / epoch, 4),
                "n_pred_classes": 6, "source_only_target_acc": 0.55, "status": status,
                "reason": reason,
            }
        )
    return rows



#: Epochs of the small experiments below.
EDGE_EPOCHS = 4

#: The edge-case TPE experiment: (trial id, lambda_ot, lambda_ent, eps, width, accuracy per
#: epoch, status). Values lie exactly on powers of ten (the centres of the default log cells, the
#: edges of decade-edged ones) and one just below one (0.0099); t4 is cut by ASHA after its best
#: epoch; t5 diverged (its last accuracy, 0.99, is the placeholder).
EDGE_TRIALS: list[tuple[str, float, float, float, int, list[float], str]] = [
    ("t0", 0.001, 0.001, 0.01, 64, [0.50, 0.55, 0.60, 0.62], "completed"),
    ("t1", 0.01, 0.1, 0.1, 128, [0.50, 0.60, 0.70, 0.71], "completed"),
    ("t2", 0.0099, 0.1, 1.0, 256, [0.50, 0.60, 0.70, 0.80], "completed"),
    ("t3", 10.0, 10.0, 10.0, 1024, [0.60, 0.70, 0.80, 0.90], "completed"),
    ("t4", 1.0, 1.0, 1.0, 512, [0.65, 0.95], "early-stopped"),
    ("t5", 1.0, 0.01, 0.01, 64, [0.70, 0.99], "diverged"),
    ("t6", 0.1, 0.1, 0.1, 128, [0.40], "errored"),
]


def grid_accuracy(lambda_ot: float, lambda_ent: float) -> float:
    """The known final accuracy of a grid cell of :func:`write_paper_grid` (distinct per cell)."""
    return round(0.5 + 0.04 * (math.log10(lambda_ot) + 3) + 0.01 * (math.log10(lambda_ent) + 3), 4)


def write_paper_grid(folder: Path, *, task: str = "P2I", off_grid: bool = True) -> Path:
    """A 5x5 grid search (all trials completed, ids ``g<i><j>``), plus one trial off the grid."""
    rows: list[dict[str, Any]] = []
    for i, ot in enumerate(PAPER_GRID):
        for j, ent in enumerate(PAPER_GRID):
            curve = np.linspace(0.4, grid_accuracy(ot, ent), EDGE_EPOCHS)
            config = {"lambda_ot": ot, "lambda_ent": ent, "eps": 1.0, "potential_width": 256}
            rows += trial_rows(task, "grid", f"g{i}{j}", config, curve, "completed")
    if off_grid:
        config = {"lambda_ot": 0.05, "lambda_ent": 1.0, "eps": 1.0, "potential_width": 256}
        rows += trial_rows(task, "grid", "goff", config, [0.3] * EDGE_EPOCHS, "completed")
    return write_experiment(folder, rows, task=task, search="grid", space=grid_space(),
                            max_epochs=EDGE_EPOCHS, name="grid-exp")


def write_edge_tpe(folder: Path, task: str = "A2D") -> Path:
    """A TPE search of :data:`EDGE_TRIALS`: powers of ten and every kind of trial end."""
    rows: list[dict[str, Any]] = []
    for trial_id, ot, ent, eps, width, accuracies, status in EDGE_TRIALS:
        config = {"lambda_ot": ot, "lambda_ent": ent, "eps": eps, "potential_width": width}
        reason = "non-finite loss_ot at epoch 2" if status == "diverged" else ""
        rows += trial_rows(task, "tpe", trial_id, config, accuracies, status, reason)
    return write_experiment(folder, rows, task=task, search="tpe", space=TPE_SPACE,
                            max_epochs=EDGE_EPOCHS, name="tpe-exp")
