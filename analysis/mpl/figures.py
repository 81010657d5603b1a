"""Matplotlib renderers of the heatmaps and learning curves, for papers (no browser needed).

They draw the SAME info objects as the Plotly builders of :mod:`analysis.charts` (a
:class:`~analysis.data.bins.HeatmapInfo`, the frame of :func:`analysis.data.frames.learning_curves`), the way
Optuna keeps ``optuna.visualization`` and ``optuna.visualization.matplotlib`` on shared
``_get_*_info`` functions. Matplotlib is imported lazily (the analysis imports without it) and
only through its object API on an Agg canvas: no pyplot, no global backend state.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from analysis.data.bins import HeatmapInfo, heatmap_notes
from analysis.data.frames import curves_subtitle
from analysis.data.views import view_subtitle
from analysis.style import status_groups

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["MPL_PARAM_LABELS", "heatmap_figure_mpl", "learning_curves_figure_mpl", "save_figure"]

#: Axis titles of the known hyperparameters (matplotlib's mathtext).
MPL_PARAM_LABELS: dict[str, str] = {
    "lambda_ot": r"$\lambda_{\mathrm{OT}}$",
    "lambda_ent": r"$\lambda_{\mathrm{Ent}}$",
    "eps": r"$\varepsilon$",
    "potential_width": "potential width",
}

#: Plotly marker symbols of ``STATUS_STYLE`` as matplotlib markers.
_MARKERS = {"circle": "o", "x": "x", "diamond-x": "D", "square-x": "s", "triangle-right": ">"}
_SIZE = (6.8, 5.2)  # inches; the Plotly static size is 680 x 520 px


def _new_figure(**margins: float) -> Figure:
    """A figure on an Agg canvas with fixed margins (a constrained layout costs more than the
    drawing itself)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=_SIZE)
    FigureCanvasAgg(figure)  # the Agg backend, explicitly
    figure.subplots_adjust(**{"left": 0.11, "right": 0.97, "bottom": 0.11, "top": 0.86, **margins})
    return figure


def _titles(figure: Figure, title: str, subtitle: str) -> None:
    figure.text(0.02, 0.985, title, ha="left", va="top", fontsize=11)
    figure.text(0.02, 0.935, subtitle, ha="left", va="top", fontsize=9, color="#444")


def _empty(figure: Figure, message: str) -> None:
    ax = figure.add_subplot()
    ax.axis("off")
    ax.text(0.5, 0.5, message, ha="center", va="center", color="#555", fontsize=12)


def heatmap_figure_mpl(info: HeatmapInfo, title: str = "", *, show_values: bool = True,
                       zrange: tuple[float, float] | None = None) -> Figure:
    """Draw a sensitivity heatmap with matplotlib, as :func:`analysis.charts.heatmap.heatmap_figure` does.

    Each cell holds its best accuracy (%); cells without a trial are blank; the best trial's cell
    is outlined and starred; the subtitle names the view and its number of trials; ``zrange``
    (accuracies in [0, 1]) fixes the colour scale's ends, as in the dashboard.
    """
    from matplotlib.patches import Rectangle

    figure = _new_figure(left=0.16, right=1.0, bottom=0.17)
    _titles(figure, title, view_subtitle(info.mode, info.n_trials + info.n_unplaced))
    if info.n_trials == 0:
        _empty(figure, "no trial in this view")
        return figure
    ax = figure.add_subplot()
    values = np.ma.masked_invalid(100 * info.best)
    ax.set_facecolor("#f4f4f4")
    low, high = (100 * zrange[0], 100 * zrange[1]) if zrange is not None else (float(values.min()), float(values.max()))
    image = ax.imshow(values, cmap="viridis", origin="lower", aspect="auto", vmin=low, vmax=high)
    colorbar = figure.colorbar(image, ax=ax)
    colorbar.set_label("target acc (%)")
    for cy in range(len(info.y)):
        for cx in range(len(info.x)):
            star = info.best_cell == (cy, cx)
            if not info.count[cy, cx] or not (show_values or star):
                continue
            value = 100 * info.best[cy, cx]
            text = f"{value:.1f}" if show_values else ""
            text = f"★ {text}".strip() if star else text
            light = high > low and (value - low) / (high - low) > 0.6
            ax.text(cx, cy, text, ha="center", va="center", fontsize=8,
                    color="black" if light else "white")
    if info.best_cell is not None:
        cy, cx = info.best_cell
        ax.add_patch(Rectangle((cx - 0.5, cy - 0.5), 1, 1, fill=False, edgecolor="#e6194b", lw=2.5))
    ax.set_xticks(range(len(info.x)), list(info.x.labels), rotation=30 if len(info.x) > 6 else 0)
    ax.set_yticks(range(len(info.y)), list(info.y.labels))
    ax.set_xlabel(MPL_PARAM_LABELS.get(info.x.param, info.x.param))
    ax.set_ylabel(MPL_PARAM_LABELS.get(info.y.param, info.y.param))
    ax.tick_params(length=0)
    for spine in ax.spines.values():
        spine.set_visible(False)
    figure.text(0.02, 0.01, textwrap.fill(heatmap_notes(info), 140), fontsize=6.5, color="#666",
                ha="left", va="bottom")
    return figure


def learning_curves_figure_mpl(
    curves: pd.DataFrame, max_epochs: int, title: str = "", source_only: float | None = None
) -> Figure:
    """Target accuracy per epoch of every trial, coloured by status, as
    :func:`analysis.charts.curves.learning_curves_figure` draws it (same frame, same markers)."""
    figure = _new_figure()
    _titles(figure, title, curves_subtitle(curves))
    if curves.empty:
        _empty(figure, "no epoch recorded")
        return figure
    ax = figure.add_subplot()
    for status, style, group, n_trials in status_groups(curves):
        for number, (_, trial) in enumerate(group.groupby("trial_id", sort=False)):
            ax.plot(trial["epoch"], 100 * trial["target_acc"], color=style["color"], lw=1.0,
                    alpha=0.55, label=f"{status} ({n_trials})" if number == 0 else None)
        if style["end"]:
            ends = group[group["is_last"]]
            ax.scatter(ends["epoch"], 100 * ends["target_acc"], marker=_MARKERS[style["symbol"]],
                       color=style["color"], s=30, label=style["end"], zorder=3)
    if max_epochs:
        ax.axvline(max_epochs, ls=":", color="#999", lw=1)
    if source_only is not None:
        ax.axhline(100 * source_only, ls="--", color="#555", lw=1)
        ax.annotate(f"source only {100 * source_only:.1f}%", (1.0, 100 * source_only),
                    xycoords=("axes fraction", "data"), ha="right", va="top", fontsize=8)
    ax.set_xlabel("epoch")
    ax.set_ylabel("target accuracy (%)")
    ax.set_xlim(left=0)
    ax.grid(color="#ebebeb")
    ax.legend(fontsize=8, loc="lower right")
    return figure


def save_figure(figure: Figure, stem: Path, formats: Sequence[str], dpi: int = 200) -> list[Path]:
    """Write ``figure`` as ``stem.<format>`` for every format (pdf, png, svg); return the paths."""
    stem.parent.mkdir(parents=True, exist_ok=True)
    paths = []
    for image_format in formats:
        path = stem.with_name(f"{stem.name}.{image_format}")
        options: dict[str, Any] = {"dpi": dpi} if image_format == "png" else {}
        figure.savefig(path, format=image_format, **options)
        paths.append(path)
    return paths
