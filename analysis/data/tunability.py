"""Tunability: the accuracy a task loses when a hyperparameter, or the whole config, takes one
value shared by every task instead of the task's own best.

Everything is computed on a surrogate :math:`f_t` per task :math:`t` (the forest of
:mod:`analysis.data.surrogate`, fitted to the trials of the task's view, as fANOVA fits its own),
maximised over a candidate set :math:`C`: every config that any task of the group tried, plus
:data:`N_RANDOM` configs drawn uniformly in the forest's encoding (log-uniformly on log axes) from
the group's space, seed 0.

*Profile* of hyperparameter :math:`j` on task :math:`t`, at value :math:`v` of a grid of its
range (:data:`N_PROFILE` points, every choice of a categorical axis, and the paper's default):

.. math:: p_{tj}(v) = \\max_{\\theta \\in C} f_t(\\theta_{-j}, v),

the best accuracy reachable when :math:`j` is held at :math:`v` and the others are tuned.

*Shared value* of :math:`j`: :math:`v^*_j = \\arg\\max_v \\frac{1}{T} \\sum_t p_{tj}(v)`, the value
that loses least on average over the group's :math:`T` tasks.

*Tunability* of :math:`j` on :math:`t` against a reference value :math:`v` (the shared value, or
the paper's default of :class:`ssot.config.SSOTConfig`), in accuracy points:

.. math:: d_{tj}(v) = \\max_u p_{tj}(u) - p_{tj}(v) \\;\\ge 0,

what task :math:`t` loses when :math:`j` is not tuned for it but held at :math:`v`. It is 0
when :math:`j` does not matter on :math:`t` (its profile is flat), or when :math:`v` is
:math:`t`'s own best value; positive when the tasks' best values differ.

*Whole config*: the shared config :math:`\\theta^* = \\arg\\max_{\\theta \\in C} \\frac1T \\sum_t
f_t(\\theta)` (Probst et al.'s optimal default), the task's own best :math:`m_t = \\max_{\\theta \\in
C} f_t(\\theta)` (with the default config added to :math:`C`), and :math:`d_t(\\theta) = m_t -
f_t(\\theta)` for :math:`\\theta^*` and for the paper's default config: Probst et al.'s tunability
of the algorithm on a dataset. For one hyperparameter, Probst et al. measure the gain of tuning
it alone from the defaults; :math:`d_{tj}` asks the complementary question of an atlas: what is
lost if :math:`j` is not tuned per task while the others still are.

Uncertainty: a bootstrap over trials. :data:`N_BOOTSTRAP` times, each task's trials are drawn
with replacement, every forest is refitted and every number recomputed, the shared values
included; the interval is the 2.5 and 97.5 % percentiles. Point estimates use every trial. A
task with fewer than :data:`analysis.data.importance.MIN_TRIALS` trials in its view is left out.

References
----------
P. Probst, A.-L. Boulesteix, B. Bischl. "Tunability: Importance of Hyperparameters of Machine
Learning Algorithms". JMLR 20(53), 2019.
J. N. van Rijn, F. Hutter. "Hyperparameter Importance Across Datasets". KDD 2018.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from analysis.data.atlas import AtlasTask
from analysis.data.frames import format_value
from analysis.data.importance import MIN_TRIALS
from analysis.data.surrogate import Axis, axes_of, features, fit_forest
from ssot.config import defaults

__all__ = ["ALL", "N_RANDOM", "N_PROFILE", "N_BOOTSTRAP", "REFERENCES", "COLUMNS", "Profile", "TunabilityInfo", "paper_default",
           "tunability_info"]

#: The ``param`` of the rows about the whole config.
ALL = "(whole config)"
#: Random configs added to the candidate set.
N_RANDOM = 256
#: Grid points of a continuous hyperparameter's profile.
N_PROFILE = 25
#: Bootstrap replicates by default.
N_BOOTSTRAP = 100
#: The reference values a task's own best is compared with.
REFERENCES: tuple[str, ...] = ("shared", "default")
#: Columns of :attr:`TunabilityInfo.table`.
COLUMNS: tuple[str, ...] = ("task", "param", "reference", "value", "loss", "low", "high", "own_best", "n_trials", "n_bootstrap")


def paper_default(params: Sequence[str]) -> dict[str, Any]:
    """The paper's default value of each of ``params`` that is a config field (:func:`ssot.config.defaults`)."""
    return defaults(list(params))


