"""Plotly figures of a view's models: two importance evaluators side by side, marginal effects.

They draw :class:`~analysis.importance.ImportanceInfo` and
:class:`~analysis.marginal.MarginalInfo` objects; styling is shared with
:mod:`analysis.figures`.
"""

from __future__ import annotations

from collections.abc import Sequence

import plotly.graph_objects as go

from analysis.figures import TEMPLATE, _empty_figure, _title, param_label
from analysis.frames import format_value
from analysis.importance import ImportanceInfo
from analysis.marginal import MarginalInfo
from analysis.views import view_subtitle

__all__ = ["importances_figure", "marginal_figure"]

_EVALUATOR_COLORS = ("#4c78a8", "#f58518")


def importances_figure(
    infos: Sequence[ImportanceInfo], view: str, title: str = ""
) -> go.Figure:
    """Grouped horizontal bars: each hyperparameter's importance under each evaluator.

    An evaluator that was not fitted (too few trials, no variation) is named in the legend with
    the reason; when none was fitted the figure says why.
    """
    n_trials = max((i.n_trials for i in infos), default=0)
    subtitle = view_subtitle(view, n_trials)
    fitted = [i for i in infos if i.importances]
    if not fitted:
        reasons = "; ".join(sorted({i.note for i in infos if i.note}))
        return _empty_figure(title, subtitle, f"importance not computed: {reasons}")
    params = list(fitted[0].importances)[::-1]
    figure = go.Figure()
    for info, color in zip(infos, _EVALUATOR_COLORS, strict=False):
        name = info.label or info.evaluator
        if not info.importances:
            figure.add_trace(go.Bar(x=[None], y=[None], name=f"{name}: {info.note}",
                                    marker={"color": color}, orientation="h"))
            continue
        values = [info.importances.get(p, 0.0) for p in params]
        figure.add_trace(
            go.Bar(
                x=values, y=[param_label(p) for p in params], orientation="h", name=name,
                marker={"color": color}, text=[f"{v:.2f}" for v in values],
                textposition="outside", cliponaxis=False, customdata=params,
                hovertemplate=f"{name}<br>" + "%{customdata}: %{x:.3f}<extra></extra>",
            )
        )
    figure.update_layout(
        title=_title(title, subtitle), template=TEMPLATE, height=460, barmode="group",
        xaxis={"title": {"text": "importance (each evaluator's sum to 1)"}, "range": [0, 1.1]},
        legend={"orientation": "h", "y": -0.2}, margin={"t": 70, "l": 130},
    )
    return figure


def marginal_figure(infos: Sequence[MarginalInfo], view: str, title: str = "") -> go.Figure:
    """One panel per hyperparameter: the trials' accuracies (points) and the forest's partial
    dependence along that axis (a line labelled "model estimate")."""
    n_trials = max((i.n_trials for i in infos), default=0)
    subtitle = f"{view_subtitle(view, n_trials)}; line: model estimate (random-forest partial dependence)"
    if not infos:
        return _empty_figure(title, subtitle, "no hyperparameter varies in this search")
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
        title=_title(title, subtitle), template=TEMPLATE, height=400, annotations=annotations,
        yaxis={"title": {"text": "target acc (%)"}}, legend={"orientation": "h", "y": -0.25},
        margin={"t": 80},
    )
    return figure
