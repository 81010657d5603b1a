"""Export the best config of each task's finished search, ready for the final runs.

    python tune/export.py RESULTS --out CONFIG_DIR [--overwrite]
    python -m tune.export RESULTS --out CONFIG_DIR
    python tune/export.py s3://bucket/ssot --out CONFIG_DIR      # experiments in object storage

An experiment is a folder holding ``experiment.json``, ``trials.csv`` and ``best_config.json``
(:mod:`ssot.results.experiment`); experiments are found by searching RESULTS recursively. For
each task, the exported ``CONFIG_DIR/<task>.json`` is the ``best_config.json`` of one finished
experiment, validated through :class:`ssot.config.SSOTConfig` and written back, so it is exactly
a valid config for ``python tune/final.py`` and ``python -m ssot.train --config``.

Each experiment's best trial follows the one best-trial rule of :mod:`ssot.results.trials`
(recomputed from ``trials.csv``: the best final-epoch value of the experiment's selection metric
among trials that reached the last epoch, ties to the lowest trial id), so it is the trial whose
config is in ``best_config.json``. When several finished experiments exist for a task, the one
whose best trial has the highest final-epoch ``target_acc`` is chosen (ties: the first folder in
path order). Experiments still running, or whose files are unreadable, are skipped with a
one-line warning, as is one whose ``trials.csv`` no longer names the best trial that
``experiment.json`` recorded (rows lost or changed); the problems the reader worked around in the
experiments used (e.g. malformed rows dropped), and those of a skipped experiment's ``trials.csv``,
are printed one line each, like the dashboard's. ``--out`` is never one of the files read (an experiment's ``best_config.json``
reached through a symlink, even with ``--overwrite``). Existing files in CONFIG_DIR are never replaced unless ``--overwrite`` is given.
"""
from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ssot import cli
from ssot.config import SSOTConfig
from ssot.errors import ResultsError, SSOTError, one_line
from ssot.results import discovery, outputs, storage
from ssot.results.experiment import BEST_CONFIG_FILE, EXPERIMENT_FILE, TRIALS_FILE, Experiment, check_finished, read_experiment

__all__ = ["ExportCandidate", "Exported", "ExportReport", "read_candidates", "load_experiment", "choose_per_task",
           "export_best_configs", "main"]


@dataclass(frozen=True)
class ExportCandidate:
    """A finished experiment whose best config can be exported.

    Attributes
    ----------
    path : the experiment folder (its URI in object storage).
    task : its task (from ``experiment.json``).
    config : its validated best config.
    accuracy : final-epoch ``target_acc`` (fraction) of its best trial; NaN if none.
    best_trial : the id of that trial under the best-trial rule (``None`` if no trial counts).
    """

    path: Path | str
    task: str
    config: SSOTConfig
    accuracy: float
    best_trial: str | None


@dataclass(frozen=True)
class Exported:
    """One exported config: which experiment it came from and where it was written."""

    task: str
    accuracy: float
    experiment: Path | str
    config_path: Path
    n_candidates: int


@dataclass
class ExportReport:
    """What :func:`export_best_configs` did: the exported configs, the skipped folders and the
    problems of the experiments used (one line each)."""

    exported: list[Exported] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # the reader's problems (used experiments; skipped ones' trials.csv)


# ------------------------------------------------------------------------------------ reading
def read_candidates(results_dir: str | Path) -> list[Experiment]:
    """Every experiment under ``results_dir`` (a folder, or a URI such as ``s3://bucket/prefix``),
    read through :func:`ssot.results.discovery.read_experiments`.

    Raises
    ------
    ResultsError
        If ``results_dir`` is not a folder, holds no experiment, or the storage cannot be read.
    """
    try:
        found = discovery.read_experiments(results_dir)
    except storage.StorageError as exc:
        raise ResultsError(str(exc)) from None
    if not found:
        raise ResultsError(f"No experiment (no {EXPERIMENT_FILE}) under {results_dir}. Pass the folder a search wrote its experiments to.")
    return found


def load_experiment(experiment: Experiment | str | Path) -> ExportCandidate:
    """The export candidate of one finished experiment (a folder, or one read already).

    Raises
    ------
    ResultsError
        If the experiment is not finished, or one of its files is missing, unreadable or
        invalid (the message names the file and the reason, without a trailing period).
    """
    experiment = check_finished(experiment if isinstance(experiment, Experiment) else read_experiment(experiment))
    path = experiment.path
    try:
        config = SSOTConfig.from_dict(experiment.best_config or {}, source=f"{path}/{BEST_CONFIG_FILE}")
    except SSOTError as exc:
        raise ResultsError(str(exc).rstrip(".")) from None
    if config.task != experiment.task:
        raise ResultsError(f"{path}/{BEST_CONFIG_FILE} is for task {config.task!r} but the experiment is for {experiment.task!r}")
    row = experiment.best_trial()
    if row is None:
        return ExportCandidate(path=path, task=experiment.task, config=config, accuracy=math.nan, best_trial=None)
    return ExportCandidate(path=path, task=experiment.task, config=config, accuracy=float(row["target_acc"]),
                           best_trial=str(row["trial_id"]))


