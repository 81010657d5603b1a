"""Plotly parallel coordinates: each trial of a view from its hyperparameters to its accuracy."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.colors import sample_colorscale

from analysis.charts.style import COLORSCALE, TEMPLATE, add_marks, empty_figure, figure_title, param_label
from analysis.data.experiments import ParamSpec
from analysis.data.frames import format_value
from analysis.data.views import view_subtitle

__all__ = ["parallel_figure"]


def _axis_scale(
    spec: ParamSpec, values: pd.Series
) -> tuple[np.ndarray, list[tuple[float, str]]]:
    """Positions in [0, 1] of ``values`` on a parameter's axis, and its (position, label) ticks."""
    if spec.kind in ("grid", "categorical"):
        choices = list(spec.values)
        extra = [v for v in pd.unique(values) if not any(_same(v, c) for c in choices)]
        choices += sorted(extra, key=str)
        n = max(len(choices) - 1, 1)
        index = [next(i for i, c in enumerate(choices) if _same(v, c)) for v in values]
        ticks = [(i / n, format_value(c)) for i, c in enumerate(choices)]
        return np.asarray(index, dtype=float) / n, ticks
    numeric = pd.to_numeric(values, errors="coerce").to_numpy(dtype=float)
    low = min(float(spec.low), float(np.nanmin(numeric)))  # type: ignore[arg-type]
    high = max(float(spec.high), float(np.nanmax(numeric)))  # type: ignore[arg-type]
    if spec.kind == "log":
        lo, hi = math.log10(low), math.log10(high)
        span = (hi - lo) or 1.0
        tick_list = [
            ((k - lo) / span, format_value(float(f"1e{k}")))
            for k in range(math.ceil(lo - 1e-9), math.floor(hi + 1e-9) + 1)
        ]
        return (np.log10(numeric) - lo) / span, tick_list
    span = (high - low) or 1.0
    tick_list = [((v - low) / span, format_value(v)) for v in np.linspace(low, high, 5)]
    return (numeric - low) / span, tick_list


def _same(a: Any, b: Any) -> bool:
    try:
        return math.isclose(float(a), float(b), rel_tol=1e-9)
    except (TypeError, ValueError):
        return str(a) == str(b)


def parallel_figure(
    results: pd.DataFrame, space: Mapping[str, ParamSpec], mode: str, title: str = "",
    n_colors: int = 8,
) -> go.Figure:
    """Parallel coordinates of the searched hyperparameters to the accuracy.

    Each trial is a line across one vertical axis per hyperparameter (log axes in decades) and a
    last axis of accuracy, coloured by accuracy; the best trials are drawn on top. Hovering a
    vertex shows the trial id and its config.

    Parameters
    ----------
    results : pandas.DataFrame
        From ``final_results``.
    space : Mapping of str to ParamSpec
        The experiment's space.
    mode : str
        The view ``results`` was selected under (:mod:`analysis.data.views`; for the subtitle, with the
        number of trials).
    title : str
        Figure title.
    n_colors : int
        Lines are drawn in this many colour steps of the colour scale.
    """
    params = [p for p, s in space.items() if s.searched and p in results]
    if results.empty or not params:
        return empty_figure(title, view_subtitle(mode, 0), "no trial in this view")
    results = results.sort_values("acc")
    acc = 100 * results["acc"].to_numpy(dtype=float)
    acc_low, acc_high = float(acc.min()), float(acc.max())
    acc_span = (acc_high - acc_low) or 1.0
    columns, ticks = [], []
    for param in params:
        position, axis_ticks = _axis_scale(space[param], results[param])
        columns.append(position)
        ticks.append(axis_ticks)
    columns.append((acc - acc_low) / acc_span)
    acc_ticks = np.linspace(acc_low, acc_high, 5)
    ticks.append([((v - acc_low) / acc_span, f"{v:.1f}") for v in acc_ticks])
    names = [param_label(p) for p in params] + ["target acc (%)"]
    matrix = np.stack(columns, axis=1)
    level = np.minimum(((acc - acc_low) / acc_span * n_colors).astype(int), n_colors - 1)
    colors = sample_colorscale(COLORSCALE, [(i + 0.5) / n_colors for i in range(n_colors)])
    figure = go.Figure()
    x_positions = list(range(len(names)))
    hover_rows = [
        f"trial {t}<br>acc {a:.2f}%<br>{c}"
        for t, a, c in zip(results["trial_id"], acc, results["config"], strict=True)
    ]
    for step in range(n_colors):
        rows = np.flatnonzero(level == step)
        if not len(rows):
            continue
        xs: list[Any] = []
        ys: list[Any] = []
        texts: list[Any] = []
        for row in rows:
            xs += x_positions + [None]
            ys += matrix[row].tolist() + [None]
            texts += [hover_rows[row]] * len(names) + [None]
        figure.add_trace(
            go.Scatter(
                x=xs, y=ys, mode="lines+markers", line={"color": colors[step], "width": 1.5},
                marker={"size": 4, "color": colors[step]}, opacity=0.75, hovertext=texts,
                hovertemplate="%{hovertext}<extra></extra>", showlegend=False,
            )
        )
    figure.add_trace(  # invisible markers that carry the colour bar
        go.Scatter(
            x=[x_positions[-1]] * len(acc), y=matrix[:, -1], mode="markers", showlegend=False,
            marker={"size": 7, "color": acc, "colorscale": COLORSCALE, "showscale": True,
                    "colorbar": {"title": {"text": "target acc (%)"}}},
            hovertext=hover_rows, hovertemplate="%{hovertext}<extra></extra>",
        )
    )
    shapes = [
        {"type": "line", "x0": x, "x1": x, "y0": 0, "y1": 1, "line": {"color": "#444", "width": 1}}
        for x in x_positions
    ]
    annotations = [
        {"x": x, "y": position, "text": label, "showarrow": False, "xanchor": "right",
         "xshift": -4, "font": {"size": 10, "color": "#333"}, "bgcolor": "rgba(255,255,255,0.7)"}
        for x, axis_ticks in zip(x_positions, ticks, strict=True)
        for position, label in axis_ticks
    ]
    figure.update_layout(
        title=figure_title(title, view_subtitle(mode, len(results))), template=TEMPLATE, height=460,
        shapes=shapes, annotations=annotations,
        xaxis={"tickmode": "array", "tickvals": x_positions, "ticktext": names,
               "showgrid": False, "zeroline": False, "range": [-0.5, len(names) - 0.7]},
        yaxis={"visible": False, "range": [-0.05, 1.05]}, hovermode="closest",
        margin={"t": 70},
    )
    marks = {str(t): (x_positions, matrix[row].tolist()) for row, t in enumerate(results["trial_id"])}
    return add_marks(figure, marks, lines=True)
