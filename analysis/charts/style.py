"""The Plotly figures' shared style: template, colour scale, axis names, titles, empty figures.

Every Plotly builder of :mod:`analysis.charts` uses these; the colours and markers per trial
status, shared with matplotlib, are :data:`analysis.style.STATUS_STYLE`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import plotly.graph_objects as go

__all__ = ["PARAM_LABELS", "COLORSCALE", "TEMPLATE", "MARK_TRACE", "param_label", "figure_title", "empty_figure",
           "add_marks"]

#: Axis titles of the known hyperparameters (Plotly's HTML subset).
PARAM_LABELS: dict[str, str] = {
    "lambda_ot": "λ<sub>OT</sub>",
    "lambda_ent": "λ<sub>Ent</sub>",
    "eps": "ε",
    "potential_width": "potential width",
}

COLORSCALE = "Viridis"

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


def figure_title(text: str, subtitle: str = "") -> dict[str, Any]:
    """A figure title with its subtitle (Plotly's ``<sup>``), left-aligned."""
    full = f"{text}<br><sup>{subtitle}</sup>" if subtitle else text
    return {"text": full, "x": 0.0, "xanchor": "left", "font": {"size": 15}}


def empty_figure(text: str, subtitle: str, message: str) -> go.Figure:
    """A figure that says why it has nothing to draw."""
    figure = go.Figure()
    figure.add_annotation(
        text=message, x=0.5, y=0.5, xref="paper", yref="paper", showarrow=False,
        font={"size": 14, "color": "#555"},
    )
    figure.update_layout(
        title=figure_title(text, subtitle), xaxis={"visible": False}, yaxis={"visible": False},
        template=TEMPLATE, height=420, margin={"t": 70},
    )
    return figure


#: The name of the trace that marks the trial selected in the dashboard's trial table: a figure's
#: last trace, empty until a trial is selected.
MARK_TRACE = "selected trial"
_MARK_COLOR = "#ff1493"


def add_marks(figure: go.Figure, marks: Mapping[str, tuple[Sequence[Any], Sequence[Any]]], *, lines: bool = False) -> go.Figure:
    """Let the dashboard mark one trial on ``figure``.

    Adds an empty last trace (:data:`MARK_TRACE`) and stores where each trial lies in the
    figure's ``layout.meta["marks"]`` (trial id -> ``[xs, ys]``); the page's script copies the
    selected trial's coordinates into that trace (``analysis/dashboard/templates/dashboard.js``).

    Parameters
    ----------
    figure : plotly.graph_objects.Figure
    marks : Mapping of str to (xs, ys)
        Each trial's points on this figure (one cell, one point, or a line).
    lines : bool
        Draw the mark as a line through its points (learning curves, parallel coordinates)
        instead of open circles (heatmap cells, points).
    """
    style: dict[str, Any] = (
        {"mode": "lines+markers", "line": {"color": _MARK_COLOR, "width": 4}, "marker": {"size": 7, "color": _MARK_COLOR}}
        if lines else
        {"mode": "markers", "marker": {"symbol": "circle-open", "size": 20, "color": _MARK_COLOR, "line": {"width": 3}}}
    )
    figure.add_trace(go.Scatter(x=[], y=[], name=MARK_TRACE, showlegend=False, hoverinfo="skip", **style))
    figure.update_layout(meta={"marks": {str(t): [list(xs), list(ys)] for t, (xs, ys) in marks.items()}})
    return figure
