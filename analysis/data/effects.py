"""The signed effect of each hyperparameter on accuracy: Spearman's rank correlation over trials.

For hyperparameter :math:`j` and the :math:`n` trials of a view, the signed effect is Spearman's

.. math:: \\rho_j = \\operatorname{corr}\\big(\\operatorname{rank}(x_{ij}), \\operatorname{rank}(a_i)\\big),

the Pearson correlation of the ranks of its values :math:`x_{ij}` and of the accuracies
:math:`a_i` (ties get their mean rank). Its sign is the direction: :math:`\\rho_j > 0` when
larger values go with higher accuracy.

Why a rank correlation, not the slope of the marginal effect: it is measured on the trials, not
on a fitted model; it is the same on a log or a linear axis (ranks do not change); a collapsed
trial (accuracy near 0) weighs as one rank, not by how far it fell; and it is bounded in
:math:`[-1, 1]`, so tasks compare on one scale. What it cannot see: it measures a monotone
association only, so a hyperparameter whose best value lies inside its range can be important
with :math:`\\rho` near 0 (read it beside the importance and the tunability profile); and a TPE
search samples the hyperparameters jointly and around good trials, so a marginal correlation can
borrow the effect of another hyperparameter the sampler correlated with it (random search has no
such confound).

Interval: Fisher's transform with the standard error of a rank correlation of Fieller, Hartley
and Pearson (1957), :math:`\\tanh(\\operatorname{atanh}\\rho \\pm 1.96 \\sqrt{1.06 / (n - 3)})`,
for :math:`n \\ge` :data:`MIN_EFFECT_TRIALS`; the effect is *clear* when the interval excludes 0.

References
----------
E. C. Fieller, H. O. Hartley, E. S. Pearson. "Tests for rank correlation coefficients. I".
Biometrika 44, 1957.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import spearmanr

from analysis.data.experiments import ParamSpec

__all__ = ["MIN_EFFECT_TRIALS", "Z95", "RankCorrelation", "EffectInfo", "rank_interval", "rank_correlation", "signed_effects",
           "effects_frame"]

#: Fewest trials the interval is computed on (the standard error needs n > 3).
MIN_EFFECT_TRIALS = 4
#: The two-sided 95 % normal quantile.
Z95 = 1.959963984540054


@dataclass(frozen=True)
class RankCorrelation:
    """Spearman's rank correlation over ``n`` pairs with its 95 % interval (:func:`rank_interval`):
    the signed effect of a hyperparameter (:class:`EffectInfo`), the trust in a rung
    (:class:`analysis.data.rungs.RungCorrelation`).

    Attributes
    ----------
    n : int
        Pairs (trials) it rests on.
    rho : float
        The correlation, NaN when undefined (``note`` says why).
    low, high : float
        Its 95 % interval (NaN below :data:`MIN_EFFECT_TRIALS` pairs).
    note : str
        Why ``rho`` or its interval is missing, or ``""``.
    """

    n: int
    rho: float = math.nan
    low: float = math.nan
    high: float = math.nan
    note: str = ""

    @property
    def clear(self) -> bool:
        """Whether the interval excludes 0."""
        return bool(self.low > 0 or self.high < 0)


def rank_correlation(x: Any, y: Any) -> tuple[float, float, float]:
    """Spearman's correlation of the paired values ``x`` and ``y`` and its interval: ``(rho, low, high)``."""
    rho = float(spearmanr(np.asarray(x, dtype=float), np.asarray(y, dtype=float)).statistic)
    return (rho, *rank_interval(rho, len(x)))


@dataclass(frozen=True, kw_only=True)
class EffectInfo(RankCorrelation):
    """The signed effect of one hyperparameter ``param`` in one view: a :class:`RankCorrelation`
    of its values with the accuracy."""

    param: str

    @property
    def direction(self) -> str:
        """``"+"`` (larger values, higher accuracy), ``"-"``, or ``"?"`` when the interval holds 0."""
        if not self.clear:
            return "?"
        return "+" if self.rho > 0 else "-"


def rank_interval(rho: float, n: int) -> tuple[float, float]:
    """The 95 % interval of a rank correlation ``rho`` on ``n`` pairs (module docstring); NaNs
    below :data:`MIN_EFFECT_TRIALS` pairs or for a NaN ``rho``."""
    if n < MIN_EFFECT_TRIALS or not math.isfinite(rho):
        return math.nan, math.nan
    if abs(rho) >= 1:
        return rho, rho
    half = Z95 * math.sqrt(1.06 / (n - 3))
    z = math.atanh(rho)
    return math.tanh(z - half), math.tanh(z + half)


def _numeric(values: pd.Series) -> pd.Series | None:
    numbers = pd.to_numeric(values, errors="coerce")
    return None if numbers.isna().any() else numbers


def signed_effects(results: pd.DataFrame, space: Mapping[str, ParamSpec]) -> list[EffectInfo]:
    """The signed effect of every searched hyperparameter of ``space`` on ``results["acc"]``.

    Parameters
    ----------
    results : pandas.DataFrame
        The trials of one view, one row each with ``acc`` (:func:`analysis.data.views.view_results`).
    space : Mapping of str to ParamSpec

    Returns
    -------
    list of EffectInfo
        One per searched hyperparameter present in ``results``, in the space's order.
    """
    results = results.dropna(subset=["acc"])
    acc = results["acc"].to_numpy(dtype=float)
    infos = []
    for param, spec in space.items():
        if not spec.searched or param not in results:
            continue
        values = _numeric(results[param])
        n = len(results)
        if values is None:
            infos.append(EffectInfo(param=param, n=n, note="its choices have no order"))
            continue
        if n < 3 or values.nunique() < 2 or np.ptp(acc) == 0:
            why = f"{n} trial(s)" if n < 3 else ("one value only" if values.nunique() < 2 else "the accuracy is constant")
            infos.append(EffectInfo(param=param, n=n, note=f"undefined: {why}"))
            continue
        rho, low, high = rank_correlation(values, acc)
        note = "" if n >= MIN_EFFECT_TRIALS else f"no interval below {MIN_EFFECT_TRIALS} trials"
        infos.append(EffectInfo(param=param, n=n, rho=rho, low=low, high=high, note=note))
    return infos


def effects_frame(effects: Mapping[str, list[EffectInfo]]) -> pd.DataFrame:
    """The signed effects of every task, one row per (task, hyperparameter): ``task``, ``param``,
    ``rho``, ``low``, ``high``, ``n``, ``direction`` (:attr:`EffectInfo.direction`) and ``note``."""
    rows = [{"task": task, "param": e.param, "rho": e.rho, "low": e.low, "high": e.high, "n": e.n,
             "direction": e.direction, "note": e.note} for task, infos in effects.items() for e in infos]
    return pd.DataFrame(rows, columns=["task", "param", "rho", "low", "high", "n", "direction", "note"])
