"""Tidy frames computed from experiments: the data behind every figure, without any drawing.

The pipeline is ``load_experiments`` -> :func:`trial_table` (one row per trial) ->
:func:`final_results` (one accuracy per trial, under an explicit ``mode``) -> :func:`heatmap_info`
(cells of a pair of hyperparameters). Figures (``analysis.figures``) only draw these.

Early-stopped and diverged trials are never mixed silently with completed ones: ``mode="final"``
(the default) keeps the trials that reached the last epoch and scores them by their final-epoch
accuracy; ``mode="best"`` also keeps early-stopped (and still running) trials and scores every
trial by the best accuracy it reached. Diverged and errored trials are in neither.
"""

from __future__ import annotations

import importlib.util
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

from analysis.experiments import STATUSES, Experiment, ParamSpec, Problem

__all__ = [
    "Mode",
    "MODES",
    "MODE_LABELS",
    "Bins",
    "AxisBins",
    "HeatmapInfo",
    "trial_table",
    "final_results",
    "learning_curves",
    "source_only_accuracy",
    "axis_bins",
    "heatmap_info",
    "param_pairs",
    "format_value",
    "format_config",
    "paper_accuracy_path",
    "read_paper_accuracy",
    "cross_task_table",
]

Mode = Literal["final", "best"]
MODES: tuple[Mode, ...] = ("final", "best")

#: How each mode is named on figures and in the dashboard.
MODE_LABELS: dict[Mode, str] = {
    "final": "final-epoch accuracy (trials that reached the last epoch)",
    "best": "best accuracy reached (includes early-stopped trials)",
}

#: Statuses of trials that may have produced a meaningful accuracy.
_USABLE = ("completed", "early-stopped", "running")

#: How to bin continuous axes: ``"decades"`` (on log axes one cell centred on each power of ten,
#: ``[10^(k-1/2), 10^(k+1/2))``, as the paper's grid has one value per decade; 5 equal bins on
#: linear axes), a number of equal-width bins (in log space on log axes), or explicit edges.
Bins = Literal["decades"] | int | Sequence[float]

#: Relative tolerance under which a value counts as lying on a cell edge (survives a CSV round
#: trip) or equal to a grid value.
_RTOL = 1e-9

_PAPER_FILE = "paper_accuracy.csv"


def format_value(value: Any) -> str:
    """Format a hyperparameter value compactly: ``0.001``, ``1``, ``10``, ``0.316``, ``256``."""
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        number = float(value)
        if not math.isfinite(number):
            return str(number)
        if number.is_integer() and abs(number) < 1e6:
            return str(int(number))
        return f"{number:.3g}"
    return str(value)


def format_config(row: Mapping[str, Any], params: Sequence[str]) -> str:
    """Return ``"lambda_ot=1, lambda_ent=0.1, ..."`` for the given parameters of ``row``."""
    return ", ".join(f"{p}={format_value(row[p])}" for p in params if p in row)


# --------------------------------------------------------------------------------------------
# Trials
# --------------------------------------------------------------------------------------------


def _without_placeholders(trials: pd.DataFrame) -> pd.DataFrame:
    """Drop the placeholder last row of each diverged trial (its accuracy is not a result)."""
    diverged = trials["status"] == "diverged"
    if not diverged.any():
        return trials
    last = trials.groupby("trial_id", sort=False)["epoch"].transform("max") == trials["epoch"]
    return trials[~(diverged & last)]


def _last_reason(reasons: pd.Series) -> str:
    """The last non-empty ``reason`` of a trial, or ``""``."""
    present = reasons.dropna().astype(str).str.strip()
    present = present[present != ""]
    return str(present.iloc[-1]) if len(present) else ""


