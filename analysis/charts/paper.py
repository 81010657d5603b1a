"""Plotly figures of the paper's other analyses: class weights vs truth, OT solvers, feature maps.

They draw the info objects of :mod:`analysis.data.paper_runs` (the matplotlib renderings are in
:mod:`analysis.mpl.paper`); the dashboard shows them in its paper section
(:mod:`analysis.dashboard.paper_section`).
"""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from analysis.data.paper_runs import ClassWeightInfo, FeaturePanel, SolverCurve

__all__ = ["class_weight_plotly", "solver_plotly", "feature_map_plotly"]

_TAB10 = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"]
_PALETTE = [c for i, c in enumerate(_TAB10) if i != 3]  # red is for outliers
_OUTLIER, _GREY = "#d62728", "#bbbbbb"
_LEGEND = {"orientation": "h", "y": -0.2, "font": {"size": 10}}


def class_weight_plotly(info: ClassWeightInfo, name: str = "") -> go.Figure:
    """(a) estimated proportion per class over epochs, dotted truth, outliers dashed red;
    (b) final estimate beside the truth; the final outlier mass in the title."""
    fig = make_subplots(rows=1, cols=2, subplot_titles=("estimate per class (dotted: truth)", "final epoch"))
    outliers = set(info.outliers)
    colour = {k: _PALETTE[i % len(_PALETTE)] for i, k in enumerate(k for k in range(len(info.truth)) if k not in outliers)}
    for k, cls in enumerate(info.names):
        out = k in outliers
        fig.add_trace(go.Scatter(x=info.epochs, y=info.estimate[:, k], mode="lines+markers", name=f"{cls} (outlier)" if out else cls,
                                 legendgroup=cls, line={"color": _OUTLIER if out else colour[k], "dash": "dash" if out else "solid"},
                                 marker={"size": 4}), row=1, col=1)
        if not out:
            fig.add_trace(go.Scatter(x=[info.epochs[0], info.epochs[-1]], y=[info.truth[k]] * 2, mode="lines", legendgroup=cls,
                                     showlegend=False, hoverinfo="skip", line={"color": colour[k], "dash": "dot", "width": 1}), row=1, col=1)
    fig.add_trace(go.Bar(x=info.names, y=info.truth, name="true (oracle)", marker_color="#999999"), row=1, col=2)
    fig.add_trace(go.Bar(x=info.names, y=info.estimate[-1], name="SSOT estimate",
                         marker_color=[_OUTLIER if k in outliers else _TAB10[0] for k in range(len(info.names))]), row=1, col=2)
    fig.update_xaxes(title_text="epoch (0 = source-only)", row=1, col=1)
    fig.update_yaxes(title_text="estimated target proportion", row=1, col=1)
    fig.update_yaxes(title_text="target proportion", row=1, col=2)
    fig.update_layout(title=f"{info.title}{f' ({name})' if name else ''}<br><sub>mass on outlier classes at the last epoch: "
                            f"{info.outlier_mass:.4f}</sub>", barmode="group", height=500, margin={"t": 90}, legend=_LEGEND)
    return fig


def solver_plotly(curves: list[SolverCurve], title: str) -> go.Figure:
    """(a) OT value per epoch per solver; (b) mean time per adaptation epoch (s)."""
    fig = make_subplots(rows=1, cols=2, subplot_titles=("OT value (epoch mean)", "time per adaptation epoch (s)"))
    for i, c in enumerate(curves):
        fig.add_trace(go.Scatter(x=c.epochs, y=c.values, mode="lines+markers", name=c.label, line={"color": _TAB10[i % 10]}), row=1, col=1)
    fig.add_trace(go.Bar(x=[c.label for c in curves], y=[c.time_per_epoch for c in curves], showlegend=False,
                         text=[f"{c.time_per_epoch:.2f}" for c in curves], textposition="outside",
                         marker_color=[_TAB10[i % 10] for i in range(len(curves))]), row=1, col=2)
    fig.update_xaxes(title_text="epoch", row=1, col=1)
    fig.update_layout(title=title, height=460, legend=_LEGEND)
    return fig


def feature_map_plotly(panels: list[FeaturePanel], title: str) -> go.Figure:
    """One panel per model: ``o`` source, ``+`` target, colour = class, outlier classes grey."""
    fig = make_subplots(rows=1, cols=len(panels), subplot_titles=[p.model for p in panels])
    for col, panel in enumerate(panels, start=1):
        for dom, (dom_name, symbol) in enumerate((("source", "circle-open"), ("target", "cross-thin-open"))):
            for cls in np.unique(panel.label):
                sel = (panel.domain == dom) & (panel.label == cls)
                if not sel.any():
                    continue
                out = bool(panel.outlier[sel][0])
                name = f"{dom_name} {cls}{' (outlier)' if out else ''}"
                fig.add_trace(go.Scattergl(x=panel.xy[sel, 0], y=panel.xy[sel, 1], mode="markers", name=name, legendgroup=name,
                                           showlegend=col == 1, marker={"symbol": symbol, "size": 6, "line": {"width": 1},
                                                                        "color": _GREY if out else _TAB10[int(cls) % 10]}),
                              row=1, col=col)
    fig.update_xaxes(showticklabels=False)
    fig.update_yaxes(showticklabels=False)
    fig.update_layout(title=f"{title}<br><sub>o source, + target, grey: outlier classes</sub>", height=620, margin={"t": 90},
                      legend=_LEGEND)
    return fig
