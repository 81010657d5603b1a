"""Heatmap cells of a pair of hyperparameters: axis binning and per-cell aggregation.

:func:`axis_bins` builds an axis's cells from a :class:`~analysis.data.experiments.ParamSpec`;
:func:`heatmap_info` places the trials of :func:`analysis.data.frames.final_results` in them. Within
a cell (and overall) the best trial follows the tie rule of :func:`ssot.results.trials.rank`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd

from analysis.data.experiments import ParamSpec
from analysis.data.frames import format_value
from ssot.results import trials as trial_model

__all__ = ["Bins", "AxisBins", "HeatmapInfo", "axis_bins", "heatmap_info", "heatmap_notes", "color_range"]

#: How to bin continuous axes: ``"decades"`` (on log axes one cell centred on each power of ten,
#: ``[10^(k-1/2), 10^(k+1/2))``, as the paper's grid has one value per decade; 5 equal bins on
#: linear axes), a number of equal-width bins (in log space on log axes), or explicit edges.
Bins = Literal["decades"] | int | Sequence[float]

#: Relative tolerance under which a value counts as lying on a cell edge (survives a CSV round
#: trip) or equal to a grid value.
_RTOL = 1e-9




@dataclass(frozen=True)
class AxisBins:
    """The cells of one heatmap axis.

    Attributes
    ----------
    param : str
        The hyperparameter on this axis.
    kind : {"grid", "categorical", "log", "linear"}
        ``"grid"``/``"categorical"``: one cell per value in ``values``; ``"log"``/``"linear"``:
        cells between consecutive ``edges``.
    labels : tuple of str
        One label per cell (the axis ticks), e.g. ``"0.01"`` or ``"[0.01, 0.1)"``.
    values : tuple
        The cell values of a grid or categorical axis.
    edges : tuple of float
        The cell edges of a continuous axis (``len(labels) + 1`` of them).
    centers : tuple of float
        On a decade-centred log axis (the default binning), the power of ten each cell is
        centred on (its label); empty otherwise.
    intervals : tuple of str
        The exact interval of each cell of a decade-centred log axis, e.g.
        ``"[3.2e-4, 3.2e-3)"``, shown on hover; empty otherwise.
    """

    param: str
    kind: Literal["grid", "categorical", "log", "linear"]
    labels: tuple[str, ...]
    values: tuple[Any, ...] = ()
    edges: tuple[float, ...] = ()
    centers: tuple[float, ...] = ()
    intervals: tuple[str, ...] = ()

    def __len__(self) -> int:
        return len(self.labels)

    @property
    def hover_labels(self) -> tuple[str, ...]:
        """How each cell is named on hover: its label, and its exact interval if it has one
        (``"1e-3: [3.2e-4, 3.2e-3)"``)."""
        if not self.intervals:
            return self.labels
        return tuple(
            f"{label}: {interval}"
            for label, interval in zip(self.labels, self.intervals, strict=True)
        )

    def assign(self, values: Sequence[Any] | pd.Series) -> np.ndarray:
        """Return the cell index of each value, or -1 for a value that belongs to no cell.

        On a continuous axis the cells are ``[edge_k, edge_k+1)``: a value exactly on an inner
        edge goes to the cell that edge opens (on a decade-centred log axis: a value on a
        half-decade edge ``10^(k+1/2)`` goes to the cell centred on ``10^(k+1)``, whose lower
        edge it is). The top edge belongs to the last cell, except on a decade-centred axis,
        where every cell is half-open (the axis is built so that the searched range and every
        observed value lie strictly below its top edge). A value within a relative 1e-9 of an
        edge counts as on it. On a grid or categorical axis a value belongs to the cell of the
        equal value (within a relative 1e-9, to survive a CSV round trip).
        """
        array = pd.to_numeric(pd.Series(values), errors="coerce").to_numpy(dtype=float)
        if self.kind in ("grid", "categorical"):
            return self._assign_exact(values, array)
        edges = np.asarray(self.edges, dtype=float)
        snapped = array.copy()
        for edge in edges:  # values within rounding error of an edge count as on it
            snapped[np.isclose(snapped, edge, rtol=_RTOL, atol=0.0)] = edge
        index = np.searchsorted(edges, snapped, side="right") - 1
        if not self.centers:
            index[snapped == edges[-1]] = len(edges) - 2
        off = (snapped < edges[0]) | (snapped > edges[-1]) | np.isnan(snapped)
        if self.centers:
            off |= snapped == edges[-1]
        index[off] = -1
        return np.asarray(index, dtype=int)

    def _assign_exact(self, raw: Sequence[Any] | pd.Series, array: np.ndarray) -> np.ndarray:
        numeric = [v for v in self.values if isinstance(v, (int, float, np.number))]
        index = np.full(len(array), -1, dtype=int)
        if len(numeric) == len(self.values):
            grid = np.asarray(self.values, dtype=float)
            close = np.isclose(array[:, None], grid[None, :], rtol=_RTOL, atol=0.0)
            hit = close.any(axis=1)
            index[hit] = close[hit].argmax(axis=1)
            return index
        lookup = {str(v): i for i, v in enumerate(self.values)}
        return np.array([lookup.get(str(v), -1) for v in pd.Series(raw)], dtype=int)


def _half_decade(k: int) -> float:
    """The lower edge of the cell centred on ``10^k``: ``10^(k-1/2)``."""
    return float(10.0 ** (k - 0.5))


def _on_edge(value: float, edge: float) -> bool:
    """Whether ``value`` lies on ``edge`` within rounding error (as :meth:`AxisBins.assign`)."""
    return abs(value - edge) <= _RTOL * abs(edge)


def _decade_cell(value: float) -> int:
    """The ``k`` of the cell ``[10^(k-1/2), 10^(k+1/2))`` holding a positive ``value``.

    A value on a half-decade edge is in the cell whose lower edge it is (``10^-2.5`` -> ``k =
    -2``), consistently with :meth:`AxisBins.assign`, whatever the rounding of ``log10``.
    """
    k = math.floor(math.log10(value) + 0.5)
    while value >= _half_decade(k + 1) or _on_edge(value, _half_decade(k + 1)):
        k += 1
    while value < _half_decade(k) and not _on_edge(value, _half_decade(k)):
        k -= 1
    return k


def _short_number(value: float) -> str:
    """Two significant digits, in scientific notation outside [0.01, 1000): ``3.2e-4``,
    ``0.032``, ``3.2``, ``320``, ``3.2e3``; a power of ten is written ``1e-3``, ``0.01``, ``10``.
    """
    mantissa, exponent = f"{value:.1e}".split("e")
    power = int(exponent)
    if -2 <= power <= 2:
        return f"{float(f'{value:.2g}'):g}"
    mantissa = mantissa.removesuffix(".0")
    return f"{mantissa}e{power}"


def _centred_decades(param: str, low: float, high: float) -> AxisBins:
    """A log axis with one cell per power of ten from the one nearest ``low`` to the one nearest
    ``high``: cell ``k`` is ``[10^(k-1/2), 10^(k+1/2))``, labelled ``10^k``."""
    k_low, k_high = _decade_cell(low), _decade_cell(max(high, low))
    ks = range(k_low, k_high + 1)
    edges = tuple(_half_decade(k) for k in range(k_low, k_high + 2))
    centers = tuple(float(f"1e{k}") for k in ks)
    intervals = tuple(
        f"[{_short_number(lo)}, {_short_number(hi)})"
        for lo, hi in zip(edges[:-1], edges[1:], strict=True)
    )
    labels = tuple(format_value(c) for c in centers)  # as a grid search's axis: 0.001 ... 10
    return AxisBins(param, "log", labels, edges=edges, centers=centers, intervals=intervals)


def _continuous_edges(kind: str, low: float, high: float, bins: Bins) -> list[float]:
    """Edges of a continuous axis covering ``[low, high]`` (not decade-centred log axes)."""
    if isinstance(bins, str):
        bins = 5
    if isinstance(bins, (int, np.integer)):
        if bins < 1:
            raise ValueError(f"The 'bins' parameter must be a positive int. Got {bins} instead.")
        if high <= low:
            high = low + 1.0 if kind == "linear" else low * 10.0
        if kind == "log":
            return list(np.logspace(math.log10(low), math.log10(high), int(bins) + 1))
        return list(np.linspace(low, high, int(bins) + 1))
    edges = sorted(float(e) for e in bins)
    if len(edges) < 2:
        raise ValueError(f"The 'bins' parameter needs at least 2 edges. Got {list(bins)} instead.")
    return edges


def _interval_labels(edges: Sequence[float]) -> tuple[str, ...]:
    """``[a, b)`` for every cell but the last, which is closed: ``[a, b]``."""
    last = len(edges) - 2
    return tuple(
        f"[{format_value(lo)}, {format_value(hi)}{']' if i == last else ')'}"
        for i, (lo, hi) in enumerate(zip(edges[:-1], edges[1:], strict=True))
    )


def axis_bins(
    spec: ParamSpec, observed: Sequence[Any] | pd.Series = (), bins: Bins = "decades"
) -> AxisBins:
    """Build the cells of a heatmap axis for one hyperparameter.

    Parameters
    ----------
    spec : ParamSpec
        How the parameter was searched.
    observed : sequence
        The values the trials took; a continuous axis is widened to cover them (so no trial
        silently falls off it), but never narrowed below the searched range.
    bins : "decades", int or sequence of float
        Binning of a continuous axis.

        ``"decades"`` (default): on a log axis, one cell centred on each power of ten, as the
        paper's grid has one value per decade: cell ``k`` is ``[10^(k-1/2), 10^(k+1/2))`` in
        log space, labelled by its centre (``"0.001"``, ``"0.01"``, ``"0.1"``, ``"1"``,
        ``"10"``) with its exact interval (``"[3.2e-4, 3.2e-3)"``) in ``intervals``. A value
        exactly on a half-decade edge goes to the cell whose lower edge it is (``10^-2.5 ~
        0.00316`` is in the cell of 0.01; 0.0031 is in that of 0.001, 0.0032 in that of 0.01).
        The cells run from ``kmin``, the decade nearest the low end of the range (rounding a
        half up, as the edge rule), to ``kmax``, the one nearest its high end, so both ends and
        every observed value lie in a cell: ``[1e-3, 10]`` gives the 5 cells of the paper's
        grid, ``[1e-2, 10]`` 4 cells (0.01, 0.1, 1, 10). On a linear axis: 5 equal-width cells.

        An int ``n``: ``n`` equal-width cells (in log space on a log axis) from the low to the
        high end, labelled ``[a, b)``. A sequence: the explicit cell edges.

    Raises
    ------
    ValueError
        If the parameter is fixed (it has no axis) or ``bins`` is invalid.
    """
    if spec.kind == "fixed":
        raise ValueError(f"The parameter {spec.name!r} is fixed in this search: it has no axis.")
    if spec.kind in ("grid", "categorical"):
        labels = tuple(format_value(v) for v in spec.values)
        return AxisBins(spec.name, spec.kind, labels, values=tuple(spec.values))
    data = pd.to_numeric(pd.Series(observed), errors="coerce").dropna()
    if spec.kind == "log":
        data = data[data > 0]
    low = min([spec.low] + data.tolist())
    high = max([spec.high] + data.tolist())
    if isinstance(bins, str) and bins != "decades":
        raise ValueError(
            "The 'bins' parameter must be 'decades', a positive int or a sequence of edges. "
            f"Got {bins!r} instead."
        )
    if spec.kind == "log" and isinstance(bins, str):
        return _centred_decades(spec.name, float(low), float(high))
    edges = _continuous_edges(spec.kind, float(low), float(high), bins)
    return AxisBins(spec.name, spec.kind, _interval_labels(edges), edges=tuple(edges))


@dataclass(frozen=True)
class HeatmapInfo:
    """Everything a heatmap of accuracy over two hyperparameters shows.

    Matrices are indexed ``[y_cell, x_cell]``; cells without any trial hold NaN (``count`` 0,
    ``best_trial`` ``""``) and are drawn blank.

    Attributes
    ----------
    x, y : AxisBins
        The two axes.
    best, mean : numpy.ndarray
        Best and mean accuracy of the trials in each cell (in [0, 1]).
    count : numpy.ndarray
        Number of trials in each cell.
    best_trial, best_config : numpy.ndarray
        Id and configuration text of each cell's best trial.
    best_cell : tuple of int or None
        ``(y_cell, x_cell)`` of the best trial overall.
    best_trial_id : str or None
        The best trial overall.
    n_trials : int
        Trials placed in a cell.
    n_unplaced : int
        Trials whose values belong to no cell (e.g. off the grid); they are not drawn.
    mode : str
        The view whose accuracy the cells hold (``"final"``, ``"best"``, ``"epoch<R>"``).
    cells : dict of str to (int, int)
        The ``(y_cell, x_cell)`` of every placed trial, by trial id (to mark one trial on the figure).
    """

    x: AxisBins
    y: AxisBins
    best: np.ndarray
    mean: np.ndarray
    count: np.ndarray
    best_trial: np.ndarray
    best_config: np.ndarray
    best_cell: tuple[int, int] | None
    best_trial_id: str | None
    n_trials: int
    n_unplaced: int
    mode: str
    cells: dict[str, tuple[int, int]] = field(default_factory=dict)


def heatmap_info(
    results: pd.DataFrame,
    x: str,
    y: str,
    space: Mapping[str, ParamSpec],
    *,
    bins: Bins | Mapping[str, Bins] = "decades",
    mode: str = "final",
) -> HeatmapInfo:
    """Aggregate trial accuracies into the cells of a pair of hyperparameters.

    Parameters
    ----------
    results : pandas.DataFrame
        The output of :func:`final_results` (columns ``trial_id``, ``acc``, ``config`` and the
        hyperparameters).
    x, y : str
        The hyperparameters on the horizontal and vertical axes.
    space : Mapping of str to ParamSpec
        The experiment's space (``Experiment.space``).
    bins : "decades", int, sequence of float, or a Mapping from parameter name to those
        Binning of continuous axes, see :func:`axis_bins`. Grid and categorical axes always
        have one cell per value.
    mode : str
        The view (:mod:`analysis.data.views`), recorded in the result for labels.

    Returns
    -------
    HeatmapInfo

    Raises
    ------
    ValueError
        If ``x`` or ``y`` is not a searched parameter of ``space``.
    """
    for name, param in (("x", x), ("y", y)):
        if param not in space or not space[param].searched:
            searched = [p for p, s in space.items() if s.searched]
            raise ValueError(
                f"The {name!r} parameter must be one of the searched parameters {searched}. "
                f"Got {param!r} instead."
            )
    axes = []
    for param in (x, y):
        param_bins = bins.get(param, "decades") if isinstance(bins, Mapping) else bins
        axes.append(axis_bins(space[param], results[param], param_bins))
    x_axis, y_axis = axes
    ix, iy = x_axis.assign(results[x]), y_axis.assign(results[y])
    placed = (ix >= 0) & (iy >= 0)
    shape = (len(y_axis), len(x_axis))
    best = np.full(shape, np.nan)
    mean = np.full(shape, np.nan)
    count = np.zeros(shape, dtype=int)
    best_trial = np.full(shape, "", dtype=object)
    best_config = np.full(shape, "", dtype=object)
    cells = results.assign(_ix=ix, _iy=iy)[placed]
    for (cy, cx), group in cells.groupby(["_iy", "_ix"]):
        top = trial_model.rank(group, "acc").iloc[0]
        best[cy, cx], mean[cy, cx], count[cy, cx] = top["acc"], group["acc"].mean(), len(group)
        best_trial[cy, cx], best_config[cy, cx] = str(top["trial_id"]), str(top["config"])
    best_cell: tuple[int, int] | None = None
    best_trial_id: str | None = None
    if len(cells):
        top = trial_model.rank(cells, "acc").iloc[0]
        best_cell, best_trial_id = (int(top["_iy"]), int(top["_ix"])), str(top["trial_id"])
    trial_cells = {str(t): (int(cy), int(cx)) for t, cy, cx in zip(cells["trial_id"], cells["_iy"], cells["_ix"], strict=True)}
    return HeatmapInfo(
        x_axis, y_axis, best, mean, count, best_trial, best_config, best_cell, best_trial_id,
        n_trials=int(placed.sum()), n_unplaced=int((~placed).sum()), mode=mode, cells=trial_cells,
    )


def color_range(infos: Iterable[HeatmapInfo]) -> tuple[float, float] | None:
    """One colour scale for several heatmaps: the lowest and highest cell value (best accuracy of a
    cell, in [0, 1]) over all of them, None when no cell holds a trial.

    The dashboard gives every heatmap of one task (every pair of hyperparameters, every view, every
    search of that task) this range, so that one colour means one accuracy across them; a range of
    zero width is widened by 0.5 points on each side so that it still draws.
    """
    values = [info.best[np.isfinite(info.best)] for info in infos]
    finite = np.concatenate(values) if values else np.array([])
    if not finite.size:
        return None
    low, high = float(finite.min()), float(finite.max())
    if high <= low:
        low, high = low - 0.005, high + 0.005
    return low, high


def heatmap_notes(info: HeatmapInfo) -> str:
    """The note under a heatmap: blank cells, how values on cell edges are placed, trials off the
    axes (both backends print it)."""
    notes = ["blank: no trial"]
    axes = (info.x, info.y)
    if any(axis.centers for axis in axes):
        notes.append("log cells centred on decades, [10^(k-½), 10^(k+½)): a value on a "
                     "half-decade edge is in the cell above it")
    if any(axis.kind in ("log", "linear") and not axis.centers for axis in axes):
        notes.append("bins [a, b): a value on an edge is in the cell it opens")
    if info.n_unplaced:
        notes.append(f"{info.n_unplaced} trial(s) off the axes not shown")
    return "; ".join(notes)
