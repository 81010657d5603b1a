"""Hyperparameter importance of a finished search, computed with Optuna's evaluators.

The trials are replayed into an in-memory Optuna study (``optuna.trial.create_trial``), whatever
searcher produced them (TPE, random or grid), and ``optuna.importance.get_param_importances`` is
asked which hyperparameters explain the accuracy. Two evaluators are shown side by side
(:func:`importance_infos`): fANOVA (a seeded random forest, Hutter et al. 2014), the default of
:func:`importance_info`, and PED-ANOVA (Parzen estimators of the top trials against all, Watanabe
et al. 2023). Neither is fitted on fewer than :data:`MIN_TRIALS` trials.

Across tasks (:func:`importance_frame`, :func:`importance_spread`), the importances of one
hyperparameter on each task are read as a distribution over tasks, as van Rijn and Hutter (2018)
read fANOVA's over datasets: a hyperparameter whose importance is high on every task matters
everywhere; one with a wide spread matters on some tasks only.

Uncertainty: :func:`bootstrap_importances` refits an evaluator on resamples of the trials (drawn
with replacement, seeded, smoothed) and :func:`importance_info` turns them into a percentile
interval per hyperparameter (:data:`N_BOOT` resamples, :data:`LEVEL`); with 20 trials the
intervals are wide, and they narrow as trials are added. :func:`importance_disagreement` says when the two evaluators
disagree (their top hyperparameter differs, or their intervals for one hyperparameter do not
overlap) and what that means.

References
----------
F. Hutter, H. Hoos, K. Leyton-Brown. "An Efficient Approach for Assessing Hyperparameter
Importance". ICML 2014.
S. Watanabe, A. Bansal, F. Hutter. "PED-ANOVA: Efficiently Quantifying Hyperparameter Importance
in Arbitrary Subspaces". IJCAI 2023.
J. N. van Rijn, F. Hutter. "Hyperparameter Importance Across Datasets". KDD 2018.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import optuna
import pandas as pd
from optuna.distributions import BaseDistribution, FloatDistribution
from optuna.importance import (
    BaseImportanceEvaluator,
    FanovaImportanceEvaluator,
    PedAnovaImportanceEvaluator,
)

from analysis.data.experiments import ParamSpec

__all__ = [
    "MIN_TRIALS",
    "N_BOOT",
    "LEVEL",
    "BOOT_TREES",
    "SMOOTH",
    "ImportanceInfo",
    "importance_info",
    "importance_infos",
    "bootstrap_importances",
    "importance_disagreement",
    "ped_anova_evaluator",
    "importance_frame",
    "importance_spread",
]

#: Fewest trials an importance model (or a marginal-effect model) is fitted on: below it a random
#: forest or a Parzen estimator of the top trials says more about the noise than about the
#: hyperparameters, so the figure says so instead.
MIN_TRIALS = 10

#: Trials that PED-ANOVA's top quantile should hold (Optuna's advice: at least 5).
PED_ANOVA_TOP = 5

#: Bootstrap resamples behind the dashboard's importance intervals, and the intervals' level: 50
#: keep a 20-trial search's page under half a minute (200 took 93 s against 27 s, docs/dashboards.md);
#: ``--bootstrap 200`` gives finer interval ends.
N_BOOT = 50
LEVEL = 0.95

#: The smoothed bootstrap's jitter of a repeated trial, as a fraction of each continuous axis's width
#: (:func:`bootstrap_importances`).
SMOOTH = 0.02

#: Trees of each resample's fANOVA forest (the point estimate's forest has 64). fANOVA's cost is
#: per tree; 16 trees make 200 resamples cost as much as 50 full fits.
BOOT_TREES = 16


@dataclass(frozen=True)
class ImportanceInfo:
    """Importance of each searched hyperparameter for the accuracy.

    Attributes
    ----------
    importances : dict of str to float
        Normalised importances (they sum to 1), most important first; empty when they could not
        be computed.
    n_trials : int
        Trials used.
    evaluator : str
        The evaluator's class name.
    note : str
        Why ``importances`` is empty, or ``""``.
    label : str
        How figures name the evaluator and its settings (e.g. ``"PED-ANOVA, top 25 %"``).
    intervals : dict of str to (float, float)
        The bootstrap percentile interval of each importance (same scale), empty when none was
        computed.
    n_boot : int
        Resamples the intervals come from (those on which the evaluator could be fitted).
    level : float
        The intervals' level (0.95: from the 2.5th to the 97.5th percentile).
    """

    importances: dict[str, float]
    n_trials: int
    evaluator: str
    note: str = ""
    label: str = ""
    intervals: dict[str, tuple[float, float]] = field(default_factory=dict)
    n_boot: int = 0
    level: float = LEVEL

    @property
    def top(self) -> str | None:
        """The most important hyperparameter, None when nothing was fitted."""
        return next(iter(self.importances), None)


def _param_value(spec: ParamSpec, value: Any) -> Any:
    """The value as the distribution expects it (the choice object itself for categoricals)."""
    if spec.kind == "categorical" or (spec.kind == "grid" and not _numeric(spec.values)):
        for choice in spec.values:
            if choice == value or str(choice) == str(value):
                return choice
        return value
    return float(value)


def _numeric(values: tuple[Any, ...]) -> bool:
    return all(isinstance(v, (int, float, np.number)) for v in values)


@contextlib.contextmanager
def _quiet_optuna() -> Iterator[None]:
    """Silence Optuna's info logs (study creation) and restore the caller's verbosity."""
    previous = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    try:
        with warnings.catch_warnings():  # PED-ANOVA warns about small regimes: the note says it
            warnings.simplefilter("ignore")
            yield
    finally:
        optuna.logging.set_verbosity(previous)


def _distributions(results: pd.DataFrame, space: Mapping[str, ParamSpec]) -> dict[str, BaseDistribution]:
    return {
        param: dist
        for param, spec in space.items()
        if param in results and (dist := spec.distribution(results[param])) is not None
    }


def _fit(
    results: pd.DataFrame, space: Mapping[str, ParamSpec], distributions: Mapping[str, BaseDistribution],
    evaluator: BaseImportanceEvaluator,
) -> dict[str, float] | str:
    """The normalised importances of ``evaluator`` on ``results`` (most important first), or why
    there are none."""
    trials = [
        optuna.trial.create_trial(
            params={p: _param_value(space[p], row[p]) for p in distributions},
            distributions=dict(distributions),
            value=float(row["acc"]),
        )
        for row in results.to_dict("records")
    ]
    with _quiet_optuna():
        study = optuna.create_study(direction="maximize")
        study.add_trials(trials)
        try:
            raw = optuna.importance.get_param_importances(study, evaluator=evaluator, normalize=False)
        except (ValueError, RuntimeError) as exc:
            return f"the evaluator failed: {exc}"
    total = sum(float(value) for value in raw.values())
    if not total > 0:  # Optuna would share 1 equally: say that nothing was found instead
        return "the evaluator found no effect at all"
    return {param: float(value) / total for param, value in raw.items()}


def _smoothed(sample: pd.DataFrame, repeated: np.ndarray, distributions: Mapping[str, BaseDistribution],
              smooth: float, rng: np.random.Generator) -> pd.DataFrame:
    """``sample`` with the repeated draws' continuous hyperparameters moved by a Gaussian of
    ``smooth`` times their axis's width (in log10 on log axes), kept inside the axis."""
    if not smooth or not repeated.any():
        return sample
    sample = sample.copy()
    for param, dist in distributions.items():
        if not isinstance(dist, FloatDistribution):
            continue
        low, high = (np.log10(dist.low), np.log10(dist.high)) if dist.log else (dist.low, dist.high)
        values = pd.to_numeric(sample[param], errors="coerce").to_numpy(dtype=float)
        encoded = np.log10(values) if dist.log else values.copy()
        encoded[repeated] = np.clip(encoded[repeated] + rng.normal(0.0, smooth * (high - low), int(repeated.sum())), low, high)
        sample[param] = 10.0**encoded if dist.log else encoded
    return sample