def trial_table(experiment: Experiment) -> pd.DataFrame:
    """One row per trial of an experiment.

    Parameters
    ----------
    experiment : Experiment
        A loaded experiment.

    Returns
    -------
    pandas.DataFrame
        Columns: ``experiment`` (its key), ``task``, ``trial_id``, the experiment's
        hyperparameters, ``status``, ``reason``, ``n_epochs`` (last epoch recorded),
        ``reached_final`` (``n_epochs >= max_epochs`` and not diverged or errored),
        ``final_acc`` (accuracy at the last epoch of a trial that reached it, else NaN),
        ``best_acc`` and ``best_epoch`` (best accuracy over its real epochs; the placeholder row
        of a diverged trial is not one), ``config`` (its hyperparameters as text). A trial that
        recorded no epoch has ``n_epochs`` 0 and NaN accuracies.
    """
    trials = experiment.trials
    params = list(experiment.space)
    grouped = trials.groupby("trial_id", sort=True)
    table = grouped[params + ["status"]].last()
    table["reason"] = grouped["reason"].agg(_last_reason) if "reason" in trials else ""
    table["n_epochs"] = grouped["epoch"].max().astype(int)
    valid = _without_placeholders(trials).dropna(subset=["target_acc"])
    best_rows = valid.loc[valid.groupby("trial_id")["target_acc"].idxmax()].set_index("trial_id")
    table["best_acc"] = best_rows["target_acc"]
    table["best_epoch"] = best_rows["epoch"]
    usable = table["status"].isin(_USABLE)
    table["reached_final"] = usable & (table["n_epochs"] >= experiment.max_epochs)
    table["final_acc"] = grouped["target_acc"].last().where(table["reached_final"])
    table = table.reset_index()
    if len(experiment.unstarted):
        unstarted = experiment.unstarted.reindex(columns=["trial_id", *params, "status", "reason"])
        unstarted = unstarted.assign(n_epochs=0, reached_final=False, reason=lambda t: t["reason"]
                                     .fillna("").astype(str))
        table = pd.concat([table, unstarted], ignore_index=True) if len(table) else unstarted
        table = table.sort_values("trial_id", kind="stable").reset_index(drop=True)
    table = table.reindex(columns=[
        "trial_id", *params, "status", "reason", "n_epochs", "best_acc", "best_epoch",
        "reached_final", "final_acc",
    ])
    table["reached_final"] = table["reached_final"].astype(bool)
    table["config"] = [format_config(row, params) for row in table[params].to_dict("records")]
    table.insert(0, "task", experiment.task)
    table.insert(0, "experiment", experiment.key)
    return table


def final_results(table: pd.DataFrame, mode: Mode = "final") -> pd.DataFrame:
    """Select the trials that count under ``mode`` and give each one accuracy, ``acc``.

    Parameters
    ----------
    table : pandas.DataFrame
        The output of :func:`trial_table`.
    mode : {"final", "best"}
        ``"final"``: trials that reached the last epoch, scored by their final-epoch accuracy.
        ``"best"``: every completed, early-stopped or still running trial, scored by the best
        accuracy it reached. Diverged and errored trials are left out in both.

    Returns
    -------
    pandas.DataFrame
        The selected rows of ``table`` with an added column ``acc``, highest first.

    Raises
    ------
    ValueError
        If ``mode`` is not ``"final"`` or ``"best"``.
    """
    if mode == "final":
        selected = table[table["reached_final"]].assign(acc=lambda t: t["final_acc"])
    elif mode == "best":
        selected = table[table["status"].isin(_USABLE)].assign(acc=lambda t: t["best_acc"])
    else:
        raise ValueError(
            f"The 'mode' parameter must be one of {list(MODES)}. Got {mode!r} instead."
        )
    selected = selected.dropna(subset=["acc"])
    return selected.sort_values(["acc", "trial_id"], ascending=[False, True]).reset_index(drop=True)


