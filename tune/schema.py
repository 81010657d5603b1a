"""The on-disk format of an experiment: its one owner (standard library and pandas only).

An experiment is one search on one task, in a folder holding

``experiment.json`` (:data:`EXPERIMENT_FILE`)
    task, dataset, name, search kind, the ``metric`` it selects on and its ``mode``, the
    space (spec kinds :data:`SPACE_KINDS`), ``max_epochs``, ``status`` (``running`` /
    ``finished``), ``best_trial`` (the id the rule below picks), ...;
``trials.csv`` (:data:`TRIALS_FILE`)
    one row per (trial, epoch): ``task, trial_id, search``, the hyperparameters, ``epoch``,
    every metric of :data:`METRICS` and the trial's final ``status`` (:data:`STATUSES`) and
    ``reason``; a trial that recorded no epoch has one row with an empty ``epoch``;
``best_config.json`` (:data:`BEST_CONFIG_FILE`)
    the full trainer config of the best trial.

``tune/`` writes these files, ``analysis/`` and ``tune/export.py`` read them, all through this
module: names, statuses, metric columns, the reader (:func:`read_experiment`), the per-trial table
(:func:`trial_table`) and the best-trial rule (:func:`best_trial`).

The best-trial rule
-------------------
Among the trials that reached the last epoch (``reached_final``: status ``completed``, or
``running`` at the last epoch), the best is the one with the best *final-epoch* value of the
experiment's selection metric (``metric`` in ``experiment.json``, default ``target_acc``; highest
for a ``max`` metric, lowest for a ``min`` one). Ties (equal values) go to the lowest
``trial_id`` in text order, i.e. the trial created first. Early-stopped trials are left out
(their value is truncated), as are diverged and errored ones.
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

EXPERIMENT_FILE, TRIALS_FILE, BEST_CONFIG_FILE = "experiment.json", "trials.csv", "best_config.json"

COMPLETED, EARLY_STOPPED, DIVERGED, ERRORED, RUNNING = "completed", "early-stopped", "diverged", "errored", "running"
#: Every status a trial may end with (``trials.csv`` repeats it on each of its rows).
STATUSES: tuple[str, ...] = (COMPLETED, EARLY_STOPPED, DIVERGED, ERRORED, RUNNING)
#: Statuses of trials whose accuracies are real results (diverged and errored ones are not).
USABLE: tuple[str, ...] = (COMPLETED, EARLY_STOPPED, RUNNING)
#: experiment.json's status: finished (all trials ended, none errored), errored (re-run by --resume), running.
FINISHED = "finished"
EXPERIMENT_STATUSES: tuple[str, ...] = (RUNNING, FINISHED, ERRORED)

#: The kinds of space spec that ``tune/space.py`` writes into ``experiment.json``.
SPACE_KINDS: tuple[str, ...] = ("loguniform", "choice", "grid", "fixed")
#: The paper's searched hyperparameters, in display order (a space may add others).
PARAMS: tuple[str, ...] = ("lambda_ot", "lambda_ent", "eps", "potential_width")


@dataclass(frozen=True)
class Metric:
    """One metric column of ``trials.csv``.

    ``direction`` is ``"max"`` (higher is better), ``"min"`` or ``None`` (a diagnostic, never
    selected on); ``per_epoch`` is False for a value reported once per trial; ``label`` says
    how a selection on it should be read (``"oracle"``: it uses the target labels).
    """

    name: str
    direction: Literal["max", "min"] | None
    per_epoch: bool = True
    label: str = ""


#: Every metric, in column order. A new metric (e.g. a label-free validator score) is one line.
METRICS: tuple[Metric, ...] = (
    Metric("target_acc", "max", label="oracle"),
    Metric("source_acc", "max"),
    Metric("loss_total", "min"),
    Metric("loss_ce", "min"),
    Metric("loss_ot", "min"),
    Metric("loss_ent", "min"),
    Metric("ot_value", None),
    Metric("outlier_mass", None),
    Metric("n_pred_classes", None),
    Metric("source_only_target_acc", "max", per_epoch=False),
    Metric("time_s", None),
    # label-free validators (ssot/validators.py computes them; a test checks the directions agree)
    Metric("entropy", "min"),
    Metric("snd", "max"),
    Metric("im", "max"),
    Metric("im_pda", "max"),
    Metric("bnm", "max"),
    Metric("dev", "min"),
    Metric("mixval", "max"),
    Metric("mixval_inter", "max"),
    Metric("mixval_intra", "max"),
)
METRIC_COLUMNS: tuple[str, ...] = tuple(m.name for m in METRICS)
#: The per-epoch metrics the trainable reports to Ray.
REPORTED_METRICS: tuple[str, ...] = tuple(m.name for m in METRICS if m.per_epoch)
DEFAULT_METRIC = "target_acc"
ID_COLUMNS: tuple[str, ...] = ("task", "trial_id", "search")
#: Columns without which the rows of ``trials.csv`` cannot be used.
REQUIRED_COLUMNS: tuple[str, ...] = ("trial_id", "epoch", "target_acc", "status")


def metric(name: str) -> Metric:
    """The :class:`Metric` called ``name``; a ``ValueError`` in scikit-learn's style otherwise."""
    for m in METRICS:
        if m.name == name:
            return m
    raise ValueError(f"The 'metric' parameter must be one of {', '.join(METRIC_COLUMNS)}. Got {name!r} instead.")