def bootstrap_importances(
    results: pd.DataFrame,
    space: Mapping[str, ParamSpec],
    evaluator: BaseImportanceEvaluator | None = None,
    *,
    n_boot: int = N_BOOT,
    seed: int = 0,
    smooth: float = SMOOTH,
) -> pd.DataFrame:
    """The importances of ``evaluator`` refitted on bootstrap resamples of the trials.

    Each resample draws ``len(results)`` trials with replacement (``numpy.random.default_rng(seed)``,
    so two evaluators given one seed see the same resamples) and refits the evaluator; the
    hyperparameters' distributions are those of all the trials. The bootstrap is smoothed
    (Silverman and Young 1987): a trial drawn more than once has its continuous hyperparameters
    moved, in its repeats, by a Gaussian of ``smooth`` times the axis's width (in log10 on log
    axes), because exact copies bias both evaluators (PED-ANOVA's density estimates of the top
    trials collapse onto them, fANOVA's trees split on fewer distinct points) towards the
    hyperparameters that do not matter.

    Parameters
    ----------
    results : pandas.DataFrame
        One row per trial with ``acc`` and the hyperparameters (a view's trials).
    space : Mapping of str to ParamSpec
    evaluator : optuna.importance.BaseImportanceEvaluator, optional
        Default fANOVA with :data:`BOOT_TREES` trees, seed 0.
    n_boot : int
        Resamples.
    seed : int
    smooth : float
        The repeats' jitter, as a fraction of each continuous axis's width; 0 for the plain bootstrap.

    Returns
    -------
    pandas.DataFrame
        One row per resample on which the evaluator could be fitted, one column per
        hyperparameter: its normalised importance (each row sums to 1). Empty when the trials
        have no accuracy or no hyperparameter varies.

    References
    ----------
    B. W. Silverman, G. A. Young. "The bootstrap: to smooth or not to smooth?". Biometrika 74(3), 1987.
    """
    if n_boot < 0:
        raise ValueError(f"The 'n_boot' parameter must be an int >= 0. Got {n_boot!r} instead.")
    if smooth < 0:
        raise ValueError(f"The 'smooth' parameter must be a float >= 0. Got {smooth!r} instead.")
    evaluator = evaluator or FanovaImportanceEvaluator(n_trees=BOOT_TREES, seed=0)
    results = results.dropna(subset=["acc"]).reset_index(drop=True)
    distributions = _distributions(results, space)
    if not len(results) or not distributions:
        return pd.DataFrame(columns=list(distributions), dtype=float)
    rng = np.random.default_rng(seed)
    draws = []
    for _ in range(n_boot):
        index = rng.integers(0, len(results), len(results))
        repeated = pd.Series(index).duplicated().to_numpy()
        sample = _smoothed(results.iloc[index].reset_index(drop=True), repeated, distributions, smooth, rng)
        fitted = _fit(sample, space, distributions, evaluator)
        if isinstance(fitted, dict):
            draws.append(fitted)
    return pd.DataFrame(draws, columns=list(distributions), dtype=float)


