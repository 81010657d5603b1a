"""The files of an experiment: names, statuses, the writer, the reader and its problems.

An experiment is one search on one task, in a folder holding

``experiment.json`` (:data:`EXPERIMENT_FILE`)
    task, dataset, name, search kind, the ``metric`` it selects on and its ``mode``, the
    space (spec kinds :data:`SPACE_KINDS`), ``max_epochs``, ``status`` (:data:`EXPERIMENT_STATUSES`),
    ``best_trial`` (the id :func:`ssot.results.trials.best_trial` picks), ...;
``trials.csv`` (:data:`TRIALS_FILE`)
    one row per (trial, epoch), see :mod:`ssot.results.trials`;
``best_config.json`` (:data:`BEST_CONFIG_FILE`)
    the full trainer config of the best trial.

``tune/`` writes these files (:func:`experiment_texts`, :func:`write_experiment`), every reader
reads them with :func:`read_experiment` into one :class:`Experiment` (``analysis``, export,
confirmation, the search's own resume); every experiment under a root, local or object storage, is
found and read by :mod:`ssot.results.discovery`.
"""
from __future__ import annotations

import datetime as dt
import io
import json
import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pandas as pd

from ssot.errors import ResultsError
from ssot.results import trials as trial_model
from ssot.results.metrics import DEFAULT_METRIC, METRIC_COLUMNS, metric
from ssot.results.trials import ERRORED, PARAMS, PREDICTIONS_COLUMN, REQUIRED_COLUMNS, RUNNING, STATUSES

EXPERIMENT_FILE, TRIALS_FILE, BEST_CONFIG_FILE = "experiment.json", "trials.csv", "best_config.json"
#: The files of an experiment, in the order a writer writes them (``experiment.json``, which
#: carries the status, last).
FILES: tuple[str, ...] = (TRIALS_FILE, BEST_CONFIG_FILE, EXPERIMENT_FILE)

#: experiment.json's status: finished (all trials ended, none errored), errored (re-run by --resume), running.
FINISHED = "finished"
EXPERIMENT_STATUSES: tuple[str, ...] = (RUNNING, FINISHED, ERRORED)

#: The kinds of space spec that ``tune/space.py`` writes into ``experiment.json``.
SPACE_KINDS: tuple[str, ...] = ("loguniform", "choice", "grid", "fixed")
#: ``experiment.json``'s key naming the experiment whose configs a search replayed
#: (``tune/search.py --configs-from``): ``{"path", "name", "task", "search", "seed", "n_configs"}``.
REFERENCE_KEY = "configs_from"


def now() -> str:
    """The current UTC time as ``experiment.json`` records it."""
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def hyperparameters(meta: Mapping[str, Any]) -> list[str]:
    """The hyperparameter columns of an experiment's ``trials.csv``: the paper's four, then the
    other fields of its space."""
    return list(dict.fromkeys([*PARAMS, *(meta.get("space") or {})]))


def new_meta(*, task: str, dataset: str, name: str, search: str, space: Mapping[str, Any], max_epochs: int,
             num_samples: int, metric_name: str = DEFAULT_METRIC, **extra: Any) -> dict[str, Any]:
    """The content of a new ``experiment.json`` (status ``running``)."""
    chosen = metric(metric_name)
    return {"task": task, "dataset": dataset, "name": name, "search": search, "metric": chosen.name,
            "mode": chosen.direction, "metric_label": chosen.label, "max_epochs": int(max_epochs),
            "num_samples": int(num_samples), "space": dict(space), **extra,
            "status": RUNNING, "started": now(), "finished": None}


# -------------------------------------------------------------------------------- writing
def experiment_texts(meta: Mapping[str, Any], trials: pd.DataFrame,
                     best_config: Mapping[str, Any] | None) -> dict[str, str]:
    """The files of an experiment as texts, in the order to write them (:data:`FILES`)."""
    texts = {TRIALS_FILE: trials.to_csv(index=False)}
    if best_config is not None:
        texts[BEST_CONFIG_FILE] = json.dumps(dict(best_config), indent=2) + "\n"
    texts[EXPERIMENT_FILE] = json.dumps(dict(meta), indent=2) + "\n"
    return texts