def selectable_metrics() -> tuple[str, ...]:
    """The metrics a search may select on (those with a direction)."""
    return tuple(m.name for m in METRICS if m.direction is not None)


#: A trial's final target predictions (class indices, last epoch only), for the EnsV selector.
PREDICTIONS_COLUMN = "target_pred"


def trial_columns(params: list[str] | tuple[str, ...]) -> list[str]:
    """The columns of ``trials.csv`` for an experiment whose trials record ``params``."""
    return [*ID_COLUMNS, *params, "epoch", *METRIC_COLUMNS, PREDICTIONS_COLUMN, "status", "reason"]


def now() -> str:
    """The current UTC time as ``experiment.json`` records it."""
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


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
    """The files of an experiment as texts, in the order to write them (``experiment.json``,
    which carries the status, last)."""
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


# -------------------------------------------------------------------------------- reading
@dataclass(frozen=True)
class Problem:
    """A defect of one file that a reader worked around (``"error"``: its content is unusable)."""

    path: Path
    message: str
    severity: Literal["warning", "error"] = "warning"

    def __str__(self) -> str:
        return f"{self.severity}: {self.path}: {self.message}"


@dataclass
class ExperimentFiles:
    """What :func:`read_experiment` found in one folder.

    ``trials`` holds the usable rows of ``trials.csv`` sorted by trial and epoch (``epoch`` NaN
    on the row of a trial that recorded no epoch), or None when nothing is usable.
    """

    path: Path
    meta: dict[str, Any] | None
    trials: pd.DataFrame | None
    best_config: dict[str, Any] | None
    problems: list[Problem] = field(default_factory=list)

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


def find_experiments(root: str | os.PathLike[str]) -> list[Path]:
    """Every folder under ``root`` (itself included) holding ``experiment.json``, sorted; the walk
    does not descend into an experiment folder (Ray's trial folders) nor into hidden folders."""
    found: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root):
        if EXPERIMENT_FILE in filenames:
            found.append(Path(dirpath))
            dirnames[:] = []
        else:
            dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
    return sorted(found)


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

    Lines with the wrong number of fields, rows without ``trial_id`` or ``status``, or with an
    accuracy but no epoch (a line cut short) are dropped; unknown statuses are left out;
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
    frame["status"] = frame["status"].str.strip()
    incomplete = frame[["trial_id", "status"]].isna().any(axis=1) | (frame["epoch"].isna() & frame["target_acc"].notna())
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