def importance_info(
    results: pd.DataFrame,
    space: Mapping[str, ParamSpec],
    evaluator: BaseImportanceEvaluator | None = None,
    label: str = "",
    *,
    n_boot: int = 0,
    seed: int = 0,
    level: float = LEVEL,
    boot_evaluator: BaseImportanceEvaluator | None = None,
) -> ImportanceInfo:
    """Compute the importance of each searched hyperparameter for ``results["acc"]``.

    Parameters
    ----------
    results : pandas.DataFrame
        The output of ``final_results`` (one row per trial with ``acc``).
    space : Mapping of str to ParamSpec
        The experiment's space.
    evaluator : optuna.importance.BaseImportanceEvaluator, optional
        Defaults to ``FanovaImportanceEvaluator(seed=0)``.
    label : str, optional
        How figures name the evaluator; default its class name.
    n_boot : int
        Bootstrap resamples for the intervals (:func:`bootstrap_importances`); 0 for none.
    seed : int
        The resamples' seed.
    level : float
        The intervals' level, in (0, 1).
    boot_evaluator : optuna.importance.BaseImportanceEvaluator, optional
        The evaluator refitted on each resample; default ``evaluator``, except for the default
        fANOVA, whose resamples use :data:`BOOT_TREES` trees.

    Returns
    -------
    ImportanceInfo
        With a ``note`` and no importances when fewer than :data:`MIN_TRIALS` trials qualify,
        when no parameter varies, or when the evaluator fails. Intervals are given when at least
        half of the resamples could be fitted.
    """
    if not 0 < level < 1:
        raise ValueError(f"The 'level' parameter must be a float in (0, 1). Got {level!r} instead.")
    default = evaluator is None
    evaluator = evaluator or FanovaImportanceEvaluator(seed=0)
    name = type(evaluator).__name__
    label = label or name
    results = results.dropna(subset=["acc"])
    if len(results) < MIN_TRIALS:
        note = f"fitted only on at least {MIN_TRIALS} trials; this view has {len(results)}"
        return ImportanceInfo({}, len(results), name, note, label)
    distributions = _distributions(results, space)
    if not distributions:
        return ImportanceInfo({}, len(results), name, "no hyperparameter varies in this search", label)
    fitted = _fit(results, space, distributions, evaluator)
    if isinstance(fitted, str):
        return ImportanceInfo({}, len(results), name, fitted, label)
    if n_boot <= 0:
        return ImportanceInfo(fitted, len(results), name, "", label)
    resampler = boot_evaluator or (FanovaImportanceEvaluator(n_trees=BOOT_TREES, seed=0) if default else evaluator)
    draws = bootstrap_importances(results, space, resampler, n_boot=n_boot, seed=seed)
    if 2 * len(draws) < n_boot:
        note = f"no interval: the evaluator could be refitted on {len(draws)} of {n_boot} resamples"
        return ImportanceInfo(fitted, len(results), name, note, label)
    tail = 100 * (1 - level) / 2
    intervals = {p: (float(np.percentile(draws[p], tail)), float(np.percentile(draws[p], 100 - tail)))
                 for p in fitted}
    return ImportanceInfo(fitted, len(results), name, "", label, intervals, len(draws), level)


