"""Plotly optimisation history: every trial's value of the search's metric in trial order, coloured
by status, and the best value so far (:class:`~analysis.data.history.HistoryInfo`)."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from analysis.charts.style import TEMPLATE, add_marks, empty_figure, figure_title
from analysis.data.history import HistoryInfo
from analysis.style import STATUS_STYLE

__all__ = ["history_figure"]


def history_figure(info: HistoryInfo, title: str = "") -> go.Figure:
    """Each trial as a point (its last recorded value, coloured and shaped by status), the best
    so far as a step line (trials that reached the last epoch only, the best-trial rule), the
    search's best trial starred. Fractions (accuracies) are drawn in percent. Clicking a point
    selects its trial in the dashboard's trial table (the point's ``customdata[0]`` is its id)."""
    frame = info.frame
    scale = 100.0 if info.fraction else 1.0
    unit = " (%)" if info.fraction else ""
    better = "higher" if info.direction == "max" else "lower"
    subtitle = (f"{len(frame)} trials in the order the search created them; line: best {info.metric} so far among "
                f"trials that reached the last epoch ({better} is better)")
    drawn = frame.dropna(subset=["value"])
    if drawn.empty:
        return empty_figure(title, subtitle, f"no trial recorded {info.metric}")
    value_format = ":.2f}%" if info.fraction else ":.4g}"
    figure = go.Figure()
    for status, style in STATUS_STYLE.items():
        group = drawn[drawn["status"] == status]
        if group.empty:
            continue
        figure.add_trace(go.Scatter(
            x=group["order"], y=scale * group["value"], mode="markers", name=f"{status} ({len(group)})",
            marker={"color": style["color"], "symbol": style["symbol"], "size": 9, "opacity": 0.85,
                    "line": {"width": 1, "color": style["color"]}},
            customdata=np.stack([group["trial_id"], group["config"]], axis=-1),
            hovertemplate=("trial %{customdata[0]} (#%{x})<br>" + info.metric + " %{y" + value_format
                           + "<br>%{customdata[1]}" + f"<extra>{status}</extra>"),
        ))
    steps = frame.dropna(subset=["best_so_far"])
    if len(steps):
        figure.add_trace(go.Scatter(
            x=list(steps["order"]) + [int(frame["order"].max())],
            y=list(scale * steps["best_so_far"]) + [scale * float(steps["best_so_far"].iloc[-1])],
            mode="lines", line={"shape": "hv", "color": "#d62728", "width": 2}, name=f"best {info.metric} so far",
            hovertemplate="after trial #%{x}: best %{y" + value_format + "<extra></extra>",
        ))
    best = drawn[drawn["trial_id"] == info.best_trial]
    if len(best):
        figure.add_trace(go.Scatter(
            x=best["order"], y=scale * best["value"], mode="markers+text", text=["★"], textposition="top center",
            marker={"symbol": "star", "size": 16, "color": "#e6194b"}, name="the search's best trial",
            hovertemplate="best trial %{x}<extra></extra>",
        ))
    figure.update_layout(
        title=figure_title(title, subtitle), template=TEMPLATE, height=420, hovermode="closest",
        xaxis={"title": {"text": "trial (order of creation)"}, "rangemode": "tozero"},
        yaxis={"title": {"text": f"{info.metric}{unit}"}}, legend={"orientation": "h", "y": -0.25},
        margin={"t": 70},
    )
    marks = {t: ([int(o)], [scale * float(v)]) for t, o, v in zip(drawn["trial_id"], drawn["order"], drawn["value"], strict=True)}
    return add_marks(figure, marks)
