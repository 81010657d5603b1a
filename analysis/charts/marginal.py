"""Plotly marginal effects: per hyperparameter, the trials' accuracies and the forest's partial
dependence (:class:`~analysis.data.marginal.MarginalInfo`)."""

from __future__ import annotations

from collections.abc import Sequence

import plotly.graph_objects as go

from analysis.charts.style import TEMPLATE, empty_figure, figure_title, param_label
from analysis.data.frames import format_value
from analysis.data.marginal import MarginalInfo
from analysis.data.views import view_subtitle

__all__ = ["marginal_figure"]


def marginal_figure(infos: Sequence[MarginalInfo], view: str, title: str = "") -> go.Figure:
    """One panel per hyperparameter: the trials' accuracies (points) and the forest's partial
    dependence along that axis (a line labelled "model estimate")."""
    n_trials = max((i.n_trials for i in infos), default=0)
    subtitle = f"{view_subtitle(view, n_trials)}; line: model estimate (random-forest partial dependence)"
    if not infos:
        return empty_figure(title, subtitle, "no hyperparameter varies in this search")
    traces: list[dict] = []
    axes: dict[str, dict] = {}
    gap, width = 0.03, (1.0 - 0.03 * (len(infos) - 1)) / len(infos)
    for column, info in enumerate(infos):
        name = "x" if column == 0 else f"x{column + 1}"  # one x axis per panel, one shared y axis
        categorical = info.kind == "categorical"
        xs = [format_value(v) for v in info.trial_values] if categorical else list(info.trial_values)
        traces.append(dict(
            type="scatter", x=xs, y=list(100 * info.trial_acc), xaxis=name, mode="markers",
            name="trials", marker={"size": 6, "color": "#555", "opacity": 0.6},
            showlegend=column == 0, legendgroup="trials",
            hovertemplate=f"{info.param} " + "%{x}<br>acc %{y:.2f}%<extra>trial</extra>",
        ))
        if len(info.estimate):
            traces.append(dict(
                type="scatter", x=[format_value(v) for v in info.grid] if categorical else list(info.grid),
                y=list(100 * info.estimate), xaxis=name, mode="lines+markers" if categorical else "lines",
                name="model estimate", line={"color": "#e45756", "width": 2.5},
                showlegend=column == 0, legendgroup="estimate",
                hovertemplate=f"{info.param} " + "%{x}<br>model estimate %{y:.2f}%<extra></extra>",
            ))
        axis: dict = {"title": {"text": param_label(info.param)}, "anchor": "y",
                      "domain": [column * (width + gap), column * (width + gap) + width]}
        if info.kind == "log":
            axis.update(type="log", dtick=1)  # a tick per decade
        elif categorical:
            axis.update(type="category", categoryorder="array",
                        categoryarray=[format_value(v) for v in info.grid] or None)
        axes["xaxis" if column == 0 else f"xaxis{column + 1}"] = axis
    figure = go.Figure(data=traces, layout=axes)
    notes = sorted({i.note for i in infos if i.note})
    annotations = [{"text": notes[0], "x": 0.5, "y": 0.5, "xref": "paper", "yref": "paper",
                    "showarrow": False, "font": {"size": 13, "color": "#555"},
                    "bgcolor": "rgba(255,255,255,0.8)"}] if notes else []
    figure.update_layout(
        title=figure_title(title, subtitle), template=TEMPLATE, height=400, annotations=annotations,
        yaxis={"title": {"text": "target acc (%)"}}, legend={"orientation": "h", "y": -0.25},
        margin={"t": 80},
    )
    return figure
