"""Find and read the experiment folders that ``tune/`` writes.

An experiment is one search on one task, stored in a folder that holds

* ``experiment.json``: the search's description (task, search algorithm, space, status, ...),
* ``trials.csv``: one row per (trial, epoch) with the trial's hyperparameters, its epoch metrics
  and its final ``status`` (``completed``, ``early-stopped``, ``diverged``, ``errored`` or
  ``running``),
* ``best_config.json``: the full trainer config of the best trial (absent while running).

Nothing here writes to those folders. Every defect of a file (missing, truncated, corrupt, still
being written) becomes a :class:`Problem` that names the file and what to do; the readable rest is
still returned, so one bad experiment never hides the others.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pandas as pd

__all__ = [
    "AnalysisError",
    "NoExperimentsError",
    "Problem",
    "ParamSpec",
    "Experiment",
    "EXPERIMENT_FILE",
    "TRIALS_FILE",
    "BEST_CONFIG_FILE",
    "PARAM_ORDER",
    "STATUSES",
    "find_experiment_dirs",
    "load_experiment",
    "load_experiments",
    "read_trials",
]

EXPERIMENT_FILE = "experiment.json"
TRIALS_FILE = "trials.csv"
BEST_CONFIG_FILE = "best_config.json"

#: The searched hyperparameters, in the order the dashboard shows them.
PARAM_ORDER: tuple[str, ...] = ("lambda_ot", "lambda_ent", "eps", "potential_width")

#: Every status a trial may end with (``trials.csv`` repeats it on each of its rows).
STATUSES: tuple[str, ...] = ("completed", "early-stopped", "diverged", "errored", "running")

#: Columns of ``trials.csv`` without which its rows cannot be used.
REQUIRED_COLUMNS: tuple[str, ...] = ("trial_id", "epoch", "target_acc", "status")

_NUMERIC_COLUMNS: tuple[str, ...] = (
    "epoch",
    "target_acc",
    "source_acc",
    "loss_total",
    "loss_ce",
    "loss_ot",
    "loss_ent",
    "ot_value",
    "outlier_mass",
    "n_pred_classes",
)

ParamKind = Literal["log", "linear", "categorical", "grid", "fixed"]

_SPACE_TYPES: dict[str, ParamKind] = {
    "loguniform": "log",
    "qloguniform": "log",
    "lograndint": "log",
    "uniform": "linear",
    "quniform": "linear",
    "randint": "linear",
    "int": "linear",
    "float": "linear",
    "choice": "categorical",
    "categorical": "categorical",
    "grid": "grid",
    "grid_search": "grid",
    "fixed": "fixed",
}


class AnalysisError(Exception):
    """Base class of the errors that the analysis reports to the user as one line."""


class NoExperimentsError(AnalysisError):
    """No readable experiment was found under the given folder."""


@dataclass(frozen=True)
class Problem:
    """A defect of one file that the analysis worked around.

    Attributes
    ----------
    path : Path
        The file (or folder) concerned.
    message : str
        What is wrong and what to do about it.
    severity : {"warning", "error"}
        ``"error"`` when the file's content could not be used at all.
    """

    path: Path
    message: str
    severity: Literal["warning", "error"] = "warning"

    def __str__(self) -> str:
        return f"{self.severity}: {self.path}: {self.message}"


@dataclass(frozen=True)
class ParamSpec:
    """How one hyperparameter was searched, from the ``space`` of ``experiment.json``.

    Attributes
    ----------
    name : str
        Field name, e.g. ``"lambda_ot"``.
    kind : {"log", "linear", "categorical", "grid", "fixed"}
        ``"log"``/``"linear"``: a continuous range ``[low, high]`` (binned for heatmaps);
        ``"categorical"``: a choice among ``values``; ``"grid"``: the grid ``values`` of a grid
        search (one heatmap cell each); ``"fixed"``: one value, not searched.
    low, high : float or None
        Bounds of a continuous range.
    values : tuple
        The choices, grid values or the single fixed value.
    inferred : bool
        True when ``experiment.json`` did not describe the parameter and the spec was inferred
        from the values in ``trials.csv``.
    """

    name: str
    kind: ParamKind
    low: float | None = None
    high: float | None = None
    values: tuple[Any, ...] = ()
    inferred: bool = False

    @property
    def searched(self) -> bool:
        """Whether the parameter varies between trials (everything but ``"fixed"``)."""
        return self.kind != "fixed"

    @classmethod
    def from_json(cls, name: str, entry: Mapping[str, Any]) -> ParamSpec:
        """Build a spec from one entry of ``experiment.json``'s ``space``.

        Parameters
        ----------
        name : str
            The parameter's name.
        entry : Mapping
            E.g. ``{"type": "loguniform", "low": 0.001, "high": 10.0}``,
            ``{"type": "grid", "values": [...]}`` or ``{"type": "fixed", "value": 1.0}``.

        Raises
        ------
        ValueError
            If the entry's ``type`` is unknown or its bounds/values are missing.
        """
        if not isinstance(entry, Mapping):
            raise ValueError(f"space entry {name!r} must be an object, got {entry!r}")
        type_name = str(entry.get("type", "")).lower()
        kind = _SPACE_TYPES.get(type_name)
        if kind is None:
            raise ValueError(
                f"space entry {name!r} has unknown type {entry.get('type')!r}; "
                f"expected one of {sorted(_SPACE_TYPES)}"
            )
        if kind == "fixed":
            if "value" not in entry:
                raise ValueError(f"space entry {name!r} of type 'fixed' has no 'value'")
            return cls(name, kind, values=(entry["value"],))
        if kind in ("categorical", "grid"):
            values = entry.get("values", entry.get("categories"))
            if not isinstance(values, Sequence) or isinstance(values, str) or not values:
                raise ValueError(f"space entry {name!r} of type {type_name!r} needs 'values'")
            return cls(name, kind, values=tuple(_sorted_values(values)))
        try:
            low, high = float(entry["low"]), float(entry["high"])
        except (KeyError, TypeError, ValueError):
            raise ValueError(
                f"space entry {name!r} of type {type_name!r} needs numeric 'low' and 'high'"
            ) from None
        if kind == "log" and low <= 0:
            raise ValueError(f"space entry {name!r} is log-scaled but low={low} is not > 0")
        return cls(name, kind, low=min(low, high), high=max(low, high))

    @classmethod
    def infer(cls, name: str, values: pd.Series) -> ParamSpec:
        """Guess a spec from observed values (used when ``experiment.json`` lacks the entry).

        One distinct value gives ``"fixed"``, at most 12 distinct values ``"categorical"``,
        positive values spanning more than a decade ``"log"``, anything else ``"linear"``.
        """
        finite = pd.to_numeric(values, errors="coerce").dropna()
        distinct = _sorted_values(finite.unique().tolist())
        if len(distinct) <= 1:
            return cls(name, "fixed", values=tuple(distinct) or (None,), inferred=True)
        if len(distinct) <= 12:
            return cls(name, "categorical", values=tuple(distinct), inferred=True)
        low, high = float(finite.min()), float(finite.max())
        kind: ParamKind = "log" if low > 0 and high / low > 10 else "linear"
        return cls(name, kind, low=low, high=high, inferred=True)


@dataclass
class Experiment:
    """One search on one task, as read from its folder.

    Attributes
    ----------
    path : Path
        The experiment folder.
    meta : dict
        The content of ``experiment.json``.
    space : dict of str to ParamSpec
        The hyperparameters found in both the space and ``trials.csv``, in :data:`PARAM_ORDER`.
    trials : pandas.DataFrame
        The usable rows of ``trials.csv`` (one per trial and epoch, ``epoch`` an int), sorted
        by trial and epoch.
    best_config : dict or None
        The content of ``best_config.json``, or None if it is absent or unreadable.
    problems : list of Problem
        What was wrong with this experiment's files.
    unstarted : pandas.DataFrame
        One row per trial that recorded no epoch (e.g. errored while starting), with its
        hyperparameters, ``status`` and ``reason``; such trials are counted, never drawn.
    """

    path: Path
    meta: dict[str, Any]
    space: dict[str, ParamSpec]
    trials: pd.DataFrame
    best_config: dict[str, Any] | None = None
    problems: list[Problem] = field(default_factory=list)
    unstarted: pd.DataFrame = field(default_factory=pd.DataFrame)

    @property
    def task(self) -> str:
        """The task name, e.g. ``"P2I"``."""
        return str(self.meta.get("task") or self.path.name)

    @property
    def name(self) -> str:
        """The experiment's name (the folder above the task folder by default)."""
        return str(self.meta.get("name") or self.path.parent.name)

    @property
    def dataset(self) -> str:
        """The dataset name, or ``""`` if unknown."""
        return str(self.meta.get("dataset") or "")

    @property
    def search(self) -> str:
        """The search algorithm: ``"tpe"``, ``"grid"`` or ``"random"``."""
        return str(self.meta.get("search") or "")

    @property
    def status(self) -> str:
        """``"finished"`` or ``"running"``."""
        return str(self.meta.get("status") or "unknown")

    @property
    def max_epochs(self) -> int:
        """The epoch a trial must reach to count as having reached the end."""
        value = self.meta.get("max_epochs")
        if isinstance(value, (int, float)) and math.isfinite(value) and value > 0:
            return int(value)
        return int(self.trials["epoch"].max()) if len(self.trials) else 0

    @property
    def key(self) -> str:
        """An identifier unique among the experiments of one results folder."""
        return f"{self.task}/{self.name}"

    @property
    def searched_params(self) -> list[str]:
        """The names of the parameters that vary between trials, in display order."""
        return [name for name, spec in self.space.items() if spec.searched]


