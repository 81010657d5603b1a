"""Plotly sensitivity heatmaps: each cell's best accuracy, the best trial's cell starred.

Draws a :class:`~analysis.data.bins.HeatmapInfo` (the matplotlib rendering of the same info is
:func:`analysis.mpl.figures.heatmap_figure_mpl`). Plain SVG traces (no WebGL), so they render in
any browser, headless ones and static exports included. Accuracies are shown in percent, on the
colour range given (the dashboard gives every heatmap of a task one range,
:func:`analysis.data.bins.color_range`).
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from analysis.charts.style import COLORSCALE, TEMPLATE, add_marks, empty_figure, figure_title, param_label
from analysis.data.bins import HeatmapInfo, heatmap_notes
from analysis.data.views import view_subtitle

__all__ = ["heatmap_figure"]


def _cell_hover(info: HeatmapInfo, cy: int, cx: int) -> str:
    x, y = info.x, info.y
    head = f"{x.param} {x.hover_labels[cx]}<br>{y.param} {y.hover_labels[cy]}"
    if info.count[cy, cx] == 0:
        return f"{head}<br>no trial"
    star = "<br><b>★ best trial of this view</b>" if info.best_cell == (cy, cx) else ""
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


def heatmap_figure(info: HeatmapInfo, title: str = "", *, show_values: bool = True,
                   zrange: tuple[float, float] | None = None) -> go.Figure:
    """Draw a sensitivity heatmap: each cell's best accuracy, the best trial's cell starred.

    Parameters
    ----------
    info : HeatmapInfo
        From ``heatmap_info``.
    title : str
        Figure title (the view's label and number of trials are added below it).
    show_values : bool
        Print each cell's best accuracy in it, as in the paper's figure.
    zrange : (float, float), optional
        The accuracies (in [0, 1]) at the two ends of the colour scale; default this heatmap's
        own lowest and highest cell. Always written into the figure (``zmin``/``zmax``, in %).

    Notes
    -----
    Cells without a trial are blank (NaN), never interpolated. The best trial's cell is outlined
    and starred. Hover shows the cell's label (and, on a decade-centred log axis, its exact
    interval, e.g. ``1e-3: [3.2e-4, 3.2e-3)``), best and mean accuracy, number of trials, and
    its best trial's id and config.
    """
    subtitle = view_subtitle(info.mode, info.n_trials + info.n_unplaced)
    if info.n_trials == 0:
        return empty_figure(title, subtitle, "no trial in this view")
    low, high = zrange if zrange is not None else (float(np.nanmin(info.best)), float(np.nanmax(info.best)))
    hover = [[_cell_hover(info, cy, cx) for cx in range(len(info.x))] for cy in range(len(info.y))]
    heatmap = go.Heatmap(
        z=100 * info.best, x=list(info.x.labels), y=list(info.y.labels), customdata=hover,
        text=_cell_text(info, show_values), texttemplate="%{text}",
        hovertemplate="%{customdata}<extra></extra>", hoverongaps=False,
        colorscale=COLORSCALE, zmin=100 * low, zmax=100 * high, zauto=False,
        colorbar={"title": {"text": "target acc (%)", "side": "right"}},
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
        title=figure_title(title, subtitle), template=TEMPLATE, shapes=shapes,
        xaxis={**axis, "title": {"text": param_label(info.x.param), "standoff": 8},
               "categoryarray": list(info.x.labels)},
        yaxis={**axis, "title": {"text": param_label(info.y.param), "standoff": 8},
               "categoryarray": list(info.y.labels)},
        plot_bgcolor="#f4f4f4", height=460, margin={"t": 70, "b": 90},
        annotations=[
            {"text": heatmap_notes(info), "x": 0, "y": -0.24, "xref": "paper", "yref": "paper",
             "showarrow": False, "xanchor": "left", "font": {"size": 10, "color": "#666"}}
        ],
    )
    marks = {trial: ([info.x.labels[cx]], [info.y.labels[cy]]) for trial, (cy, cx) in info.cells.items()}
    return add_marks(figure, marks)
