"""Write synthetic experiment folders in the on-disk format of ``tune/`` (no training involved).

Used by the tests and to preview the dashboard without running a search::

    python -m analysis.synthetic /tmp/demo && python analysis/sensitivity.py /tmp/demo

The accuracy landscape is made up (a smooth peak at lambda_OT, lambda_Ent around 1-10, as in
the paper's sensitivity figure, plus noise); it is not a result of SSOT.
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from analysis.experiments import BEST_CONFIG_FILE, EXPERIMENT_FILE, TRIALS_FILE

__all__ = [
    "TRIAL_COLUMNS",
    "PAPER_GRID",
    "TPE_SPACE",
    "grid_space",
    "write_experiment",
    "trial_rows",
    "simulate_search",
    "write_demo_results",
    "EDGE_TRIALS",
    "grid_accuracy",
    "write_paper_grid",
    "write_edge_tpe",
]

#: Columns of ``trials.csv``, in the order ``tune/`` writes them.
TRIAL_COLUMNS: tuple[str, ...] = (
    "task", "trial_id", "search", "lambda_ot", "lambda_ent", "eps", "potential_width", "epoch",
    "target_acc", "source_acc", "loss_total", "loss_ce", "loss_ot", "loss_ent", "ot_value",
    "outlier_mass", "n_pred_classes", "status", "reason",
)

#: The paper's grid for lambda_OT and lambda_Ent.
PAPER_GRID: tuple[float, ...] = (0.001, 0.01, 0.1, 1.0, 10.0)

#: The default TPE/random space of ``tune/``.
TPE_SPACE: dict[str, dict[str, Any]] = {
    "lambda_ot": {"type": "loguniform", "low": 0.001, "high": 10.0},
    "lambda_ent": {"type": "loguniform", "low": 0.001, "high": 10.0},
    "eps": {"type": "loguniform", "low": 0.01, "high": 10.0},
    "potential_width": {"type": "choice", "values": [64, 128, 256, 512, 1024]},
}

_DATASETS = {
    **{t: "office31" for t in ("A2W", "D2W", "W2D", "A2D", "D2A", "W2A")},
    **{t: "imageclef" for t in ("I2P", "P2I", "I2C", "C2I", "C2P", "P2C")},
    **{t: "visda2017" for t in ("S2R", "R2S")},
}


def grid_space(eps: float = 1.0, potential_width: int = 256) -> dict[str, dict[str, Any]]:
    """The paper's 5x5 grid over (lambda_OT, lambda_Ent) with eps and width fixed."""
    return {
        "lambda_ot": {"type": "grid", "values": list(PAPER_GRID)},
        "lambda_ent": {"type": "grid", "values": list(PAPER_GRID)},
        "eps": {"type": "fixed", "value": eps},
        "potential_width": {"type": "fixed", "value": potential_width},
    }


def write_experiment(
    folder: Path,
    rows: pd.DataFrame | Iterable[Mapping[str, Any]],
    *,
    task: str,
    search: str,
    space: Mapping[str, Any],
    max_epochs: int,
    name: str = "demo",
    status: str = "finished",
    dataset: str | None = None,
    best_config: Mapping[str, Any] | None = None,
) -> Path:
    """Write ``experiment.json``, ``trials.csv`` and (when finished) ``best_config.json``.

    Parameters
    ----------
    folder : Path
        The experiment folder (created).
    rows : DataFrame or iterable of mappings
        The rows of ``trials.csv``; missing columns of :data:`TRIAL_COLUMNS` are left empty.
    task, search, space, max_epochs, name, status, dataset
        The fields of ``experiment.json``.
    best_config : Mapping, optional
        Written as ``best_config.json``; by default the hyperparameters of the trial with the
        best final-epoch accuracy plus ``task``, ``epochs`` and ``seed``. Not written while
        ``status`` is ``"running"``.

    Returns
    -------
    Path
        ``folder``.
    """
    folder.mkdir(parents=True, exist_ok=True)
    frame = pd.DataFrame(list(rows) if not isinstance(rows, pd.DataFrame) else rows)
    for column in TRIAL_COLUMNS:
        if column not in frame:
            frame[column] = task if column == "task" else (search if column == "search" else "")
    frame = frame[list(TRIAL_COLUMNS) + [c for c in frame.columns if c not in TRIAL_COLUMNS]]
    frame.to_csv(folder / TRIALS_FILE, index=False)
    now = datetime.now(timezone.utc).isoformat(timespec="seconds")
    meta = {
        "task": task, "dataset": dataset if dataset is not None else _DATASETS.get(task, "digits"),
        "name": name, "search": search, "metric": "target_acc", "mode": "max",
        "max_epochs": max_epochs, "num_samples": int(frame["trial_id"].nunique()),
        "space": dict(space), "status": status, "started": now,
        "finished": now if status == "finished" else None,
    }
    (folder / EXPERIMENT_FILE).write_text(json.dumps(meta, indent=2), encoding="utf-8")
    if status != "running":
        config = best_config if best_config is not None else _best_config(frame, task, max_epochs)
        (folder / BEST_CONFIG_FILE).write_text(json.dumps(config, indent=2), encoding="utf-8")
    return folder


