"""Matplotlib figure of warm start against cold start (:mod:`analysis.data.warmstart`).

One panel per task: the regret after k trials (points below the best config the seed's cold
search found) of each cold and warm search (thin lines, one per sampler seed) and their mean
(thick), with the 1-point band.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from analysis.data.warmstart import Comparison

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["regret_figure"]

COLORS = {"cold": "#4c72b0", "warm": "#dd8452"}


def regret_figure(comparison: Comparison) -> Figure:
    """Regret curves per task, cold and warm."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    tasks = list(dict.fromkeys(task for task, _, _ in comparison.curves))
    cols = min(3, max(1, len(tasks)))
    rows = math.ceil(len(tasks) / cols) if tasks else 1
    figure = Figure(figsize=(4.0 * cols, 3.0 * rows))
    FigureCanvasAgg(figure)
    axes = figure.subplots(rows, cols, squeeze=False).ravel()
    for ax, task in zip(axes, tasks):
        for kind, color in COLORS.items():
            curves = [c for (t, _, k), c in comparison.curves.items() if t == task and k == kind]
            if not curves:
                continue
            for curve in curves:
                ax.plot(np.arange(1, len(curve) + 1), curve, color=color, alpha=0.25, linewidth=0.8)
            n = min(len(c) for c in curves)
            mean = np.mean([c[:n] for c in curves], axis=0)
            ax.plot(np.arange(1, n + 1), mean, color=color, linewidth=2.0, label=f"{kind} (mean of {len(curves)})")
        ax.axhline(100 * comparison.within, color="grey", linestyle="--", linewidth=0.8)
        ax.set_title(task)
        ax.set_xlabel("trials")
        ax.set_ylabel("regret (points)")
        ax.set_yscale("symlog", linthresh=1.0)
        ax.set_ylim(bottom=0)
        ax.legend(fontsize=7)
    for ax in axes[len(tasks):]:
        ax.set_visible(False)
    figure.tight_layout()
    return figure