@dataclass(frozen=True)
class Profile:
    """The profile :math:`p_{tj}` of one hyperparameter on one task (module docstring).

    Attributes
    ----------
    task, param : str
    values : list
        The grid (original units).
    estimate : numpy.ndarray
        :math:`p_{tj}` at each value (accuracy in [0, 1]).
    low, high : numpy.ndarray
        Its bootstrap interval at each value.
    shared, default : int
        The grid indices of the shared value and of the paper's default.
    kind : str
        The axis kind (``"log"``, ``"linear"``, ``"categorical"``).
    """

    task: str
    param: str
    values: list[Any]
    estimate: np.ndarray
    low: np.ndarray
    high: np.ndarray
    shared: int
    default: int
    kind: str


@dataclass
class TunabilityInfo:
    """The tunability of every hyperparameter and of the whole config on every task of a group.

    Attributes
    ----------
    group : str
    tasks : list of str
        The tasks it was computed on.
    n_trials : dict of str to int
        Trials of each task's view (the surrogate's data).
    params : list of str
    shared, default : dict
        Per hyperparameter the shared value and the paper's default; :data:`ALL` maps to the
        whole shared config and the whole default config.
    table : pandas.DataFrame
        One row per (task, param, reference): ``task``, ``param`` (a hyperparameter or
        :data:`ALL`), ``reference`` (:data:`REFERENCES`), ``value`` (the reference value as
        text), ``loss``, ``low``, ``high`` (points), ``own_best`` (%), ``n_trials``, ``n_bootstrap``.
    profiles : list of Profile
    n_bootstrap : int
    notes : list of str
        Tasks left out and why.
    """

    group: str
    tasks: list[str]
    n_trials: dict[str, int]
    params: list[str]
    shared: dict[str, Any] = field(default_factory=dict)
    default: dict[str, Any] = field(default_factory=dict)
    table: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=list(COLUMNS)))
    profiles: list[Profile] = field(default_factory=list)
    n_bootstrap: int = 0
    notes: list[str] = field(default_factory=list)


def _default_code(axis: Axis, value: Any) -> float:
    """The encoding of the default value (the nearest choice when it is not one)."""
    code = float(axis.encode([value])[0])
    if axis.kind == "categorical" and code < 0:
        choices = list(axis.dist.choices)  # type: ignore[attr-defined]
        numeric = [c for c in choices if isinstance(c, (int, float))]
        if numeric and isinstance(value, (int, float)):
            code = float(choices.index(min(numeric, key=lambda c: abs(c - value))))
        else:
            code = 0.0
    return code


@dataclass
class _Setup:
    """What stays fixed across bootstrap replicates: axes, candidates, grids."""

    axes: dict[str, Axis]
    candidates: np.ndarray  # |C| x d, encoded; the default config is the last row
    grids: list[np.ndarray]  # encoded grid of each axis
    default_index: list[int]  # index of the default in each grid


def _setup(tasks: Sequence[AtlasTask], reference: Mapping[str, Any], seed: int) -> _Setup:
    space = tasks[0].space
    pooled = pd.concat([t.results for t in tasks], ignore_index=True)
    axes = {p: a for p, a in axes_of(pooled, space).items() if p in reference}
    observed = features(pooled, axes)
    rng = np.random.default_rng(seed)
    drawn = np.column_stack([axis.sample(rng, N_RANDOM) for axis in axes.values()])
    default_row = np.array([[_default_code(axes[p], reference[p]) for p in axes]])
    candidates = np.unique(np.vstack([observed, drawn]), axis=0)
    grids, default_index = [], []
    for column, axis in enumerate(axes.values()):
        _, grid = axis.grid(N_PROFILE)
        grid = np.unique(np.append(grid, default_row[0, column]))
        grids.append(grid)
        default_index.append(int(np.flatnonzero(grid == default_row[0, column])[0]))
    return _Setup(axes, np.vstack([candidates, default_row]), grids, default_index)