def ped_anova_evaluator(n_trials: int) -> tuple[PedAnovaImportanceEvaluator, float]:
    """PED-ANOVA whose top quantile holds at least :data:`PED_ANOVA_TOP` of ``n_trials`` trials.

    The quantile is ``gamma' = min(0.5, max(0.1, PED_ANOVA_TOP / n_trials))`` (Optuna's default
    0.1 once there are 50 trials), compared with all trials (``region_quantile = 1``).
    """
    quantile = min(0.5, max(0.1, PED_ANOVA_TOP / max(n_trials, 1)))
    return PedAnovaImportanceEvaluator(target_quantile=quantile), quantile


def importance_infos(
    results: pd.DataFrame,
    space: Mapping[str, ParamSpec],
    evaluator: BaseImportanceEvaluator | None = None,
    *,
    n_boot: int = N_BOOT,
    seed: int = 0,
) -> tuple[ImportanceInfo, ImportanceInfo]:
    """The importances of fANOVA (or ``evaluator``) and of PED-ANOVA, on the same trials, each
    with its bootstrap intervals over the same ``n_boot`` resamples (0: none).

    Returns
    -------
    (ImportanceInfo, ImportanceInfo)
        fANOVA's (random forest of 64 trees, seed 0) and PED-ANOVA's (:func:`ped_anova_evaluator`),
        labelled for figures.
    """
    first = importance_info(results, space, evaluator, "fANOVA (random forest, seed 0)"
                            if evaluator is None else "", n_boot=n_boot, seed=seed)
    ped, quantile = ped_anova_evaluator(int(results["acc"].notna().sum()))
    second = importance_info(results, space, ped, f"PED-ANOVA (top {100 * quantile:.0f} % vs all)",
                             n_boot=n_boot, seed=seed)
    return first, second


#: The evaluators of :func:`importance_infos`, by their short names (the order of their infos).
EVALUATORS: tuple[str, ...] = ("fANOVA", "PED-ANOVA")


