"""Plotly: a screen against the end-to-end search of the same configs
(:class:`~analysis.data.proxy.ProxyInfo`)."""

from __future__ import annotations

import plotly.graph_objects as go

from analysis.charts.style import TEMPLATE, empty_figure, figure_title
from analysis.data.proxy import ProxyInfo

__all__ = ["proxy_figure"]


def proxy_figure(info: ProxyInfo, title: str = "") -> go.Figure:
    """Each matched config: its position in the screen's ranking (x, 1 = the screen's best) and
    its end-to-end accuracy (y); the screen's top 3 are highlighted."""
    subtitle = (f"{info.n} configs; Spearman {info.spearman:.2f}, Kendall {info.kendall:.2f}; regret of the screen's best "
                f"{info.regret.get(1, float('nan')):.1f} points (random pick {info.random_regret:.1f})")
    if info.pairs.empty:
        return empty_figure(title, subtitle, "no config of the screen matches one of the reference")
    pairs = info.pairs
    top = pairs["screen_position"] <= 3
    traces = [
        dict(type="scatter", x=list(pairs.loc[mask, "screen_position"]), y=list(100 * pairs.loc[mask, "true_acc"]),
             mode="markers", name=name, text=list(pairs.loc[mask, "screen_trial"]),
             marker={"size": 9 if highlight else 7, "color": "#d62728" if highlight else "#555", "opacity": 0.8},
             hovertemplate="screen position %{x}<br>end-to-end acc %{y:.2f}%<br>%{text}<extra></extra>")
        for name, mask, highlight in (("screen's top 3", top, True), ("other configs", ~top, False)) if mask.any()
    ]
    figure = go.Figure(traces)
    figure.update_layout(title=figure_title(title, subtitle), template=TEMPLATE, height=420, margin={"t": 80},
                         xaxis={"title": f"position in the screen's ranking ({info.metric}; 1 = best)"},
                         yaxis={"title": "end-to-end target accuracy (%)"})
    return figure
