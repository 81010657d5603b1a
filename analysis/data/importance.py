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
from dataclasses import dataclass
from typing import Any

import numpy as np
import optuna
import pandas as pd
from optuna.distributions import BaseDistribution, CategoricalDistribution, FloatDistribution
from optuna.importance import (
    BaseImportanceEvaluator,
    FanovaImportanceEvaluator,
    PedAnovaImportanceEvaluator,
)

from analysis.data.experiments import ParamSpec

__all__ = [
    "MIN_TRIALS",
    "ImportanceInfo",
    "importance_info",
    "importance_infos",
    "ped_anova_evaluator",
    "optuna_distribution",
    "importance_frame",
    "importance_spread",
]

#: Fewest trials an importance model (or a marginal-effect model) is fitted on: below it a random
#: forest or a Parzen estimator of the top trials says more about the noise than about the
#: hyperparameters, so the figure says so instead.
MIN_TRIALS = 10

#: Trials that PED-ANOVA's top quantile should hold (Optuna's advice: at least 5).
PED_ANOVA_TOP = 5


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
    """

    importances: dict[str, float]
    n_trials: int
    evaluator: str
    note: str = ""
    label: str = ""


def optuna_distribution(spec: ParamSpec, observed: pd.Series) -> BaseDistribution | None:
    """The Optuna distribution of a searched parameter, widened to cover the observed values.

    Log and linear ranges become ``FloatDistribution`` (``log=True`` on log axes); a numeric
    grid becomes a ``FloatDistribution`` over its range (log when it spans more than a decade of
    positive values), so that the evaluator sees its order; choices become a
    ``CategoricalDistribution``. Fixed parameters give None.
    """
    if spec.kind == "fixed":
        return None
    if spec.kind == "categorical":
        return CategoricalDistribution(list(spec.values))
    values = pd.to_numeric(observed, errors="coerce").dropna()
    if spec.kind == "grid":
        grid = pd.to_numeric(pd.Series(spec.values), errors="coerce")
        if grid.isna().any():
            return CategoricalDistribution(list(spec.values))
        values = pd.concat([values, grid])
        low, high = float(values.min()), float(values.max())
        log = low > 0 and high / low > 10
    else:
        low = float(min([spec.low, *values.tolist()]))
        high = float(max([spec.high, *values.tolist()]))
        log = spec.kind == "log"
    if high <= low:
        return None
    return FloatDistribution(low, high, log=log)


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


def importance_info(
    results: pd.DataFrame,
    space: Mapping[str, ParamSpec],
    evaluator: BaseImportanceEvaluator | None = None,
    label: str = "",
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

    Returns
    -------
    ImportanceInfo
        With a ``note`` and no importances when fewer than :data:`MIN_TRIALS` trials qualify,
        when no parameter varies, or when the evaluator fails.
    """
    evaluator = evaluator or FanovaImportanceEvaluator(seed=0)
    name = type(evaluator).__name__
    label = label or name
    results = results.dropna(subset=["acc"])
    if len(results) < MIN_TRIALS:
        note = f"fitted only on at least {MIN_TRIALS} trials; this view has {len(results)}"
        return ImportanceInfo({}, len(results), name, note, label)
    distributions = {
        param: dist
        for param, spec in space.items()
        if param in results and (dist := optuna_distribution(spec, results[param])) is not None
    }
    if not distributions:
        return ImportanceInfo({}, len(results), name, "no hyperparameter varies in this search", label)
    trials = [
        optuna.trial.create_trial(
            params={p: _param_value(space[p], row[p]) for p in distributions},
            distributions=distributions,
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
            return ImportanceInfo({}, len(results), name, f"the evaluator failed: {exc}", label)
    total = sum(float(value) for value in raw.values())
    if not total > 0:  # Optuna would share 1 equally: say that nothing was found instead
        return ImportanceInfo({}, len(results), name, "the evaluator found no effect at all", label)
    importances = {param: float(value) / total for param, value in raw.items()}
    return ImportanceInfo(importances, len(results), name, "", label)


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
) -> tuple[ImportanceInfo, ImportanceInfo]:
    """The importances of fANOVA (or ``evaluator``) and of PED-ANOVA, on the same trials.

    Returns
    -------
    (ImportanceInfo, ImportanceInfo)
        fANOVA's (random forest of 64 trees, seed 0) and PED-ANOVA's (:func:`ped_anova_evaluator`),
        labelled for figures.
    """
    first = importance_info(results, space, evaluator, "fANOVA (random forest, seed 0)"
                            if evaluator is None else "")
    ped, quantile = ped_anova_evaluator(int(results["acc"].notna().sum()))
    second = importance_info(results, space, ped, f"PED-ANOVA (top {100 * quantile:.0f} % vs all)")
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