def importance_frame(infos: Mapping[str, Sequence[ImportanceInfo]], order: Sequence[str] = ()) -> pd.DataFrame:
    """The importances of every task, one row per (task, evaluator, hyperparameter).

    Parameters
    ----------
    infos : Mapping of str to sequence of ImportanceInfo
        Task -> its :func:`importance_infos` (fANOVA's, then PED-ANOVA's).
    order : sequence of str
        The hyperparameters' order in the rows of each (task, evaluator) (e.g. the space's);
        others follow, most important first.

    Returns
    -------
    pandas.DataFrame
        Columns ``task``, ``evaluator`` (:data:`EVALUATORS`), ``label`` (the evaluator and its
        settings), ``param``, ``importance`` (NaN when not computed), ``n_trials`` and ``note``;
        an evaluator that was not fitted gives one row with ``param`` ``""`` and its note.
    """
    rows = []
    for task, pair in infos.items():
        for name, info in zip(EVALUATORS, pair, strict=False):
            common = {"task": task, "evaluator": name, "label": info.label or info.evaluator, "n_trials": info.n_trials}
            if not info.importances:
                rows.append({**common, "param": "", "importance": float("nan"), "note": info.note})
            ranked = sorted(info.importances, key=lambda p: list(order).index(p) if p in order else len(order))
            rows += [{**common, "param": p, "importance": info.importances[p], "note": ""} for p in ranked]
    return pd.DataFrame(rows, columns=["task", "evaluator", "label", "param", "importance", "n_trials", "note"])


def importance_spread(frame: pd.DataFrame) -> pd.DataFrame:
    """The distribution over tasks of each hyperparameter's importance under each evaluator.

    Parameters
    ----------
    frame : pandas.DataFrame
        :func:`importance_frame` of the tasks compared.

    Returns
    -------
    pandas.DataFrame
        One row per (evaluator, param): ``n_tasks`` (tasks with an importance), ``median``,
        ``q1``, ``q3`` (quartiles, linear interpolation), ``min``, ``max`` and ``tasks`` (the
        tasks, most important first).
    """
    fitted = frame.dropna(subset=["importance"])
    fitted = fitted[fitted["param"] != ""]
    rows = []
    for (evaluator, param), group in fitted.groupby(["evaluator", "param"], sort=False):
        values = group["importance"].to_numpy(dtype=float)
        q1, median, q3 = np.percentile(values, [25, 50, 75])
        ordered = group.sort_values("importance", ascending=False)["task"].tolist()
        rows.append({"evaluator": evaluator, "param": param, "n_tasks": len(values), "median": float(median),
                     "q1": float(q1), "q3": float(q3), "min": float(values.min()), "max": float(values.max()),
                     "tasks": ordered})
    return pd.DataFrame(rows, columns=["evaluator", "param", "n_tasks", "median", "q1", "q3", "min", "max", "tasks"])


def importance_disagreement(first: ImportanceInfo, second: ImportanceInfo) -> str:
    """A sentence when two evaluators disagree on the same trials, ``""`` when they agree (or one
    was not fitted).

    They disagree when their most important hyperparameter differs, or when their intervals of
    one hyperparameter do not overlap (then chance in the sampled trials does not explain it).
    """
    if not first.importances or not second.importances:
        return ""
    a, b = first.label or first.evaluator, second.label or second.evaluator
    short_a, short_b = a.split(" (")[0], b.split(" (")[0]
    apart = [p for p in first.importances if p in first.intervals and p in second.intervals
             and (first.intervals[p][1] < second.intervals[p][0] or second.intervals[p][1] < first.intervals[p][0])]
    if first.top == second.top and not apart:
        return ""

    def value(info: ImportanceInfo, param: str) -> str:
        low_high = info.intervals.get(param)
        interval = f" [{low_high[0]:.2f}, {low_high[1]:.2f}]" if low_high else ""
        return f"{param} {info.importances.get(param, 0.0):.2f}{interval}"

    parts = []
    if first.top != second.top:
        parts.append(f"{short_a} ranks {value(first, first.top)} first, {short_b} {value(second, second.top)}")  # type: ignore[arg-type]
    if apart:
        parts.append("their intervals do not overlap for " + ", ".join(
            f"{p} ({short_a} {value(first, p).split(' ', 1)[1]}, {short_b} {value(second, p).split(' ', 1)[1]})" for p in apart))
    chance = ("the intervals do not overlap, so the difference is not the chance of which trials were run"
              if apart else
              f"the intervals overlap: with {first.n_trials} trials the data do not say which hyperparameter "
              "matters most")
    return (f"The two methods disagree: {'; '.join(parts)}. They answer different questions: {short_a} measures "
            "how much of the accuracy's variation over the whole searched space a hyperparameter explains (a "
            f"random-forest model of every trial), {short_b} how much the good trials' values of it differ from all "
            "trials' (where the best configs lie). A hyperparameter can decide between bad and good configs and "
            f"matter little among the good ones, or the reverse; {chance}.")
