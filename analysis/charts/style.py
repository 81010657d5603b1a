"""The Plotly figures' shared style: template, colour scale, axis names, titles, empty figures.

Every Plotly builder of :mod:`analysis.charts` uses these; the colours and markers per trial
status, shared with matplotlib, are :data:`analysis.style.STATUS_STYLE`.
"""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go

__all__ = ["PARAM_LABELS", "COLORSCALE", "TEMPLATE", "param_label", "figure_title", "empty_figure"]

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
