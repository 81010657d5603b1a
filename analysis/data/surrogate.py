"""The surrogate of a search: a random forest of accuracy over the searched hyperparameters.

Fitted as Optuna's fANOVA fits its own forest (Hutter et al. 2014): ``RandomForestRegressor``
with 64 trees of depth at most 64, all features at every split, bootstrap samples, a fixed seed.
Each hyperparameter is one feature, encoded as the forest sees it (:class:`Axis`): ``log10`` of
the value on a log axis, the value on a linear axis, the index of the choice on a categorical one.
:mod:`analysis.data.marginal` averages the forest over the other hyperparameters (partial
dependence); :mod:`analysis.data.tunability` maximises it.

References
----------
F. Hutter, H. Hoos, K. Leyton-Brown. "An Efficient Approach for Assessing Hyperparameter
Importance". ICML 2014.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd
from optuna.distributions import BaseDistribution, CategoricalDistribution, FloatDistribution

from analysis.data.experiments import ParamSpec

if TYPE_CHECKING:
    from sklearn.ensemble import RandomForestRegressor

__all__ = ["Axis", "N_GRID", "N_TREES", "axes_of", "fit_forest", "features"]

#: Points of a grid along a continuous axis.
N_GRID = 50
#: Trees of the forest (Optuna's fANOVA: 64).
N_TREES = 64

AxisKind = Literal["log", "linear", "categorical"]


def _plain(value: Any) -> Any:
    """A numeric choice as written in the space (``256.0`` read from CSV -> ``256``)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


@dataclass(frozen=True)
class Axis:
    """One hyperparameter as the forest sees it.

    Attributes
    ----------
    param : str
    dist : optuna.distributions.BaseDistribution
        Its range (:meth:`analysis.data.experiments.ParamSpec.distribution`).
    """

    param: str
    dist: BaseDistribution

    @property
    def kind(self) -> AxisKind:
        """``"log"``, ``"linear"`` or ``"categorical"``."""
        if isinstance(self.dist, CategoricalDistribution):
            return "categorical"
        assert isinstance(self.dist, FloatDistribution)
        return "log" if self.dist.log else "linear"

    def encode(self, values: Any) -> np.ndarray:
        """The feature column of ``values``: ``log10`` on log axes, the choice index on
        categorical ones (-1 for a value that is not a choice)."""
        series = pd.Series(list(values) if not isinstance(values, pd.Series) else values)
        if isinstance(self.dist, CategoricalDistribution):
            lookup = {str(c): i for i, c in enumerate(self.dist.choices)}
            return np.array([lookup.get(str(_plain(v)), -1) for v in series], dtype=float)
        numbers = pd.to_numeric(series, errors="coerce").to_numpy(dtype=float)
        return np.log10(numbers) if self.kind == "log" else numbers

    def decode(self, encoded: np.ndarray) -> list[Any]:
        """The values (original units) of encoded points."""
        if isinstance(self.dist, CategoricalDistribution):
            return [self.dist.choices[int(round(i))] for i in encoded]
        return list(10.0 ** np.asarray(encoded, dtype=float)) if self.kind == "log" else list(np.asarray(encoded, dtype=float))

    def grid(self, n: int = N_GRID) -> tuple[list[Any], np.ndarray]:
        """``n`` points evenly spaced in the encoded range (every choice of a categorical axis):
        their values and their encoding."""
        if isinstance(self.dist, CategoricalDistribution):
            return list(self.dist.choices), np.arange(len(self.dist.choices), dtype=float)
        assert isinstance(self.dist, FloatDistribution)
        low, high = (math.log10(self.dist.low), math.log10(self.dist.high)) if self.dist.log else (self.dist.low, self.dist.high)
        encoded = np.linspace(low, high, n)
        return self.decode(encoded), encoded

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """``n`` encoded points drawn uniformly in the encoded range (log-uniform on a log axis)."""
        if isinstance(self.dist, CategoricalDistribution):
            return rng.integers(0, len(self.dist.choices), n).astype(float)
        _, encoded = self.grid(2)
        return rng.uniform(encoded[0], encoded[1], n)


def axes_of(results: pd.DataFrame, space: Mapping[str, ParamSpec]) -> dict[str, Axis]:
    """The axis of every searched hyperparameter of ``space`` that ``results`` records and that
    varies, in the space's order."""
    return {p: Axis(p, d) for p, spec in space.items()
            if p in results and (d := spec.distribution(results[p])) is not None}


def features(results: pd.DataFrame, axes: Mapping[str, Axis]) -> np.ndarray:
    """The feature matrix of ``results`` (one row per trial, one column per axis)."""
    return np.column_stack([axis.encode(results[p]) for p, axis in axes.items()]) if axes else np.empty((len(results), 0))


def fit_forest(x: np.ndarray, y: np.ndarray, seed: int = 0) -> RandomForestRegressor:
    """The forest fitted on features ``x`` and accuracies ``y`` (module docstring)."""
    from sklearn.ensemble import RandomForestRegressor  # lazily: optional at import time

    return RandomForestRegressor(n_estimators=N_TREES, max_depth=64, min_samples_split=2, min_samples_leaf=1,
                                 random_state=seed).fit(x, y)
