"""The experiments that ``tune/`` writes, as the analysis sees them.

The files, their reader and its problems are owned by :mod:`ssot.results.experiment` (read from a
folder or object storage by :func:`ssot.results.discovery.read_experiments`); this module adds how
each hyperparameter is drawn (:class:`ParamSpec`) and splits the trials that recorded no epoch
from the rows that are drawn (:class:`Experiment`).

Nothing here writes to those folders. Every defect of a file (missing, truncated, corrupt, still
being written) is a :class:`~ssot.results.experiment.Problem` that names the file and what to do;
the readable rest is still returned, so one bad experiment never hides the others.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pandas as pd

from ssot.errors import ResultsError, SSOTError
from ssot.results import discovery, storage
from ssot.results import experiment as results_experiment
from ssot.results.experiment import EXPERIMENT_FILE, SPACE_KINDS, Problem
from ssot.results.trials import PARAMS

__all__ = [
    "AnalysisError",
    "NoExperimentsError",
    "Problem",
    "ParamSpec",
    "Experiment",
    "load_experiment",
    "load_experiments",
]

ParamKind = Literal["log", "linear", "categorical", "grid", "fixed"]

#: How each spec kind of :data:`ssot.results.experiment.SPACE_KINDS` is drawn.
SPACE_TYPES: dict[str, ParamKind] = {"loguniform": "log", "choice": "categorical", "grid": "grid", "fixed": "fixed"}
assert set(SPACE_TYPES) == set(SPACE_KINDS)


class AnalysisError(SSOTError):
    """Base class of the errors that the analysis reports to the user as one line."""


class NoExperimentsError(AnalysisError):
    """No readable experiment was found under the given folder."""


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
        kind = SPACE_TYPES.get(type_name)
        if kind is None:
            raise ValueError(
                f"space entry {name!r} has unknown type {entry.get('type')!r}; "
                f"expected one of {sorted(SPACE_TYPES)}"
            )
        if kind == "fixed":
            if "value" not in entry:
                raise ValueError(f"space entry {name!r} of type 'fixed' has no 'value'")
            return cls(name, kind, values=(entry["value"],))
        if kind in ("categorical", "grid"):
            values = entry.get("values")
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
class Experiment(results_experiment.Experiment):
    """One search on one task, as the analysis draws it: :class:`ssot.results.experiment.Experiment`
    (task, name, metric, max_epochs, ...) with its hyperparameters' specs.

    Attributes
    ----------
    trials : pandas.DataFrame
        The usable rows of ``trials.csv`` that recorded an epoch (``epoch`` an int), sorted by
        trial and epoch.
    space : dict of str to ParamSpec
        The hyperparameters found in both the space and ``trials.csv``, in display order
        (:data:`ssot.results.trials.PARAMS` first).
    unstarted : pandas.DataFrame
        One row per trial that recorded no epoch (e.g. errored while starting), with its
        hyperparameters, ``status`` and ``reason``; such trials are counted, never drawn.
    """

    meta: dict[str, Any]  # never None here (read_analysis_experiment returns None instead)
    trials: pd.DataFrame
    space: dict[str, ParamSpec] = field(default_factory=dict)
    unstarted: pd.DataFrame = field(default_factory=pd.DataFrame)

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


def _space_from_meta(
    meta: Mapping[str, Any], trials: pd.DataFrame, path: Path | str, problems: list[Problem]
) -> dict[str, ParamSpec]:
    """Build the specs of the hyperparameters present in ``trials.csv``, in display order."""
    raw = meta.get("space")
    raw = raw if isinstance(raw, Mapping) else {}
    names = [p for p in PARAMS if p in trials.columns or p in raw]
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


def from_results(files: results_experiment.Experiment) -> tuple[Experiment | None, list[Problem]]:
    """The analysis's view of an experiment read by :mod:`ssot.results` (None when its
    ``experiment.json`` or ``trials.csv`` is unusable), and its problems."""
    problems, meta, trials = list(files.problems), files.meta, files.trials
    if meta is None or trials is None:
        return None, problems
    meta_path = Path(str(files.path)) / EXPERIMENT_FILE if not storage.is_uri(files.path) else storage.join(str(files.path), EXPERIMENT_FILE)
    space = _space_from_meta(meta, trials, meta_path, problems)
    no_epoch = trials["epoch"].isna()
    unstarted = trials[no_epoch & ~trials["trial_id"].isin(trials.loc[~no_epoch, "trial_id"])]
    experiment = Experiment(
        files.path, dict(meta), trials[~no_epoch].astype({"epoch": int}).reset_index(drop=True), files.best_config,
        problems, space=space, unstarted=unstarted.drop_duplicates("trial_id", keep="last").reset_index(drop=True),
    )
    if "task" not in meta:
        problems.append(Problem(meta_path, f"has no 'task'; using the folder name {experiment.task!r}"))
    return experiment, problems


def load_experiment(folder: Path) -> tuple[Experiment | None, list[Problem]]:
    """Read one local experiment folder (:func:`ssot.results.experiment.read_experiment`).

    Returns
    -------
    experiment : Experiment or None
        None when ``experiment.json`` or ``trials.csv`` is unusable.
    problems : list of Problem
        What was wrong, each naming its file.
    """
    return from_results(results_experiment.read_experiment(folder))


def load_experiments(root: str | os.PathLike[str]) -> tuple[list[Experiment], list[Problem]]:
    """Read every experiment found under ``root``.

    Parameters
    ----------
    root : path-like
        A results folder (searched recursively for ``experiment.json``), or a URI such as
        ``s3://bucket/prefix`` (:func:`ssot.results.discovery.read_experiments`).

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
    try:
        found = discovery.read_experiments(root)
    except (ResultsError, storage.StorageError) as exc:
        raise NoExperimentsError(str(exc)) from None
    if not found:
        raise NoExperimentsError(
            f"No experiment found under {str(root)!r}: no {EXPERIMENT_FILE} in it or its "
            "sub-folders. Pass the storage folder of tune/search.py."
        )
    experiments: list[Experiment] = []
    problems: list[Problem] = []
    for files in found:
        experiment, seen = from_results(files)
        problems.extend(seen)
        if experiment is not None:
            experiments.append(experiment)
    if not experiments:
        raise NoExperimentsError(
            f"None of the {len(found)} experiment(s) under {str(root)!r} could be read: "
            + "; ".join(str(p) for p in problems if p.severity == "error")
        )
    experiments.sort(key=lambda e: (e.task, e.name, str(e.path)))
    return experiments, problems
