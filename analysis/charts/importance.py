"""Plotly hyperparameter importances: one evaluator, or two side by side, with their bootstrap
intervals as error bars.

They draw :class:`~analysis.data.importance.ImportanceInfo` objects.
"""

from __future__ import annotations

from collections.abc import Sequence

import plotly.graph_objects as go

from analysis.charts.style import TEMPLATE, empty_figure, figure_title, param_label
from analysis.data.importance import ImportanceInfo
from analysis.data.views import view_label, view_subtitle

__all__ = ["importance_figure", "importances_figure"]

_EVALUATOR_COLORS = ("#4c78a8", "#f58518")


def importance_figure(info: ImportanceInfo, mode: str, title: str = "") -> go.Figure:
    """Horizontal bars of each hyperparameter's importance (Optuna evaluator named below)."""
    subtitle = f"{info.label or info.evaluator} on {info.n_trials} trials; {view_label(mode)}"
    if not info.importances:
        return empty_figure(title, subtitle, f"importance not computed: {info.note}")
    params = list(info.importances)[::-1]
    values = [info.importances[p] for p in params]
    figure = go.Figure(
        go.Bar(
            x=values, y=[param_label(p) for p in params], orientation="h",
            marker={"color": "#4c78a8"}, text=[f"{v:.2f}" for v in values],
            textposition="outside", textangle=0, cliponaxis=False, customdata=params,
            hovertemplate="%{customdata}: %{x:.3f}<extra></extra>",
        )
    )
    figure.update_layout(
        title=figure_title(title, subtitle), template=TEMPLATE, height=460,
        xaxis={"title": {"text": "importance (sums to 1)"}, "range": [0, 1]},
        margin={"t": 70, "l": 130},
    )
    return figure


def _error_bars(info: ImportanceInfo, params: Sequence[str], values: Sequence[float]) -> dict | None:
    """The bootstrap interval of each bar as Plotly error bars (None without intervals). A bar
    outside its interval (a biased resample estimate) gets a one-sided bar to the interval."""
    if not info.intervals:
        return None
    low = [info.intervals.get(p, (v, v))[0] for p, v in zip(params, values, strict=True)]
    high = [info.intervals.get(p, (v, v))[1] for p, v in zip(params, values, strict=True)]
    return {"type": "data", "symmetric": False, "array": [max(h - v, 0.0) for h, v in zip(high, values, strict=True)],
            "arrayminus": [max(v - lo, 0.0) for lo, v in zip(low, values, strict=True)], "color": "#333",
            "thickness": 1.2, "width": 4}


def _interval_text(info: ImportanceInfo, params: Sequence[str]) -> list[str]:
    if not info.intervals:
        return ["" for _ in params]
    level = f"{100 * info.level:.0f} %"
    return [f"<br>{level} interval [{info.intervals[p][0]:.2f}, {info.intervals[p][1]:.2f}]"
            if p in info.intervals else "" for p in params]


def importances_figure(
    infos: Sequence[ImportanceInfo], view: str, title: str = ""
) -> go.Figure:
    """Grouped horizontal bars: each hyperparameter's importance under each evaluator, with its
    bootstrap interval as an error bar when one was computed.

    An evaluator that was not fitted (too few trials, no variation) is named in the legend with
    the reason; when none was fitted the figure says why.
    """
    n_trials = max((i.n_trials for i in infos), default=0)
    subtitle = view_subtitle(view, n_trials)
    booted = [i for i in infos if i.intervals]
    if booted:
        subtitle += (f"; bars: {100 * booted[0].level:.0f} % bootstrap intervals "
                     f"({booted[0].n_boot} resamples of the {n_trials} trials)")
    fitted = [i for i in infos if i.importances]
    if not fitted:
        reasons = "; ".join(sorted({i.note for i in infos if i.note}))
        return empty_figure(title, subtitle, f"importance not computed: {reasons}")
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
                textposition="outside", cliponaxis=False,
                customdata=list(zip(params, _interval_text(info, params), strict=True)),
                error_x=_error_bars(info, params, values),
                hovertemplate=f"{name}<br>" + "%{customdata[0]}: %{x:.3f}%{customdata[1]}<extra></extra>",
            )
        )
    figure.update_layout(
        title=figure_title(title, subtitle), template=TEMPLATE, height=460, barmode="group",
        xaxis={"title": {"text": "importance (each evaluator's sum to 1)"}, "range": [0, 1.1]},
        legend={"orientation": "h", "y": -0.2}, margin={"t": 70, "l": 130},
    )
    return figure