def _sorted_values(values: Sequence[Any]) -> list[Any]:
    """Sort numbers numerically, anything else by its text; drop duplicates."""
    unique = list(dict.fromkeys(values))
    try:
        return sorted(unique)
    except TypeError:
        return sorted(unique, key=str)


def find_experiment_dirs(root: Path) -> list[Path]:
    """Return every folder under ``root`` (itself included) that holds ``experiment.json``.

    The walk does not descend into an experiment folder (Ray's per-trial folders live there) nor
    into hidden folders. The result is sorted.
    """
    found: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root):
        if EXPERIMENT_FILE in filenames:
            found.append(Path(dirpath))
            dirnames[:] = []
        else:
            dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
    return sorted(found)


def _read_json(path: Path, problems: list[Problem], *, required: bool) -> dict[str, Any] | None:
    """Read a JSON object, recording a problem instead of raising."""
    if not path.is_file():
        if required:
            problems.append(Problem(path, "file is missing", "error"))
        return None
    try:
        content = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        problems.append(
            Problem(
                path,
                f"cannot be read as JSON ({exc}); the file is truncated or corrupt - "
                "re-run or resume the search to rewrite it",
                "error",
            )
        )
        return None
    if not isinstance(content, dict):
        problems.append(Problem(path, "must hold a JSON object", "error"))
        return None
    return content


