"""Marginal effect of each hyperparameter: a model estimate, drawn with the trials as points.

A random forest is fitted to the trials of a view exactly as Optuna's fANOVA fits its own
(``RandomForestRegressor``, 64 trees, depth 64, seed 0; log-scaled axes in log10), and the
effect of hyperparameter :math:`j` at value :math:`v` is its partial dependence (Friedman 2001)

.. math::

    \\hat f_j(v) = \\frac{1}{n} \\sum_{i=1}^{n} \\hat f(x_{i,1}, \\dots, x_{i,j-1}, v,
    x_{i,j+1}, \\dots, x_{i,d}),

the forest's prediction with :math:`x_j` set to :math:`v`, averaged over the other
hyperparameters of the :math:`n` trials. It is an estimate of the model, not a measurement: the
figures label it "model estimate" and show the trials beside it. It is not computed on fewer than
:data:`analysis.data.importance.MIN_TRIALS` trials.

References
----------
J. H. Friedman. "Greedy function approximation: a gradient boosting machine". Annals of
Statistics 29(5), 2001.
F. Hutter, H. Hoos, K. Leyton-Brown. "An Efficient Approach for Assessing Hyperparameter
Importance". ICML 2014.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd
from optuna.distributions import CategoricalDistribution, FloatDistribution

from analysis.data.experiments import ParamSpec
from analysis.data.importance import MIN_TRIALS, optuna_distribution

__all__ = ["MarginalInfo", "marginal_infos", "N_GRID"]

#: Points of the estimate along a continuous axis.
N_GRID = 50


@dataclass(frozen=True)
class MarginalInfo:
    """The estimated effect of one hyperparameter on the accuracy, and the trials themselves.

    Attributes
    ----------
    param : str
    kind : {"log", "linear", "categorical"}
        How the axis is drawn.
    grid : list
        The values where the effect is estimated; on a categorical axis its choices in their order
        (also without an estimate: the axis keeps that order, 64 before 256 before 1024).
    estimate : numpy.ndarray
        The forest's partial dependence at each grid value (accuracy in [0, 1]); empty with a
        ``note``.
    trial_values, trial_acc : numpy.ndarray
        Each trial's value of ``param`` and its accuracy in the view.
    n_trials : int
        Trials the model was fitted on.
    note : str
        Why there is no estimate, or ``""``.
    """

    param: str
    kind: Literal["log", "linear", "categorical"]
    grid: list[Any]
    estimate: np.ndarray
    trial_values: np.ndarray
    trial_acc: np.ndarray
    n_trials: int
    note: str = ""


def _encode(dist: Any, values: pd.Series) -> np.ndarray:
    """The model's feature column: log10 on log axes, the choice index on categorical ones."""
    if isinstance(dist, CategoricalDistribution):
        lookup = {str(c): i for i, c in enumerate(dist.choices)}
        return np.array([lookup.get(str(_plain(v)), -1) for v in values], dtype=float)
    numbers = pd.to_numeric(values, errors="coerce").to_numpy(dtype=float)
    return np.log10(numbers) if dist.log else numbers


def _plain(value: Any) -> Any:
    """A numeric choice as written in the space (``256.0`` read from CSV -> ``256``)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _grid(dist: Any) -> tuple[list[Any], np.ndarray, Literal["log", "linear", "categorical"]]:
    """Grid values (original units), their encoding, and the axis kind."""
    if isinstance(dist, CategoricalDistribution):
        return list(dist.choices), np.arange(len(dist.choices), dtype=float), "categorical"
    assert isinstance(dist, FloatDistribution)
    if dist.log:
        encoded = np.linspace(math.log10(dist.low), math.log10(dist.high), N_GRID)
        return list(10.0**encoded), encoded, "log"
    encoded = np.linspace(dist.low, dist.high, N_GRID)
    return list(encoded), encoded, "linear"


def marginal_infos(
    results: pd.DataFrame, space: Mapping[str, ParamSpec], *, seed: int = 0
) -> list[MarginalInfo]:
    """The marginal effect of every searched hyperparameter on ``results["acc"]``.

    Parameters
    ----------
    results : pandas.DataFrame
        The trials of one view (:func:`analysis.data.views.view_results`), one row each with ``acc``.
    space : Mapping of str to ParamSpec
        The experiment's space.
    seed : int
        The forest's seed.

    Returns
    -------
    list of MarginalInfo
        One per searched hyperparameter that varies, in the space's order; each has a ``note``
        and no estimate when fewer than ``MIN_TRIALS`` trials have an accuracy.
    """
    results = results.dropna(subset=["acc"])
    dists = {
        p: d for p, spec in space.items()
        if p in results and (d := optuna_distribution(spec, results[p])) is not None
    }
    acc = results["acc"].to_numpy(dtype=float)
    raw = {p: results[p].to_numpy() for p in dists}
    if len(results) < MIN_TRIALS or not dists:
        note = f"not estimated: fitted only on at least {MIN_TRIALS} trials; this view has {len(results)}"
        return [MarginalInfo(p, kind, grid if kind == "categorical" else [], np.array([]), raw[p], acc, len(results), note)
                for p, d in dists.items() for grid, _, kind in [_grid(d)]]
    from sklearn.ensemble import RandomForestRegressor  # lazily: optional at import time

    features = np.column_stack([_encode(d, results[p]) for p, d in dists.items()])
    forest = RandomForestRegressor(
        n_estimators=64, max_depth=64, min_samples_split=2, min_samples_leaf=1, random_state=seed
    ).fit(features, acc)
    infos = []
    for column, (param, dist) in enumerate(dists.items()):
        grid, encoded, kind = _grid(dist)
        stacked = np.repeat(features[None, :, :], len(encoded), axis=0)
        stacked[:, :, column] = encoded[:, None]
        predicted = forest.predict(stacked.reshape(-1, features.shape[1]))
        estimate = predicted.reshape(len(encoded), len(features)).mean(axis=1)
        infos.append(MarginalInfo(param, kind, grid, estimate, raw[param], acc, len(results)))
    return infos