def _best_config(frame: pd.DataFrame, task: str, max_epochs: int) -> dict[str, Any]:
    """The hyperparameters of the completed trial with the best last accuracy."""
    done = frame[(frame["status"] == "completed") & (frame["epoch"] == max_epochs)]
    done = done if len(done) else frame
    best = done.loc[pd.to_numeric(done["target_acc"]).idxmax()]
    config: dict[str, Any] = {"task": task}
    for param in ("lambda_ot", "lambda_ent", "eps", "potential_width"):
        value = best[param]
        config[param] = int(value) if param == "potential_width" else float(value)
    config.update({"epochs": max_epochs, "seed": 0, "batch_size": 32, "lr": 0.001})
    return config


def _landscape(config: Mapping[str, float], rng: np.random.Generator) -> float:
    """A made-up final accuracy with the paper's peak at lambda_OT, lambda_Ent in [1, 10]."""
    ot, ent = math.log10(config["lambda_ot"]), math.log10(config["lambda_ent"])
    eps = math.log10(config["eps"])
    peak = math.exp(-((ot - 0.4) ** 2) / 1.4 - ((ent - 0.2) ** 2) / 2.5 - (eps**2) / 3.0)
    width = 0.01 * math.log2(config["potential_width"] / 256)
    return float(np.clip(0.62 + 0.33 * peak - abs(width) + rng.normal(0, 0.01), 0.05, 0.995))


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


def _curve(final: float, epochs: int, rng: np.random.Generator) -> np.ndarray:
    start = 0.55
    steps = np.arange(1, epochs + 1)
    curve = start + (final - start) * (1 - np.exp(-steps / (0.3 * epochs)))
    return np.clip(curve + rng.normal(0, 0.005, epochs), 0.0, 1.0)


def simulate_search(
    task: str,
    search: str,
    configs: Sequence[Mapping[str, float]],
    max_epochs: int,
    *,
    seed: int = 0,
    asha: bool = True,
    running_from: int | None = None,
) -> pd.DataFrame:
    """Simulate a search's ``trials.csv``: learning curves, ASHA stops and divergences.

    ASHA keeps a trial at rungs 1, 3, 9, ... epochs only if its accuracy there is at least the
    median of the earlier trials at that rung. A large lambda_OT with a tiny eps diverges.
    Trials from index ``running_from`` on are cut short with status ``"running"``.
    """
    rng = np.random.default_rng(seed)
    rungs = [r for r in (1, 3, 9, 27) if r < max_epochs]
    seen: dict[int, list[float]] = {r: [] for r in rungs}
    rows: list[dict[str, Any]] = []
    for index, config in enumerate(configs):
        trial_id = f"{task.lower()}_{index:05d}"
        curve = _curve(_landscape(config, rng), max_epochs, rng)
        status, reason, stop = "completed", "", max_epochs
        if config["lambda_ot"] > 3 and config["eps"] < 0.05:
            stop = int(rng.integers(2, max_epochs))
            status, reason = "diverged", f"non-finite loss_ot at epoch {stop}"
        elif asha:
            for rung in rungs:
                history = seen[rung]
                seen[rung].append(float(curve[rung - 1]))
                if len(history) >= 2 and curve[rung - 1] < float(np.median(history)):
                    status, stop = "early-stopped", rung
                    break
        if running_from is not None and index >= running_from:
            status, reason, stop = "running", "", min(stop, 1 + index % max_epochs)
        accuracies = list(curve[:stop])
        if status == "diverged":
            accuracies[-1] = 0.0  # the finite placeholder of tune/
        rows += trial_rows(task, search, trial_id, config, accuracies, status, reason)
    return pd.DataFrame(rows)


def _random_configs(n: int, seed: int) -> list[dict[str, float]]:
    rng = np.random.default_rng(seed)
    widths = TPE_SPACE["potential_width"]["values"]
    return [
        {
            "lambda_ot": float(10 ** rng.uniform(-3, 1)),
            "lambda_ent": float(10 ** rng.uniform(-3, 1)),
            "eps": float(10 ** rng.uniform(-2, 1)),
            "potential_width": int(rng.choice(widths)),
        }
        for _ in range(n)
    ]


def write_demo_results(root: Path, *, num_samples: int = 40, max_epochs: int = 12) -> list[Path]:
    """Write a small demo results folder: a TPE search on P2I and A2D, a 5x5 grid on P2I.

    Returns
    -------
    list of Path
        The experiment folders written.
    """
    folders = []
    for offset, task in enumerate(("P2I", "A2D")):
        rows = simulate_search(task, "tpe", _random_configs(num_samples, offset), max_epochs,
                               seed=offset)
        folders.append(write_experiment(root / "tpe-demo" / task, rows, task=task, search="tpe",
                                        space=TPE_SPACE, max_epochs=max_epochs, name="tpe-demo"))
    grid = [
        {"lambda_ot": ot, "lambda_ent": ent, "eps": 1.0, "potential_width": 256}
        for ot in PAPER_GRID for ent in PAPER_GRID
    ]
    rows = simulate_search("P2I", "grid", grid, max_epochs, seed=7, asha=False)
    folders.append(write_experiment(root / "grid-demo" / "P2I", rows, task="P2I", search="grid",
                                    space=grid_space(), max_epochs=max_epochs, name="grid-demo"))
    return folders


# ------------------------------------------------------------------------------------------
# Small experiments with known answers (used by the tests)
# ------------------------------------------------------------------------------------------

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


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: write the demo results folder."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", type=Path, help="folder to write the demo experiments into")
    args = parser.parse_args(argv)
    for folder in write_demo_results(args.root):
        print(folder)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