def read_trials(path: Path, problems: list[Problem]) -> pd.DataFrame | None:
    """Read ``trials.csv``, dropping and reporting rows that cannot be used.

    Rows with the wrong number of fields (a corrupt line), or without ``trial_id`` or ``status``
    (a line cut short because the file was truncated or is still being written) are dropped with
    one :class:`Problem` naming the file and the trials concerned. A row without ``epoch`` and
    ``target_acc`` is kept: it stands for a trial that ended before its first epoch (tune/ writes
    one such row for it). Duplicated (trial, epoch) rows, as left by a resumed trial, keep the
    last one.

    Parameters
    ----------
    path : Path
        The ``trials.csv`` file.
    problems : list of Problem
        Problems found are appended here.

    Returns
    -------
    pandas.DataFrame or None
        The usable rows sorted by trial and epoch (``epoch`` is NaN on the row of a trial that
        recorded no epoch), or None when nothing is usable.
    """
    if not path.is_file():
        problems.append(
            Problem(path, "file is missing; the experiment has no results yet", "error")
        )
        return None
    bad_lines: list[list[str]] = []

    def _skip(line: list[str]) -> None:
        bad_lines.append(line)  # a line with too many fields: counted, then left out
        return None

    try:
        frame = pd.read_csv(
            path, dtype={"trial_id": str, "task": str, "reason": str, "status": str},
            engine="python", on_bad_lines=_skip, skip_blank_lines=True,
        )
    except pd.errors.EmptyDataError:
        problems.append(Problem(path, "file is empty; the search wrote no results", "error"))
        return None
    except (OSError, UnicodeDecodeError, pd.errors.ParserError, ValueError) as exc:
        problems.append(
            Problem(path, f"cannot be parsed as CSV ({exc}); the file is corrupt", "error")
        )
        return None
    missing = [c for c in REQUIRED_COLUMNS if c not in frame.columns]
    if missing:
        problems.append(
            Problem(
                path,
                f"lacks the column(s) {', '.join(missing)}; was it written by tune/search.py?",
                "error",
            )
        )
        return None
    frame = _clean_rows(frame, path, problems, n_bad=len(bad_lines))
    if frame.empty:
        problems.append(Problem(path, "holds no usable row", "error"))
        return None
    return frame