@dataclass
class _Estimate:
    """The numbers of one fit (all trials, or one bootstrap replicate)."""

    profiles: dict[tuple[str, int], np.ndarray]  # (task, axis) -> p_tj over the grid
    shared_index: list[int]  # per axis
    whole: dict[str, np.ndarray]  # task -> f_t over the candidates (default last)
    shared_config: int  # candidate index


def _estimate(data: Mapping[str, tuple[np.ndarray, np.ndarray]], setup: _Setup, seed: int) -> _Estimate:
    candidates = setup.candidates
    profiles: dict[tuple[str, int], np.ndarray] = {}
    whole: dict[str, np.ndarray] = {}
    for task, (x, y) in data.items():
        forest = fit_forest(x, y, seed)
        blocks = [candidates]
        for column, grid in enumerate(setup.grids):
            stacked = np.repeat(candidates[None, :, :], len(grid), axis=0)
            stacked[:, :, column] = grid[:, None]
            blocks.append(stacked.reshape(-1, candidates.shape[1]))
        predicted = forest.predict(np.vstack(blocks))
        whole[task] = predicted[:len(candidates)]
        start = len(candidates)
        for column, grid in enumerate(setup.grids):
            block = predicted[start:start + len(grid) * len(candidates)].reshape(len(grid), len(candidates))
            profiles[(task, column)] = block.max(axis=1)
            start += len(grid) * len(candidates)
    shared_index = [int(np.argmax(np.mean([profiles[(t, c)] for t in data], axis=0))) for c in range(len(setup.grids))]
    shared_config = int(np.argmax(np.mean([whole[t] for t in data], axis=0)))
    return _Estimate(profiles, shared_index, whole, shared_config)


def _losses(estimate: _Estimate, setup: _Setup, tasks: Sequence[str]) -> dict[tuple[str, int, str], float]:
    """(task, axis or -1 for the whole config, reference) -> loss (fraction)."""
    out: dict[tuple[str, int, str], float] = {}
    for task in tasks:
        for column in range(len(setup.grids)):
            profile = estimate.profiles[(task, column)]
            out[(task, column, "shared")] = float(profile.max() - profile[estimate.shared_index[column]])
            out[(task, column, "default")] = float(profile.max() - profile[setup.default_index[column]])
        values = estimate.whole[task]
        out[(task, -1, "shared")] = float(values.max() - values[estimate.shared_config])
        out[(task, -1, "default")] = float(values.max() - values[-1])
    return out


def _decode_config(setup: _Setup, row: np.ndarray) -> dict[str, Any]:
    return {p: _plain(axis.decode(np.array([row[i]]))[0]) for i, (p, axis) in enumerate(setup.axes.items())}


