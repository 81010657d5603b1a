"""The paper's analysis figures with matplotlib (PNG/PDF for papers), from run records only.

- :func:`solver_figure`: OT value per epoch and time per epoch of runs that differ in
  ``ot_solver`` (the paper's "Optimization comparison");
- :func:`class_weight_figure`: estimated target class proportions per epoch against the true
  ones, outlier classes marked, and the mass left on outlier classes (the paper's "Class weight
  visualization");
- :func:`feature_map_figure`: a t-SNE embedding file (``python -m ssot.feature_maps``) drawn per
  model, coloured by class, marked by domain, outlier classes grey.

Their content comes from :mod:`analysis.data.paper_runs` (the Plotly renderings of the same
information are :mod:`analysis.charts.paper`). ``python analysis/paper_figures.py`` draws them.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from analysis.data.paper_runs import class_weight_info, feature_map_panels, solver_info  # noqa: E402

__all__ = ["class_weight_figure", "solver_figure", "feature_map_figure"]

Record = Mapping[str, Any]


def class_weight_figure(record: Record) -> plt.Figure:
    """(a) estimated vs true proportion per class over epochs (outliers dashed red); (b) the
    final estimate beside the truth as bars, with the final outlier mass in the title
    (content: :func:`analysis.data.paper_runs.class_weight_info`)."""
    info = class_weight_info(record)
    est, true, K = info.estimate, info.truth, len(info.truth)
    outliers = set(info.outliers)
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(11, 4))
    tab10: Any = plt.get_cmap("tab10")  # a ListedColormap: it has .colors
    palette = [c for i, c in enumerate(tab10.colors) if i != 3]  # red is for outliers
    colour = {k: palette[i % len(palette)] for i, k in enumerate(k for k in range(K) if k not in outliers)}
    for k in range(K):
        outlier = k in outliers
        ax.plot(info.epochs, est[:, k], ls="--" if outlier else "-", color="tab:red" if outlier else colour[k],
                lw=1.2, label=f"{info.names[k]}{' (outlier)' if outlier else ''}")
        if not outlier:
            ax.axhline(true[k], color=colour[k], lw=0.6, ls=":")
    ax.set(xlabel="epoch (0 = source-only)", ylabel="estimated target proportion", title="estimate per class (dotted: truth)")
    ax.legend(fontsize=7, ncol=2)
    x = np.arange(K)
    bx.bar(x - 0.2, true, 0.4, label="true (oracle)", color="0.6")
    bx.bar(x + 0.2, est[-1], 0.4, label="SSOT estimate", color=["tab:red" if k in outliers else "tab:blue" for k in range(K)])
    bx.set_xticks(x, info.names, rotation=45 if K > 12 else 0, fontsize=7)
    bx.set(ylabel="target proportion", title=f"final epoch; mass on outlier classes {info.outlier_mass:.3f}")
    bx.legend(fontsize=8)
    fig.suptitle(info.title)
    fig.tight_layout()
    return fig


def solver_figure(records: Sequence[Record]) -> plt.Figure:
    """(a) OT value per epoch and (b) mean time per epoch (s) of runs with different ``ot_solver``
    (content: :func:`analysis.data.paper_runs.solver_info`)."""
    curves = solver_info(records)
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(10, 3.8))
    for c in curves:
        ax.plot(c.epochs, c.values, marker="o", ms=3, label=c.label)
    ax.set(xlabel="epoch", ylabel="OT value (epoch mean)", title="OT value")
    ax.legend(fontsize=8)
    bx.bar([c.label for c in curves], [c.time_per_epoch for c in curves], color="tab:blue")
    for i, c in enumerate(curves):
        bx.text(i, c.time_per_epoch, f"{c.time_per_epoch:.1f}", ha="center", va="bottom", fontsize=8)
    bx.set(ylabel="time per epoch (s)", title="time per adaptation epoch")
    bx.tick_params(axis="x", labelsize=8)
    fig.tight_layout()
    return fig


def feature_map_figure(data: Mapping[str, Any]) -> plt.Figure:
    """One panel per model of a t-SNE file: ``o`` source, ``+`` target, colour = class, outlier
    classes grey (content: :func:`analysis.data.paper_runs.feature_map_panels`)."""
    panels = feature_map_panels(data)
    fig, axes = plt.subplots(1, len(panels), figsize=(5 * len(panels), 4.6), squeeze=False)
    cmap = plt.get_cmap("tab10")
    for ax, panel in zip(axes[0], panels):
        for dom in (0, 1):
            sel = panel.domain == dom
            colours = ["0.75" if o else cmap(int(c) % 10) for c, o in zip(panel.label[sel], panel.outlier[sel])]
            if dom == 0:
                ax.scatter(panel.xy[sel, 0], panel.xy[sel, 1], marker="o", s=12, lw=0.7, facecolors="none", edgecolors=colours)
            else:
                ax.scatter(panel.xy[sel, 0], panel.xy[sel, 1], marker="+", s=20, lw=0.8, c=colours)
        ax.set(title=f"{panel.model}  (o source, + target, grey: outlier classes)", xticks=[], yticks=[])
    fig.tight_layout()
    return fig
