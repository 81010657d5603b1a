"""Export the best config of each task's finished search, ready for the final runs.

    python tune/export.py RESULTS_DIR --out CONFIG_DIR [--overwrite]
    python -m tune.export RESULTS_DIR --out CONFIG_DIR

An experiment is a folder holding ``experiment.json``, ``trials.csv`` and ``best_config.json``
(see DESIGN.md, "Search"); experiments are found by searching RESULTS_DIR recursively. For each
task, the exported ``CONFIG_DIR/<task>.json`` is the ``best_config.json`` of one finished
experiment, validated through :class:`ssot.config.SSOTConfig` and written back, so it is exactly
a valid config for ``python tune/final.py`` and ``python -m ssot.train --config``.

When several finished experiments exist for a task, the one whose best trial has the highest
*final-epoch* ``target_acc`` among trials with status ``completed`` is chosen (recomputed from
``trials.csv``; early-stopped trials are left out because their accuracy is truncated).
Experiments still running, or whose files are unreadable, are skipped with a one-line warning.
Existing files in CONFIG_DIR are never replaced unless ``--overwrite`` is given.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from ssot.config import SSOTConfig
from ssot.errors import SSOTError, one_line
from tune.experiment import best_completed_trial
from tune.results import ResultsError, check_new

__all__ = [
    "EXPERIMENT_FILE",
    "TRIALS_FILE",
    "BEST_CONFIG_FILE",
    "Experiment",
    "Exported",
    "ExportReport",
    "find_experiments",
    "best_completed_trial",
    "load_experiment",
    "choose_per_task",
    "export_best_configs",
    "main",
]

EXPERIMENT_FILE = "experiment.json"
TRIALS_FILE = "trials.csv"
BEST_CONFIG_FILE = "best_config.json"


@dataclass(frozen=True)
class Experiment:
    """A finished experiment that can be exported.

    Attributes
    ----------
    path : the experiment folder.
    task : its task (from ``experiment.json``).
    config : its validated best config.
    accuracy : final-epoch ``target_acc`` (fraction) of its best completed trial; NaN if none.
    best_trial : the id of that trial (``None`` if no trial completed).
    """

    path: Path
    task: str
    config: SSOTConfig
    accuracy: float
    best_trial: str | None


@dataclass(frozen=True)
class Exported:
    """One exported config: which experiment it came from and where it was written."""

    task: str
    accuracy: float
    experiment: Path
    config_path: Path
    n_candidates: int


@dataclass
class ExportReport:
    """What :func:`export_best_configs` did: the exported configs and the skipped folders."""

    exported: list[Exported] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


# ------------------------------------------------------------------------------------ reading
def find_experiments(root: str | Path) -> list[Path]:
    """Every folder under ``root`` (recursively, ``root`` included) holding ``experiment.json``.

    Raises
    ------
    ResultsError
        If ``root`` is not an existing folder.
    """
    root = Path(root)
    if not root.is_dir():
        raise ResultsError(f"The results folder {root} does not exist or is not a folder. Pass the folder the search wrote its experiments to.")
    return sorted(p.parent for p in root.rglob(EXPERIMENT_FILE) if p.is_file())


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        raise ResultsError(f"{path} is missing") from None
    except (OSError, json.JSONDecodeError) as exc:
        raise ResultsError(f"{path} is not valid JSON ({exc})") from None


def _read_trials(path: Path) -> pd.DataFrame:
    try:
        trials = pd.read_csv(path, dtype={"trial_id": str, "status": str})
    except FileNotFoundError:
        raise ResultsError(f"{path} is missing") from None
    except (OSError, ValueError, pd.errors.ParserError) as exc:
        raise ResultsError(f"{path} cannot be read ({exc})") from None
    missing = [c for c in ("trial_id", "epoch", "target_acc", "status") if c not in trials.columns]
    if missing:
        raise ResultsError(f"{path} lacks the column(s) {', '.join(missing)}")
    return trials


def load_experiment(path: str | Path) -> Experiment:
    """Read one finished experiment folder.

    Raises
    ------
    ResultsError
        If the experiment is not finished, or one of its files is missing, unreadable or
        invalid (the message names the file and the reason, without a trailing period).
    """
    path = Path(path)
    meta = _read_json(path / EXPERIMENT_FILE)
    if not isinstance(meta, dict) or not meta.get("task"):
        raise ResultsError(f"{path / EXPERIMENT_FILE} has no 'task'")
    status = meta.get("status")
    if status != "finished":
        raise ResultsError(f"its status is {status!r}, not 'finished'")
    try:
        config = SSOTConfig.from_json(path / BEST_CONFIG_FILE)
    except SSOTError as exc:
        raise ResultsError(str(exc).rstrip(".")) from None
    task = str(meta["task"])
    if config.task != task:
        raise ResultsError(f"{path / BEST_CONFIG_FILE} is for task {config.task!r} but the experiment is for {task!r}")
    trial, accuracy = best_completed_trial(_read_trials(path / TRIALS_FILE))
    return Experiment(path=path, task=task, config=config, accuracy=accuracy, best_trial=trial)


def _rank(experiment: Experiment) -> float:
    return experiment.accuracy if math.isfinite(experiment.accuracy) else -math.inf


def choose_per_task(experiments: Sequence[Experiment]) -> dict[str, tuple[Experiment, int]]:
    """The best experiment of each task and the number of candidates it was chosen from.

    The best is the highest final-epoch accuracy of a completed trial (:func:`best_completed_trial`);
    an experiment without a completed trial ranks last; ties go to the first folder in path order.
    """
    by_task: dict[str, list[Experiment]] = {}
    for experiment in experiments:
        by_task.setdefault(experiment.task, []).append(experiment)
    return {task: (max(group, key=_rank), len(group)) for task, group in sorted(by_task.items())}


# ------------------------------------------------------------------------------------ export
def export_best_configs(results_dir: str | Path, config_dir: str | Path, *, overwrite: bool = False,
                        warn: Callable[[str], None] | None = None) -> ExportReport:
    """Write ``config_dir/<task>.json`` for the best finished experiment of each task.

    Parameters
    ----------
    results_dir : str or Path
        Folder searched recursively for experiment folders.
    config_dir : str or Path
        Folder receiving one config per task (created if needed).
    overwrite : bool
        Replace existing files in ``config_dir``; by default they are refused.
    warn : callable, optional
        Called at once with the one-line message of each skipped experiment folder.

    Returns
    -------
    ExportReport
        The exported configs and one line per skipped experiment folder.

    Raises
    ------
    ResultsError
        If no experiment is found, none is finished and readable, or a target file exists and
        ``overwrite`` is false (checked before anything is written).
    """
    report = ExportReport()
    folders = find_experiments(results_dir)
    if not folders:
        raise ResultsError(f"No experiment (no {EXPERIMENT_FILE}) under {results_dir}. Pass the folder a search wrote its experiments to.")
    loaded = []
    for folder in folders:
        try:
            loaded.append(load_experiment(folder))
        except ResultsError as exc:
            report.skipped.append(f"skipped {folder}: {exc}")
            if warn is not None:
                warn(report.skipped[-1])
    if not loaded:
        raise ResultsError(f"No finished, readable experiment among the {len(folders)} under {results_dir}.")
    chosen = choose_per_task(loaded)
    config_dir = Path(config_dir)
    targets = {task: config_dir / f"{task}.json" for task in chosen}
    if not overwrite:
        check_new(list(targets.values()), hint="pass --overwrite to replace it or choose another --out")
    config_dir.mkdir(parents=True, exist_ok=True)
    for task, (experiment, n) in chosen.items():
        experiment.config.to_json(targets[task])
        report.exported.append(Exported(task, experiment.accuracy, experiment.path, targets[task], n))
    return report


def _describe(item: Exported) -> str:
    acc = f"{item.accuracy:.4f}" if math.isfinite(item.accuracy) else "n/a (no completed trial)"
    choice = f" (best of {item.n_candidates} experiments)" if item.n_candidates > 1 else ""
    return f"{item.task}: target_acc {acc} from {item.experiment}{choice} -> {item.config_path}"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python tune/export.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("results_dir", type=Path, help="folder holding finished experiments (searched recursively)")
    parser.add_argument("--out", type=Path, required=True, help="folder receiving one <task>.json per task")
    parser.add_argument("--overwrite", action="store_true", help="replace existing configs in --out")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Command line entry point; returns the exit status (2 on a user error)."""
    args = build_parser().parse_args(argv)
    try:
        report = export_best_configs(args.results_dir, args.out, overwrite=args.overwrite,
                                     warn=lambda line: print(f"warning: {one_line(line)}", file=sys.stderr))
    except SSOTError as exc:
        print(f"error: {one_line(exc)}", file=sys.stderr)
        return 2
    for item in report.exported:
        print(_describe(item))
    return 0


if __name__ == "__main__":
    sys.exit(main())