def _rank(candidate: ExportCandidate) -> float:
    return candidate.accuracy if math.isfinite(candidate.accuracy) else -math.inf


def choose_per_task(candidates: Sequence[ExportCandidate]) -> dict[str, tuple[ExportCandidate, int]]:
    """The best candidate of each task and the number of candidates it was chosen from.

    The best is the highest final-epoch accuracy of its best trial; an experiment without a
    trial that reached the last epoch ranks last; ties go to the first folder in path order.
    """
    by_task: dict[str, list[ExportCandidate]] = {}
    for candidate in candidates:
        by_task.setdefault(candidate.task, []).append(candidate)
    return {task: (max(group, key=_rank), len(group)) for task, group in sorted(by_task.items())}


# ------------------------------------------------------------------------------------ export
def export_best_configs(results_dir: str | Path, config_dir: str | Path, *, overwrite: bool = False,
                        warn: Callable[[str], None] | None = None) -> ExportReport:
    """Write ``config_dir/<task>.json`` for the best finished experiment of each task.

    Parameters
    ----------
    results_dir : str or Path
        Folder searched recursively for experiment folders, or a URI such as ``s3://bucket/prefix``
        (:func:`read_candidates`).
    config_dir : str or Path
        Folder receiving one config per task (created if needed).
    overwrite : bool
        Replace existing files in ``config_dir``; by default they are refused.
    warn : callable, optional
        Called at once with the one-line message of each skipped experiment folder, and of each
        problem the reader found in an experiment it used (:class:`ssot.results.experiment.Problem`).

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
    inputs = discovery.experiment_inputs(results_dir)
    outputs.check_output(config_dir, "--out", folder=True, inputs=inputs)
    report = ExportReport()
    found = read_candidates(results_dir)
    loaded = []
    for experiment in found:
        try:
            loaded.append(load_experiment(experiment))
        except ResultsError as exc:
            report.skipped.append(f"warning: skipped {experiment.path}: {exc}")
            # the problems of its trials.csv, which the skip may be due to (rows lost or changed)
            shown = [str(p) for p in experiment.problems if Path(str(p.path)).name == TRIALS_FILE]
            report.problems.extend(shown)
            if warn is not None:
                for line in [report.skipped[-1], *shown]:
                    warn(line)
        else:  # what the reader worked around in a used experiment (e.g. rows of a truncated trials.csv)
            report.problems.extend(str(p) for p in experiment.problems)
            if warn is not None:
                for problem in experiment.problems:
                    warn(str(problem))
    if not loaded:
        raise ResultsError(f"No finished, readable experiment among the {len(found)} under {results_dir}.")
    chosen = choose_per_task(loaded)
    config_dir = Path(config_dir)
    targets = {task: config_dir / f"{task}.json" for task in chosen}
    outputs.check_output(config_dir, "--out", folder=True, new=[p.name for p in targets.values()], exists_ok=overwrite,
                     hint="pass --overwrite to replace it or choose another --out", inputs=inputs)
    config_dir.mkdir(parents=True, exist_ok=True)
    for task, (candidate, n) in chosen.items():
        candidate.config.to_json(targets[task])
        report.exported.append(Exported(task, candidate.accuracy, candidate.path, targets[task], n))
    return report


def _describe(item: Exported) -> str:
    acc = f"{item.accuracy:.4f}" if math.isfinite(item.accuracy) else "n/a (no completed trial)"
    choice = f" (best of {item.n_candidates} experiments)" if item.n_candidates > 1 else ""
    return f"{item.task}: target_acc {acc} from {item.experiment}{choice} -> {item.config_path}"


def build_parser() -> argparse.ArgumentParser:
    parser = cli.Parser(prog="python tune/export.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("results_dir", metavar="RESULTS",
                        help="folder holding finished experiments (searched recursively), or a URI such as s3://bucket/prefix")
    parser.add_argument("--out", type=Path, required=True, metavar="FOLDER", help="folder receiving one <task>.json per task")
    parser.add_argument("--overwrite", action="store_true", help="replace existing configs in --out")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Command line entry point (``ssot-export``); the exit status of :mod:`ssot.cli`."""
    return cli.command(build_parser(), export, argv)


def export(args: argparse.Namespace) -> int:
    """The command's work: :func:`export_best_configs`, one line per exported config."""
    report = export_best_configs(args.results_dir, args.out, overwrite=args.overwrite,
                                 warn=lambda line: print(one_line(line), file=sys.stderr))
    for item in report.exported:
        print(_describe(item))
    return cli.EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
