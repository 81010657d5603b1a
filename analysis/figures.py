"""Plotly figure builders. Each one only draws an info object or frame from ``analysis.frames``.

All figures are plain SVG traces (no WebGL), so they render in any browser, headless ones and
static exports included. Accuracies are shown in percent.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from analysis.bins import HeatmapInfo
from analysis.views import view_subtitle
from tune import schema

__all__ = [
    "PARAM_LABELS",
    "param_label",
    "heatmap_figure",
    "learning_curves_figure",
]

#: Axis titles of the known hyperparameters (Plotly's HTML subset).
PARAM_LABELS: dict[str, str] = {
    "lambda_ot": "λ<sub>OT</sub>",
    "lambda_ent": "λ<sub>Ent</sub>",
    "eps": "ε",
    "potential_width": "potential width",
}

COLORSCALE = "Viridis"

#: Line colour and marker of each trial status in the learning curves.
STATUS_STYLE: dict[str, dict[str, str]] = {
    schema.COMPLETED: {"color": "#1f77b4", "symbol": "circle", "end": ""},
    schema.EARLY_STOPPED: {"color": "#ff7f0e", "symbol": "x", "end": "stopped by ASHA"},
    schema.DIVERGED: {"color": "#d62728", "symbol": "diamond-x", "end": "diverged"},
    schema.ERRORED: {"color": "#7f7f7f", "symbol": "square-x", "end": "errored"},
    schema.RUNNING: {"color": "#2ca02c", "symbol": "triangle-right", "end": "still running"},
}
assert set(STATUS_STYLE) == set(schema.STATUSES)

_FONT = {"family": "Helvetica, Arial, sans-serif", "size": 13}

#: A small template: Plotly's own ones are costly to copy into hundreds of figures.
TEMPLATE = go.layout.Template(
    layout={
        "font": _FONT,
        "paper_bgcolor": "white",
        "plot_bgcolor": "white",
        "xaxis": {"gridcolor": "#ebebeb", "zeroline": False, "linecolor": "#bbb"},
        "yaxis": {"gridcolor": "#ebebeb", "zeroline": False, "linecolor": "#bbb"},
        "hoverlabel": {"align": "left"},
    }
)


def param_label(param: str) -> str:
    """The display name of a hyperparameter."""
    return PARAM_LABELS.get(param, param)


def _title(text: str, subtitle: str = "") -> dict[str, Any]:
    full = f"{text}<br><sup>{subtitle}</sup>" if subtitle else text
    return {"text": full, "x": 0.0, "xanchor": "left", "font": {"size": 15}}


def _empty_figure(title: str, subtitle: str, message: str) -> go.Figure:
    """A figure that says why it has nothing to draw."""
    figure = go.Figure()
    figure.add_annotation(
        text=message, x=0.5, y=0.5, xref="paper", yref="paper", showarrow=False,
        font={"size": 14, "color": "#555"},
    )
    figure.update_layout(
        title=_title(title, subtitle), xaxis={"visible": False}, yaxis={"visible": False},
        template=TEMPLATE, height=420, margin={"t": 70},
    )
    return figure


# --------------------------------------------------------------------------------------------
# Heatmap
# --------------------------------------------------------------------------------------------


def _cell_hover(info: HeatmapInfo, cy: int, cx: int) -> str:
    x, y = info.x, info.y
    head = f"{x.param} {x.hover_labels[cx]}<br>{y.param} {y.hover_labels[cy]}"
    if info.count[cy, cx] == 0:
        return f"{head}<br>no trial"
    star = "<br><b>★ best trial overall</b>" if info.best_cell == (cy, cx) else ""
    return (
        f"{head}{star}<br>best acc {100 * info.best[cy, cx]:.2f}%"
        f"<br>mean acc {100 * info.mean[cy, cx]:.2f}%"
        f"<br>trials {info.count[cy, cx]}"
        f"<br>best trial {info.best_trial[cy, cx]}<br>{info.best_config[cy, cx]}"
    )


def _cell_text(info: HeatmapInfo, show_values: bool) -> list[list[str]]:
    """Each cell's best accuracy (if shown); the best cell gets a star."""
    text = [["" for _ in range(len(info.x))] for _ in range(len(info.y))]
    for cy in range(len(info.y)):
        for cx in range(len(info.x)):
            if info.count[cy, cx] and show_values:
                text[cy][cx] = f"{100 * info.best[cy, cx]:.1f}"
    if info.best_cell is not None:
        cy, cx = info.best_cell
        text[cy][cx] = f"★ {text[cy][cx]}".strip()
    return text


def _heatmap_notes(info: HeatmapInfo) -> str:
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