def learning_curves(experiment: Experiment) -> pd.DataFrame:
    """Target accuracy per epoch for every trial, ready to draw.

    Returns
    -------
    pandas.DataFrame
        Columns ``trial_id``, ``epoch``, ``target_acc``, ``status``, ``config`` and ``is_last``
        (the trial's last real epoch, where an ASHA stop or a divergence is marked). The
        placeholder row of a diverged trial is dropped.
    """
    params = list(experiment.space)
    curves = _without_placeholders(experiment.trials).dropna(subset=["target_acc"])
    curves = curves.sort_values(["trial_id", "epoch"])
    configs = {
        row["trial_id"]: format_config(row, params)
        for row in curves.groupby("trial_id")[params].first().reset_index().to_dict("records")
    }
    out = curves[["trial_id", "epoch", "target_acc", "status"]].copy()
    out["config"] = out["trial_id"].map(configs)
    out["is_last"] = ~out["trial_id"].duplicated(keep="last")
    return out.reset_index(drop=True)


def source_only_accuracy(experiment: Experiment) -> float | None:
    """Target accuracy before adaptation (the median of ``source_only_target_acc``), if recorded.

    ``tune/`` may add this optional column to ``trials.csv``: the accuracy of the
    source-pretrained model on the target, the baseline that adaptation must beat.
    """
    if "source_only_target_acc" not in experiment.trials:
        return None
    values = pd.to_numeric(experiment.trials["source_only_target_acc"], errors="coerce").dropna()
    return float(values.median()) if len(values) else None


# --------------------------------------------------------------------------------------------
# Binning and heatmaps
# --------------------------------------------------------------------------------------------


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
    mode : {"final", "best"}
        Which accuracy the cells hold.
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
    mode: Mode