def write_experiment(folder: str | os.PathLike[str], meta: Mapping[str, Any], trials: pd.DataFrame,
                     best_config: Mapping[str, Any] | None) -> Path:
    """Write an experiment into a local ``folder`` (created); returns it."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in experiment_texts(meta, trials, best_config).items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


# -------------------------------------------------------------------------------- the experiment
@dataclass(frozen=True)
class Problem:
    """A defect of one file that a reader worked around (``"error"``: its content is unusable)."""

    path: Path | str
    message: str
    severity: Literal["warning", "error"] = "warning"

    def __str__(self) -> str:
        return f"{self.severity}: {self.path}: {self.message}"


@dataclass
class Experiment:
    """One experiment as :func:`read_experiment` found it.

    Attributes
    ----------
    path : Path or str
        The experiment folder (its URI for one read from object storage).
    meta : dict or None
        The content of ``experiment.json`` (None when unreadable).
    trials : pandas.DataFrame or None
        The usable rows of ``trials.csv`` sorted by trial and epoch (``epoch`` NaN on the row of
        a trial that recorded no epoch), or None when nothing is usable.
    best_config : dict or None
        The content of ``best_config.json``.
    problems : list of Problem
        One per defect of the files.
    """

    path: Path | str
    meta: dict[str, Any] | None
    trials: pd.DataFrame | None
    best_config: dict[str, Any] | None = None
    problems: list[Problem] = field(default_factory=list)

    @property
    def task(self) -> str:
        """The task name, e.g. ``"P2I"`` (the folder's name when ``experiment.json`` lacks it)."""
        return str((self.meta or {}).get("task") or Path(str(self.path)).name)

    @property
    def name(self) -> str:
        """The experiment's name (the folder above the task folder by default)."""
        return str((self.meta or {}).get("name") or Path(str(self.path)).parent.name)

    @property
    def dataset(self) -> str:
        """The dataset name, or ``""`` if unknown."""
        return str((self.meta or {}).get("dataset") or "")

    @property
    def search(self) -> str:
        """The search algorithm: ``"tpe"``, ``"grid"`` or ``"random"``."""
        return str((self.meta or {}).get("search") or "")

    @property
    def status(self) -> str:
        """``experiment.json``'s status (:data:`EXPERIMENT_STATUSES`), ``"unknown"`` without one."""
        return str((self.meta or {}).get("status") or "unknown")

    @property
    def metric(self) -> str:
        """The metric the search selected on (``target_acc`` for experiments that do not say)."""
        return str((self.meta or {}).get("metric") or DEFAULT_METRIC)

    @property
    def max_epochs(self) -> int:
        """The epoch a trial must reach to count as having reached the end."""
        value = (self.meta or {}).get("max_epochs")
        if isinstance(value, (int, float)) and math.isfinite(value) and value > 0:
            return int(value)
        epochs = self.trials["epoch"] if self.trials is not None else pd.Series(dtype=float)
        return int(epochs.max()) if epochs.notna().any() else 0

    @property
    def params(self) -> list[str]:
        """The hyperparameter columns of its trials (:func:`hyperparameters`)."""
        return hyperparameters(self.meta or {})

    @property
    def errors(self) -> list[Problem]:
        """The problems that make a file's content unusable."""
        return [p for p in self.problems if p.severity == "error"]

    def trial_table(self) -> pd.DataFrame:
        """:func:`ssot.results.trials.trial_table` of its rows."""
        return trial_model.trial_table(self.trials, self.max_epochs, self.params)

    def ranked_trials(self) -> pd.DataFrame:
        """The trials the best-trial rule ranks, best first, on the experiment's metric."""
        return trial_model.ranked_trials(self.trial_table(), self.metric)

    def best_trial(self, table: pd.DataFrame | None = None) -> pd.Series | None:
        """The best trial's row of :meth:`trial_table` (or of ``table``), None when no trial counts.

        The best trial is computed once per experiment, by the best-trial rule
        (:func:`ssot.results.trials.best_trial`) when the search writes its files, and recorded in
        ``experiment.json`` (``best_trial``); readers take that record (:func:`check_finished`
        verifies it against the rows). A search that records none yet (running, or older files)
        gets the rule applied now.
        """
        table = self.trial_table() if table is None else table
        meta = self.meta or {}
        if "best_trial" not in meta:
            return trial_model.best_trial(table, self.metric)
        rows = table[table["trial_id"].astype(str) == str(meta["best_trial"])] if meta["best_trial"] is not None else table.iloc[:0]
        return rows.iloc[0] if len(rows) else None


# -------------------------------------------------------------------------------- reading
Reader = Callable[[str], "str | None"]


def _local_reader(folder: Path) -> Reader:
    def read(name: str) -> str | None:
        path = folder / name
        return path.read_text(encoding="utf-8") if path.is_file() else None
    return read


def _read_json(folder: Path, name: str, read: Reader, problems: list[Problem], *, required: bool) -> dict[str, Any] | None:
    path = folder / name
    try:
        text = read(name)
        if text is None:
            if required:
                problems.append(Problem(path, "file is missing", "error"))
            return None
        content = json.loads(text)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        problems.append(Problem(path, f"cannot be read as JSON ({exc}); the file is truncated or corrupt - "
                                      "re-run or resume the search to rewrite it", "error"))
        return None
    if not isinstance(content, dict):
        problems.append(Problem(path, "must hold a JSON object", "error"))
        return None
    return content


def parse_trials(text: str | None, path: Path, problems: list[Problem]) -> pd.DataFrame | None:
    """Parse ``trials.csv``, dropping (and reporting in ``problems``) the rows that cannot be used.

    Lines with the wrong number of fields, rows without ``trial_id`` or ``status``, with an
    accuracy but no epoch (a line cut short), or with a hyperparameter that is missing, NaN or
    infinite are dropped; infinite metric values are read as missing (NaN: no run reports them,
    a diverged trial reports finite placeholders); unknown statuses are left out;
    repeated (trial, epoch) rows (a resumed trial) keep the last. Columns of older files that
    lack some metric are read as they are.
    """
    if text is None:
        problems.append(Problem(path, "file is missing; the experiment has no results yet", "error"))
        return None
    bad: list[list[str]] = []
    try:
        frame = pd.read_csv(io.StringIO(text), dtype={"trial_id": str, "task": str, "reason": str, "status": str, PREDICTIONS_COLUMN: str},
                            engine="python", on_bad_lines=lambda line: bad.append(line), skip_blank_lines=True)
    except pd.errors.EmptyDataError:
        problems.append(Problem(path, "file is empty; the search wrote no results", "error"))
        return None
    except (pd.errors.ParserError, ValueError) as exc:
        problems.append(Problem(path, f"cannot be parsed as CSV ({exc}); the file is corrupt", "error"))
        return None
    missing = [c for c in REQUIRED_COLUMNS if c not in frame.columns]
    if missing:
        problems.append(Problem(path, f"lacks the column(s) {', '.join(missing)}; was it written by tune/search.py?", "error"))
        return None
    for column in ("epoch", *METRIC_COLUMNS, *PARAMS):
        if column in frame.columns:
            frame[column] = pd.to_numeric(frame[column], errors="coerce")
    infinite = [c for c in METRIC_COLUMNS if c in frame.columns and frame[c].abs().eq(math.inf).any()]
    if infinite:
        problems.append(Problem(path, f"infinite value(s) in {', '.join(infinite)} read as missing: no run reports "
                                      "them, the file was changed or is corrupt"))
        frame[infinite] = frame[infinite].mask(frame[infinite].abs().eq(math.inf))
    frame["status"] = frame["status"].str.strip()
    params = [c for c in PARAMS if c in frame.columns]
    incomplete = (frame[["trial_id", "status"]].isna().any(axis=1) | (frame["epoch"].isna() & frame["target_acc"].notna())
                  | ~frame[params].abs().lt(math.inf).all(axis=1))  # a hyperparameter missing, NaN or infinite
    if int(incomplete.sum()) + len(bad):
        ids = sorted(set(frame.loc[incomplete, "trial_id"].dropna()))
        which = f" (trial {', '.join(ids[:5])}{', ...' if len(ids) > 5 else ''})" if ids else ""
        problems.append(Problem(path, f"{int(incomplete.sum()) + len(bad)} malformed row(s) dropped{which}: the file is "
                                      "truncated, corrupt or still being written - the other rows are used"))
    frame = frame[~incomplete]
    unknown = sorted(set(frame["status"]) - set(STATUSES))
    if unknown:
        problems.append(Problem(path, f"unknown trial status(es) {unknown}; expected one of {list(STATUSES)} - "
                                      "those trials are left out"))
        frame = frame[frame["status"].isin(STATUSES)]
    repeated = frame.duplicated(["trial_id", "epoch"], keep="last") & frame["epoch"].notna()
    if repeated.any():
        problems.append(Problem(path, f"{int(repeated.sum())} repeated (trial_id, epoch) row(s) (a resumed trial?); "
                                      "the last of each is used"))
        frame = frame[~repeated]
    if frame.empty:
        problems.append(Problem(path, "holds no usable row", "error"))
        return None
    return frame.sort_values(["trial_id", "epoch"], kind="stable").reset_index(drop=True)


def read_experiment(folder: str | os.PathLike[str], read: Reader | None = None) -> Experiment:
    """Read one experiment folder: its metadata, per-(trial, epoch) table and best config.

    Parameters
    ----------
    folder : path-like
        The experiment folder.
    read : callable, optional
        ``read(file_name) -> text or None when missing``; default: read the local folder
        (:func:`ssot.results.discovery.read_experiments` reads object storage).

    Returns
    -------
    Experiment
        Everything readable, and one :class:`Problem` per defect (a missing, truncated or
        corrupt file; a search still running). Never raises on a bad file.
    """
    folder = Path(folder)
    read = read or _local_reader(folder)
    problems: list[Problem] = []
    meta = _read_json(folder, EXPERIMENT_FILE, read, problems, required=True)
    if meta is None:
        return Experiment(folder, None, None, None, problems)
    running = meta.get("status") == RUNNING
    if running:
        problems.append(Problem(folder / EXPERIMENT_FILE, "the search is still running: its results are partial and "
                                "trials still running are not in the final-epoch view; read it again when it finishes"))
    try:
        trials = parse_trials(read(TRIALS_FILE), folder / TRIALS_FILE, problems)
    except (OSError, UnicodeDecodeError) as exc:
        problems.append(Problem(folder / TRIALS_FILE, f"cannot be read ({exc})", "error"))
        trials = None
    # no best config is expected while running, nor when no trial counted (e.g. all diverged)
    expected = not running and meta.get("best_trial", "unknown") is not None
    best = _read_json(folder, BEST_CONFIG_FILE, read, problems, required=expected)
    return Experiment(folder, dict(meta), trials, best, problems)


def check_finished(experiment: Experiment) -> Experiment:
    """``experiment`` if it is finished and its files are readable: the one check before its
    best config is exported or its top trials confirmed.

    Raises
    ------
    ResultsError
        If the experiment is not finished, one of its files is missing, unreadable or invalid, or
        ``trials.csv`` no longer gives the best trial that ``experiment.json`` recorded (the
        message names the file and the reason, without a trailing period).
    """
    errors, meta = experiment.errors, experiment.meta
    if meta is None:
        raise ResultsError(f"{errors[0].path} {errors[0].message}")
    if not meta.get("task"):
        raise ResultsError(f"{Path(str(experiment.path)) / EXPERIMENT_FILE} has no 'task'")
    if meta.get("status") != FINISHED:
        raise ResultsError(f"its status is {meta.get('status')!r}, not {FINISHED!r}")
    if errors:
        raise ResultsError(f"{errors[0].path} {errors[0].message}".rstrip("."))
    recorded, best = meta.get("best_trial"), trial_model.best_trial(experiment.trial_table(), experiment.metric)
    if recorded is not None and experiment.trials is not None and (best is None or str(best["trial_id"]) != str(recorded)):
        found = "no trial" if best is None else f"trial {best['trial_id']}"
        read = [p for p in experiment.problems if Path(str(p.path)).name == TRIALS_FILE]
        seen = (f"{len(read)} problem(s) reading it, the first: {read[0].message.rstrip('.')}" if read
                else "every row reads, so rows were changed or removed whole")
        raise ResultsError(f"{Path(str(experiment.path)) / TRIALS_FILE} gives the best trial as {found} but "
                           f"{EXPERIMENT_FILE} recorded trial {recorded}: rows of {TRIALS_FILE} were lost or changed "
                           f"({seen}), so its best config cannot be trusted")
    return experiment