def read_experiment(folder: str | os.PathLike[str], read: Reader | None = None) -> ExperimentFiles:
    """Read one experiment folder: its metadata, per-(trial, epoch) table and best config.

    Parameters
    ----------
    folder : path-like
        The experiment folder.
    read : callable, optional
        ``read(file_name) -> text or None when missing``; default: read the local folder
        (``tune/`` passes a reader for remote storage).

    Returns
    -------
    ExperimentFiles
        Everything readable, and one :class:`Problem` per defect (a missing, truncated or
        corrupt file; a search still running). Never raises on a bad file.
    """
    folder = Path(folder)
    read = read or _local_reader(folder)
    problems: list[Problem] = []
    meta = _read_json(folder, EXPERIMENT_FILE, read, problems, required=True)
    if meta is None:
        return ExperimentFiles(folder, None, None, None, problems)
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
    return ExperimentFiles(folder, dict(meta), trials, best, problems)


# -------------------------------------------------------------------------------- per-trial table
def _last_reason(reasons: pd.Series) -> str:
    present = reasons.dropna().astype(str).str.strip()
    present = present[present != ""]
    return str(present.iloc[-1]) if len(present) else ""


def without_placeholders(trials: pd.DataFrame) -> pd.DataFrame:
    """The rows of real epochs: a diverged trial's last row holds a placeholder accuracy (0)."""
    diverged = trials["status"] == DIVERGED
    if not diverged.any():
        return trials
    last = trials.groupby("trial_id", sort=False)["epoch"].transform("max") == trials["epoch"]
    return trials[~(diverged & last)]


def trial_table(trials: pd.DataFrame, max_epochs: int, params: list[str] | tuple[str, ...] = PARAMS) -> pd.DataFrame:
    """One row per trial, built from the per-(trial, epoch) rows of ``trials.csv``.

    Returns
    -------
    pandas.DataFrame
        Sorted by ``trial_id``; columns ``trial_id``, ``params`` (those present), ``status``,
        every metric column at the trial's last recorded epoch, ``reason``, ``n_epochs`` (last
        epoch recorded, 0 for none), ``best_acc`` and ``best_epoch`` (best ``target_acc`` over
        its real epochs), ``reached_final`` (a usable status and ``n_epochs >= max_epochs``)
        and ``final_acc`` (``target_acc`` at the last epoch of a trial that reached it, else NaN).
    """
    params = [p for p in params if p in trials.columns]
    metrics = [m for m in METRIC_COLUMNS if m in trials.columns]
    ordered = trials.sort_values(["trial_id", "epoch"], kind="stable", na_position="first")
    grouped = ordered.groupby("trial_id", sort=True)
    table = ordered.drop_duplicates("trial_id", keep="last").set_index("trial_id").sort_index()[[*params, "status", *metrics]]
    table["reason"] = grouped["reason"].agg(_last_reason) if "reason" in trials else ""
    table["n_epochs"] = grouped["epoch"].max().fillna(0).astype(int)
    valid = without_placeholders(trials).dropna(subset=["epoch", "target_acc"])
    best_rows = valid.loc[valid.groupby("trial_id")["target_acc"].idxmax()].set_index("trial_id")
    table["best_acc"] = best_rows["target_acc"]
    table["best_epoch"] = best_rows["epoch"]
    table["reached_final"] = (table["status"].isin(USABLE) & (table["n_epochs"] >= max(max_epochs, 1))).astype(bool)
    table["final_acc"] = table["target_acc"].where(table["reached_final"])
    return table.reset_index()


def rank(table: pd.DataFrame, column: str, direction: str = "max") -> pd.DataFrame:
    """Rows of ``table`` with a finite ``column``, best first; ties go to the lowest ``trial_id``."""
    values = pd.to_numeric(table[column], errors="coerce")
    keep = table[(values.abs() < math.inf).astype(bool)]  # NaN and infinities compare False
    return keep.sort_values([column, "trial_id"], ascending=[direction == "min", True], kind="stable").reset_index(drop=True)


def ranked_trials(table: pd.DataFrame, metric_name: str = DEFAULT_METRIC) -> pd.DataFrame:
    """The trials that count for the best-trial rule (module docstring), best first."""
    return rank(table[table["reached_final"]], metric_name, metric(metric_name).direction or "max")


def best_trial(table: pd.DataFrame, metric_name: str = DEFAULT_METRIC) -> pd.Series | None:
    """The row of :func:`trial_table` that the best-trial rule picks, or None when no trial counts."""
    ranked = ranked_trials(table, metric_name)
    return ranked.iloc[0] if len(ranked) else None