def _clean_rows(
    frame: pd.DataFrame, path: Path, problems: list[Problem], *, n_bad: int
) -> pd.DataFrame:
    """Coerce column types and drop incomplete, unknown-status and duplicated rows."""
    frame = frame.copy()
    for column in (*_NUMERIC_COLUMNS, *PARAM_ORDER):
        if column in frame.columns:
            frame[column] = pd.to_numeric(frame[column], errors="coerce")
    frame["status"] = frame["status"].str.strip()
    incomplete = frame[["trial_id", "status"]].isna().any(axis=1)
    incomplete |= frame["epoch"].isna() & frame["target_acc"].notna()
    dropped = int(incomplete.sum()) + n_bad
    if dropped:
        trial_ids = sorted(set(frame.loc[incomplete, "trial_id"].dropna()))
        which = f" (trial {', '.join(trial_ids[:5])}{', ...' if len(trial_ids) > 5 else ''})"
        problems.append(
            Problem(
                path,
                f"{dropped} malformed row(s) dropped{which if trial_ids else ''}: the file is "
                "truncated, corrupt or still being written - the other rows are used",
            )
        )
    frame = frame[~incomplete]
    unknown = sorted(set(frame["status"]) - set(STATUSES))
    if unknown:
        problems.append(
            Problem(
                path,
                f"unknown trial status(es) {unknown}; expected one of {list(STATUSES)} - "
                "those trials are left out",
            )
        )
        frame = frame[frame["status"].isin(STATUSES)]
    duplicated = frame.duplicated(["trial_id", "epoch"], keep="last") & frame["epoch"].notna()
    if duplicated.any():
        problems.append(
            Problem(
                path,
                f"{int(duplicated.sum())} repeated (trial_id, epoch) row(s) (a resumed trial?); "
                "the last of each is used",
            )
        )
        frame = frame[~duplicated]
    return frame.sort_values(["trial_id", "epoch"], kind="stable").reset_index(drop=True)


