"""Plotly learning curves: target accuracy per epoch of every trial, coloured by status.

Draws the frame of :func:`analysis.data.frames.learning_curves` (the matplotlib rendering is
:func:`analysis.mpl.figures.learning_curves_figure_mpl`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from analysis.charts.style import TEMPLATE, add_marks, empty_figure, figure_title
from analysis.data.frames import curves_subtitle
from analysis.style import status_groups

__all__ = ["learning_curves_figure"]


def _with_gaps(curves: pd.DataFrame, columns: Sequence[str]) -> dict[str, list[Any]]:
    """Concatenate per-trial lines into one trace, separated by None gaps."""
    out: dict[str, list[Any]] = {c: [] for c in columns}
    for _, trial in curves.groupby("trial_id", sort=False):
        for column in columns:
            out[column].extend(trial[column].tolist() + [None])
    return out


def learning_curves_figure(
    curves: pd.DataFrame, max_epochs: int, title: str = "", source_only: float | None = None
) -> go.Figure:
    """Target accuracy per epoch of every trial, coloured by status.

    The last epoch of an early-stopped trial carries an ``x`` (ASHA's stop), that of a diverged
    or errored trial its own marker; hovering a line shows the trial id and its config.

    Parameters
    ----------
    curves : pandas.DataFrame
        From :func:`analysis.data.frames.learning_curves`.
    max_epochs : int
        The search's last epoch (a dotted line).
    title : str
        Figure title.
    source_only : float, optional
        Target accuracy before adaptation, in [0, 1] (a dashed line).
    """
    subtitle = curves_subtitle(curves)
    if curves.empty:
        return empty_figure(title, subtitle, "no epoch recorded")
    figure = go.Figure()
    for status, style, group, n_trials in status_groups(curves):
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
        title=figure_title(title, subtitle), template=TEMPLATE, height=460,
        xaxis={"title": {"text": "epoch"}, "rangemode": "tozero"},
        yaxis={"title": {"text": "target accuracy (%)"}}, hovermode="closest",
        legend={"itemclick": "toggle", "itemdoubleclick": "toggleothers"},
        margin={"t": 70},
    )
    marks = {str(t): (list(trial["epoch"]), list(100 * trial["target_acc"])) for t, trial in curves.groupby("trial_id", sort=False)}
    return add_marks(figure, marks, lines=True)
