"""Marginal effect of each hyperparameter: a model estimate, drawn with the trials as points.

The surrogate of :mod:`analysis.data.surrogate` is fitted to the trials of a view exactly as
Optuna's fANOVA fits its own forest (64 trees, depth 64, seed 0; log-scaled axes in log10), and the
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

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd

from analysis.data.experiments import ParamSpec
from analysis.data.importance import MIN_TRIALS
from analysis.data.surrogate import N_GRID, axes_of, features, fit_forest

__all__ = ["MarginalInfo", "marginal_infos", "N_GRID"]


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
    axes = axes_of(results, space)
    acc = results["acc"].to_numpy(dtype=float)
    raw = {p: results[p].to_numpy() for p in axes}
    if len(results) < MIN_TRIALS or not axes:
        note = f"not estimated: fitted only on at least {MIN_TRIALS} trials; this view has {len(results)}"
        # a categorical axis keeps its values' order without an estimate too (widths 64 ... 1024)
        return [MarginalInfo(p, a.kind, a.grid()[0] if a.kind == "categorical" else [], np.array([]), raw[p], acc, len(results), note)
                for p, a in axes.items()]
    x = features(results, axes)
    forest = fit_forest(x, acc, seed)
    infos = []
    for column, (param, axis) in enumerate(axes.items()):
        grid, encoded = axis.grid()
        stacked = np.repeat(x[None, :, :], len(encoded), axis=0)
        stacked[:, :, column] = encoded[:, None]
        predicted = forest.predict(stacked.reshape(-1, x.shape[1]))
        estimate = predicted.reshape(len(encoded), len(x)).mean(axis=1)
        infos.append(MarginalInfo(param, axis.kind, grid, estimate, raw[param], acc, len(results)))
    return infos