def heatmap_info(
    results: pd.DataFrame,
    x: str,
    y: str,
    space: Mapping[str, ParamSpec],
    *,
    bins: Bins | Mapping[str, Bins] = "decades",
    mode: Mode = "final",
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
    mode : {"final", "best"}
        Recorded in the result, for labels.

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
        top = group.loc[group["acc"].idxmax()]
        best[cy, cx], mean[cy, cx], count[cy, cx] = top["acc"], group["acc"].mean(), len(group)
        best_trial[cy, cx], best_config[cy, cx] = str(top["trial_id"]), str(top["config"])
    best_cell: tuple[int, int] | None = None
    best_trial_id: str | None = None
    if len(cells):
        top = cells.loc[cells["acc"].idxmax()]
        best_cell, best_trial_id = (int(top["_iy"]), int(top["_ix"])), str(top["trial_id"])
    return HeatmapInfo(
        x_axis, y_axis, best, mean, count, best_trial, best_config, best_cell, best_trial_id,
        n_trials=int(placed.sum()), n_unplaced=int((~placed).sum()), mode=mode,
    )


def param_pairs(space: Mapping[str, ParamSpec]) -> list[tuple[str, str]]:
    """Every pair of searched parameters, the paper's ``(lambda_ot, lambda_ent)`` first."""
    searched = [p for p, s in space.items() if s.searched]
    pairs = [(a, b) for i, a in enumerate(searched) for b in searched[i + 1 :]]
    paper = ("lambda_ot", "lambda_ent")
    return sorted(pairs, key=lambda pair: pair != paper)


# --------------------------------------------------------------------------------------------
# Paper comparison
# --------------------------------------------------------------------------------------------


def paper_accuracy_path() -> Path:
    """Locate the project's copy of the paper's reported accuracies.

    Uses the installed ``ssot`` package's folder without importing it (analysis never loads
    torch); falls back to ``ssot/`` beside this package in a source checkout.
    """
    spec = importlib.util.find_spec("ssot")
    if spec is not None and spec.submodule_search_locations:
        candidate = Path(list(spec.submodule_search_locations)[0]) / _PAPER_FILE
        if candidate.is_file():
            return candidate
    return Path(__file__).resolve().parent.parent / "ssot" / _PAPER_FILE


def read_paper_accuracy(
    path: Path | None = None, problems: list[Problem] | None = None
) -> pd.DataFrame:
    """Read the paper's reported accuracies (percent), indexed by task.

    Parameters
    ----------
    path : Path, optional
        The CSV (columns ``dataset, task, source, target, ssot_acc, source_only_acc,
        best_other_method, best_other_acc``); defaults to :func:`paper_accuracy_path`.
    problems : list of Problem, optional
        A missing or unreadable file is reported here and an empty frame returned.
    """
    path = path or paper_accuracy_path()
    columns = ["dataset", "ssot_acc", "source_only_acc", "best_other_method", "best_other_acc"]
    try:
        paper = pd.read_csv(path, dtype={"task": str})
        paper = paper.set_index("task")[columns]
    except (OSError, ValueError, KeyError, pd.errors.ParserError) as exc:
        if problems is not None:
            problems.append(
                Problem(path, f"the paper's accuracies cannot be read ({exc}); the cross-task "
                        "table shows no paper numbers")
            )
        return pd.DataFrame(columns=columns, index=pd.Index([], name="task"))
    return paper


def _paper_row(paper: pd.DataFrame, task: str) -> dict[str, Any]:
    """The paper's numbers for a task (NaN and ``""`` when the paper does not report it)."""
    if task in paper.index:
        row = paper.loc[task]
        return {
            "dataset": str(row["dataset"]), "ssot_acc": float(row["ssot_acc"]),
            "source_only_acc": float(row["source_only_acc"]),
            "best_other_method": str(row["best_other_method"]),
            "best_other_acc": float(row["best_other_acc"]),
        }
    return {"dataset": "", "ssot_acc": np.nan, "source_only_acc": np.nan,
            "best_other_method": "", "best_other_acc": np.nan}


def cross_task_table(
    experiments: Sequence[Experiment], paper: pd.DataFrame | None = None
) -> pd.DataFrame:
    """The best accuracy of each experiment beside the paper's (all accuracies in percent).

    Returns
    -------
    pandas.DataFrame
        One row per experiment: ``experiment``, ``task``, ``dataset``, ``name``, ``search``,
        ``status``, the number of trials per status (``n_completed``, ``n_early-stopped``, ...),
        ``best_final`` and ``best_reached`` (%, NaN when no trial qualifies), ``best_trial``
        (of ``best_final``), ``source_only`` (our accuracy before adaptation, % or NaN),
        ``paper_ssot``, ``delta`` (``best_final - paper_ssot``),
        ``paper_source_only``, ``best_other_method``, ``best_other``.
    """
    paper = paper if paper is not None else pd.DataFrame()
    rows = []
    for experiment in experiments:
        table = trial_table(experiment)
        final, best = final_results(table, "final"), final_results(table, "best")
        counts = table["status"].value_counts()
        reported = _paper_row(paper, experiment.task)
        row: dict[str, Any] = {
            "experiment": experiment.key, "task": experiment.task,
            "dataset": experiment.dataset or reported["dataset"], "name": experiment.name,
            "search": experiment.search, "status": experiment.status, "n_trials": len(table),
        }
        row.update({f"n_{status}": int(counts.get(status, 0)) for status in STATUSES})
        row["best_final"] = 100 * final["acc"].iloc[0] if len(final) else np.nan
        row["best_reached"] = 100 * best["acc"].iloc[0] if len(best) else np.nan
        row["best_trial"] = str(final["trial_id"].iloc[0]) if len(final) else ""
        source_only = source_only_accuracy(experiment)
        row["source_only"] = 100 * source_only if source_only is not None else np.nan
        row["paper_ssot"] = reported["ssot_acc"]
        row["delta"] = row["best_final"] - row["paper_ssot"]
        row["paper_source_only"] = reported["source_only_acc"]
        row["best_other_method"] = reported["best_other_method"]
        row["best_other"] = reported["best_other_acc"]
        rows.append(row)
    return pd.DataFrame(rows)