def heatmap_figure(info: HeatmapInfo, title: str = "", *, show_values: bool = True) -> go.Figure:
    """Draw a sensitivity heatmap: each cell's best accuracy, the best trial's cell starred.

    Parameters
    ----------
    info : HeatmapInfo
        From ``heatmap_info``.
    title : str
        Figure title (the view's label and number of trials are added below it).
    show_values : bool
        Print each cell's best accuracy in it, as in the paper's figure.

    Notes
    -----
    Cells without a trial are blank (NaN), never interpolated. The best trial's cell is outlined
    and starred. Hover shows the cell's label (and, on a decade-centred log axis, its exact
    interval, e.g. ``1e-3: [3.2e-4, 3.2e-3)``), best and mean accuracy, number of trials, and
    its best trial's id and config.
    """
    subtitle = view_subtitle(info.mode, info.n_trials + info.n_unplaced)
    if info.n_trials == 0:
        return _empty_figure(title, subtitle, "no trial in this view")
    hover = [[_cell_hover(info, cy, cx) for cx in range(len(info.x))] for cy in range(len(info.y))]
    heatmap = go.Heatmap(
        z=100 * info.best, x=list(info.x.labels), y=list(info.y.labels), customdata=hover,
        text=_cell_text(info, show_values), texttemplate="%{text}",
        hovertemplate="%{customdata}<extra></extra>", hoverongaps=False,
        colorscale=COLORSCALE, colorbar={"title": {"text": "target acc (%)", "side": "right"}},
        xgap=1, ygap=1, name="cells",
    )
    figure = go.Figure(heatmap)
    shapes = []
    if info.best_cell is not None:
        cy, cx = info.best_cell
        shapes.append(
            {"type": "rect", "x0": cx - 0.5, "x1": cx + 0.5, "y0": cy - 0.5, "y1": cy + 0.5,
             "line": {"color": "#e6194b", "width": 3}, "xref": "x", "yref": "y"}
        )
    axis = {"type": "category", "categoryorder": "array", "showgrid": False, "automargin": True}
    figure.update_layout(
        title=_title(title, subtitle), template=TEMPLATE, shapes=shapes,
        xaxis={**axis, "title": {"text": param_label(info.x.param), "standoff": 8},
               "categoryarray": list(info.x.labels)},
        yaxis={**axis, "title": {"text": param_label(info.y.param), "standoff": 8},
               "categoryarray": list(info.y.labels)},
        plot_bgcolor="#f4f4f4", height=460, margin={"t": 70, "b": 90},
        annotations=[
            {"text": _heatmap_notes(info), "x": 0, "y": -0.24, "xref": "paper", "yref": "paper",
             "showarrow": False, "xanchor": "left", "font": {"size": 10, "color": "#666"}}
        ],
    )
    return figure


# --------------------------------------------------------------------------------------------
# Learning curves
# --------------------------------------------------------------------------------------------


def _with_gaps(curves: pd.DataFrame, columns: Sequence[str]) -> dict[str, list[Any]]:
    """Concatenate per-trial lines into one trace, separated by None gaps."""
    out: dict[str, list[Any]] = {c: [] for c in columns}
    for _, trial in curves.groupby("trial_id", sort=False):
        for column in columns:
            out[column].extend(trial[column].tolist() + [None])
    return out


def curves_subtitle(curves: pd.DataFrame) -> str:
    """The learning curves' subtitle, with their number of trials (shared by both renderers)."""
    n_trials = curves["trial_id"].nunique() if len(curves) else 0
    return f"target accuracy per epoch of every trial ({n_trials}); markers: where a trial stopped"


def learning_curves_figure(
    curves: pd.DataFrame, max_epochs: int, title: str = "", source_only: float | None = None
) -> go.Figure:
    """Target accuracy per epoch of every trial, coloured by status.

    The last epoch of an early-stopped trial carries an ``x`` (ASHA's stop), that of a diverged
    or errored trial its own marker; hovering a line shows the trial id and its config.

    Parameters
    ----------
    curves : pandas.DataFrame
        From ``learning_curves``.
    max_epochs : int
        The search's last epoch (a dotted line).
    title : str
        Figure title.
    source_only : float, optional
        Target accuracy before adaptation, in [0, 1] (a dashed line).
    """
    subtitle = curves_subtitle(curves)
    if curves.empty:
        return _empty_figure(title, subtitle, "no epoch recorded")
    figure = go.Figure()
    for status, style in STATUS_STYLE.items():
        group = curves[curves["status"] == status]
        if group.empty:
            continue
        n_trials = group["trial_id"].nunique()
        line = _with_gaps(group, ["epoch", "target_acc", "trial_id", "config"])
        acc = [None if v is None else 100 * v for v in line["target_acc"]]
        figure.add_trace(
            go.Scatter(
                x=line["epoch"], y=acc, mode="lines", name=f"{status} ({n_trials})",
                legendgroup=status, line={"color": style["color"], "width": 1.2},
                opacity=0.55,
                customdata=list(zip(line["trial_id"], line["config"], strict=True)),
                hovertemplate=(
                    "trial %{customdata[0]}<br>epoch %{x}: %{y:.2f}%<br>%{customdata[1]}"
                    f"<extra>{status}</extra>"
                ),
            )
        )
        if style["end"]:
            ends = group[group["is_last"]]
            figure.add_trace(
                go.Scatter(
                    x=ends["epoch"], y=100 * ends["target_acc"], mode="markers",
                    name=style["end"], legendgroup=status, showlegend=True,
                    marker={"symbol": style["symbol"], "size": 9, "color": style["color"],
                            "line": {"width": 1, "color": style["color"]}},
                    customdata=np.stack([ends["trial_id"], ends["config"]], axis=-1),
                    hovertemplate=(
                        "trial %{customdata[0]}<br>" + style["end"] + " after epoch %{x}"
                        "<br>acc %{y:.2f}%<br>%{customdata[1]}<extra></extra>"
                    ),
                )
            )
    if max_epochs:
        figure.add_vline(x=max_epochs, line={"dash": "dot", "color": "#999", "width": 1})
    if source_only is not None:
        figure.add_hline(
            y=100 * source_only, line={"dash": "dash", "color": "#555", "width": 1},
            annotation_text=f"source only {100 * source_only:.1f}%",
            annotation_position="bottom right", annotation_font_size=10,
        )
    figure.update_layout(
        title=_title(title, subtitle), template=TEMPLATE, height=460,
        xaxis={"title": {"text": "epoch"}, "rangemode": "tozero"},
        yaxis={"title": {"text": "target accuracy (%)"}}, hovermode="closest",
        legend={"itemclick": "toggle", "itemdoubleclick": "toggleothers"},
        margin={"t": 70},
    )
    return figure


# --------------------------------------------------------------------------------------------
# Parallel coordinates
# --------------------------------------------------------------------------------------------
