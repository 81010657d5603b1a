"""Hyperparameter importance of a finished search, computed with Optuna's evaluators.

The trials are replayed into an in-memory Optuna study (``optuna.trial.create_trial``), whatever
searcher produced them (TPE, random or grid), and ``optuna.importance.get_param_importances`` is
asked which hyperparameters explain the accuracy. fANOVA (seeded) is the default evaluator.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import optuna
import pandas as pd
from optuna.distributions import BaseDistribution, CategoricalDistribution, FloatDistribution
from optuna.importance import BaseImportanceEvaluator, FanovaImportanceEvaluator

from analysis.experiments import ParamSpec

__all__ = ["ImportanceInfo", "importance_info", "optuna_distribution"]

#: Fewest trials the evaluators can work with.
MIN_TRIALS = 2


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
    """

    importances: dict[str, float]
    n_trials: int
    evaluator: str
    note: str = ""


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
        yield
    finally:
        optuna.logging.set_verbosity(previous)


def importance_info(
    results: pd.DataFrame,
    space: Mapping[str, ParamSpec],
    evaluator: BaseImportanceEvaluator | None = None,
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

    Returns
    -------
    ImportanceInfo
        With a ``note`` and no importances when fewer than 2 trials qualify, when no parameter
        varies, or when the evaluator fails.
    """
    evaluator = evaluator or FanovaImportanceEvaluator(seed=0)
    name = type(evaluator).__name__
    results = results.dropna(subset=["acc"])
    if len(results) < MIN_TRIALS:
        note = f"needs at least {MIN_TRIALS} trials in this view, found {len(results)}"
        return ImportanceInfo({}, len(results), name, note)
    distributions = {
        param: dist
        for param, spec in space.items()
        if param in results and (dist := optuna_distribution(spec, results[param])) is not None
    }
    if not distributions:
        return ImportanceInfo({}, len(results), name, "no hyperparameter varies in this search")
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
            raw = optuna.importance.get_param_importances(study, evaluator=evaluator)
        except (ValueError, RuntimeError) as exc:
            return ImportanceInfo({}, len(results), name, f"the evaluator failed: {exc}")
    importances = {param: float(value) for param, value in raw.items()}
    return ImportanceInfo(importances, len(results), name)