def _space_from_meta(
    meta: Mapping[str, Any], trials: pd.DataFrame, path: Path, problems: list[Problem]
) -> dict[str, ParamSpec]:
    """Build the specs of the hyperparameters present in ``trials.csv``, in display order."""
    raw = meta.get("space")
    raw = raw if isinstance(raw, Mapping) else {}
    names = [p for p in PARAM_ORDER if p in trials.columns or p in raw]
    names += [p for p in raw if p not in names and p in trials.columns]
    space: dict[str, ParamSpec] = {}
    for name in names:
        if name not in trials.columns:
            continue  # in the space but not recorded per trial: nothing to draw
        if name in raw:
            try:
                space[name] = ParamSpec.from_json(name, raw[name])
                continue
            except ValueError as exc:
                problems.append(Problem(path, f"{exc}; inferred from trials.csv instead"))
        space[name] = ParamSpec.infer(name, trials[name])
    return space


def load_experiment(folder: Path) -> tuple[Experiment | None, list[Problem]]:
    """Read one experiment folder.

    Parameters
    ----------
    folder : Path
        A folder holding ``experiment.json``.

    Returns
    -------
    experiment : Experiment or None
        None when ``experiment.json`` or ``trials.csv`` is unusable.
    problems : list of Problem
        What was wrong, each naming its file.
    """
    problems: list[Problem] = []
    meta_path = folder / EXPERIMENT_FILE
    meta = _read_json(meta_path, problems, required=True)
    if meta is None:
        return None, problems
    if meta.get("status") == "running":
        problems.append(
            Problem(
                meta_path,
                "the search is still running: its results are partial and trials still running "
                "are not in the final-epoch view; regenerate the dashboard when it finishes",
            )
        )
    trials = read_trials(folder / TRIALS_FILE, problems)
    if trials is None:
        return None, problems
    best_config = None
    if meta.get("status") != "running":
        best_config = _read_json(folder / BEST_CONFIG_FILE, problems, required=True)
    elif (folder / BEST_CONFIG_FILE).is_file():
        best_config = _read_json(folder / BEST_CONFIG_FILE, problems, required=False)
    space = _space_from_meta(meta, trials, meta_path, problems)
    no_epoch = trials["epoch"].isna()
    unstarted = trials[no_epoch & ~trials["trial_id"].isin(trials.loc[~no_epoch, "trial_id"])]
    trials = trials[~no_epoch].astype({"epoch": int}).reset_index(drop=True)
    experiment = Experiment(
        folder, dict(meta), space, trials, best_config, problems,
        unstarted.drop_duplicates("trial_id", keep="last").reset_index(drop=True),
    )
    if "task" not in meta:
        problems.append(
            Problem(meta_path, f"has no 'task'; using the folder name {experiment.task!r}")
        )
    return experiment, problems


def load_experiments(root: str | os.PathLike[str]) -> tuple[list[Experiment], list[Problem]]:
    """Read every experiment found under ``root``.

    Parameters
    ----------
    root : path-like
        A results folder (searched recursively for ``experiment.json``).

    Returns
    -------
    experiments : list of Experiment
        The readable experiments, sorted by task then name.
    problems : list of Problem
        Every defect found, each naming its file; unreadable experiments are skipped.

    Raises
    ------
    NoExperimentsError
        If ``root`` is not a folder, holds no ``experiment.json``, or none can be read.
    """
    root_path = Path(root)
    if not root_path.is_dir():
        raise NoExperimentsError(
            f"The results folder {str(root_path)!r} does not exist or is not a folder."
        )
    folders = find_experiment_dirs(root_path)
    if not folders:
        raise NoExperimentsError(
            f"No experiment found under {str(root_path)!r}: no {EXPERIMENT_FILE} in it or its "
            "sub-folders. Pass the storage folder of tune/search.py."
        )
    experiments: list[Experiment] = []
    problems: list[Problem] = []
    for folder in folders:
        experiment, found = load_experiment(folder)
        problems.extend(found)
        if experiment is not None:
            experiments.append(experiment)
    if not experiments:
        raise NoExperimentsError(
            f"None of the {len(folders)} experiment(s) under {str(root_path)!r} could be read: "
            + "; ".join(str(p) for p in problems if p.severity == "error")
        )
    experiments.sort(key=lambda e: (e.task, e.name, str(e.path)))
    return experiments, problems