def _plain(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value


def tunability_info(tasks: Sequence[AtlasTask], *, n_bootstrap: int = N_BOOTSTRAP, seed: int = 0,
                    progress: Callable[[int], None] | None = None) -> TunabilityInfo:
    """The tunability of the group of ``tasks`` (module docstring).

    Parameters
    ----------
    tasks : sequence of AtlasTask
        The tasks of one group (one space), each with the trials of its view.
    n_bootstrap : int
        Bootstrap replicates (0: no interval).
    seed : int
        Seed of the random candidates, the forests and the bootstrap draws.
    progress : callable, optional
        Called with the number of replicates done after each one.

    Returns
    -------
    TunabilityInfo
        Empty (with ``notes``) when fewer than two tasks have :data:`MIN_TRIALS` trials or no
        hyperparameter varies.
    """
    group = tasks[0].group if tasks else ""
    fitted = [t for t in tasks if t.results["acc"].notna().sum() >= MIN_TRIALS]
    notes = [f"{t.task}: left out, {t.n_trials} trial(s) in its view (a surrogate is fitted on at least {MIN_TRIALS})"
             for t in tasks if t not in fitted]
    n_trials = {t.task: t.n_trials for t in tasks}
    params = [p for p, s in (tasks[0].space.items() if tasks else []) if s.searched]
    info = TunabilityInfo(group, [t.task for t in fitted], n_trials, params, notes=notes, n_bootstrap=n_bootstrap)
    if len(fitted) < 2:
        info.notes.append(f"tunability needs at least 2 tasks with {MIN_TRIALS} trials; this group has {len(fitted)}")
        return info
    setup = _setup(fitted, paper_default(params), seed)
    if not setup.axes:
        info.notes.append("no hyperparameter varies in this group")
        return info
    info.params = list(setup.axes)
    data = {}
    for t in fitted:
        results = t.results.dropna(subset=["acc"])
        data[t.task] = (features(results, setup.axes), results["acc"].to_numpy(dtype=float))
    point = _estimate(data, setup, seed)
    losses = _losses(point, setup, list(data))
    rng = np.random.default_rng(seed + 1)
    replicates: list[dict[tuple[str, int, str], float]] = []
    profile_draws: dict[tuple[str, int], list[np.ndarray]] = {}
    for number in range(n_bootstrap):
        drawn = {}
        for task, (x, y) in data.items():
            picked = rng.integers(0, len(y), len(y))
            drawn[task] = (x[picked], y[picked])
        estimate = _estimate(drawn, setup, seed)
        replicates.append(_losses(estimate, setup, list(data)))
        for key, profile in estimate.profiles.items():
            profile_draws.setdefault(key, []).append(profile)
        if progress is not None:
            progress(number + 1)
    shared_config = _decode_config(setup, setup.candidates[point.shared_config])
    default_config = _decode_config(setup, setup.candidates[-1])
    info.shared = {p: axis.decode(np.array([setup.grids[c][point.shared_index[c]]]))[0]
                   for c, (p, axis) in enumerate(setup.axes.items())}
    info.shared = {p: _plain(v) for p, v in info.shared.items()} | {ALL: shared_config}
    info.default = dict(default_config) | {ALL: default_config}
    rows = []
    for task in data:
        own_whole = float(point.whole[task].max())
        for column in [*range(len(setup.grids)), -1]:
            param = ALL if column < 0 else list(setup.axes)[column]
            for reference in REFERENCES:
                loss_key = (task, column, reference)
                draws = np.array([r[loss_key] for r in replicates])
                low, high = (np.percentile(draws, [2.5, 97.5]) if len(draws) else (np.nan, np.nan))
                value = info.shared[param] if reference == "shared" else info.default[param]
                own = own_whole if column < 0 else float(point.profiles[(task, column)].max())
                rows.append({"task": task, "param": param, "reference": reference,
                             "value": _describe(value), "loss": 100 * losses[loss_key], "low": 100 * float(low),
                             "high": 100 * float(high), "own_best": 100 * own, "n_trials": n_trials[task],
                             "n_bootstrap": n_bootstrap})
        for column, (param, axis) in enumerate(setup.axes.items()):
            draws = np.array(profile_draws.get((task, column), []))
            curve = point.profiles[(task, column)]
            low, high = (np.percentile(draws, [2.5, 97.5], axis=0) if len(draws) else (curve * np.nan, curve * np.nan))
            info.profiles.append(Profile(task, param, [_plain(v) for v in axis.decode(setup.grids[column])], curve,
                                         low, high, point.shared_index[column], setup.default_index[column], axis.kind))
    info.table = pd.DataFrame(rows, columns=list(COLUMNS))
    return info


def _describe(value: Any) -> str:
    if isinstance(value, Mapping):
        return ", ".join(f"{k}={format_value(v)}" for k, v in value.items())
    return format_value(value)
