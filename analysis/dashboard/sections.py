"""The figures of one experiment under each of its views (:mod:`analysis.data.views`).

Per view: a heatmap per pair of searched hyperparameters, parallel coordinates, the importances
of two evaluators and the marginal effects; once per experiment: the learning curves. The
heatmaps of the default view and the learning curves are also kept as
:class:`~analysis.dashboard.static.StaticFigure` objects (Plotly figure + matplotlib drawing of the same
info) for the static files of papers.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import partial

import pandas as pd
import plotly.graph_objects as go
from optuna.importance import BaseImportanceEvaluator

from analysis.dashboard.static import StaticFigure
from analysis.data.bins import Bins, heatmap_info
from analysis.data.experiments import Experiment
from analysis.data.frames import learning_curves, param_pairs, source_only_accuracy
from analysis.data.importance import importance_infos
from analysis.data.marginal import marginal_infos
from analysis.data.views import View, default_view, experiment_views
from analysis.mpl.figures import heatmap_figure_mpl, learning_curves_figure_mpl
from analysis.charts.curves import learning_curves_figure
from analysis.charts.heatmap import heatmap_figure
from analysis.charts.importance import importances_figure
from analysis.charts.marginal import marginal_figure
from analysis.charts.parallel import parallel_figure
from analysis.charts.style import param_label

__all__ = ["ViewFigures", "view_figures", "plot_div", "slug", "heatmap_title"]


def slug(text: str) -> str:
    """``text`` as a file-name part."""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-") or "x"


def heatmap_title(experiment: Experiment, x: str, y: str) -> str:
    return f"{experiment.task} ({experiment.search}): {param_label(y)} vs {param_label(x)}"


def _plain_title(experiment: Experiment, x: str, y: str) -> str:
    """The title without Plotly's HTML (for matplotlib, which sets the axis names itself)."""
    return f"{experiment.task} ({experiment.search}): {y} vs {x}"


def plot_div(div_id: str, view: str | None = None) -> str:
    """A plot container; one of a view carries ``data-view`` (the page shows one view at a time)."""
    if not view:
        return f'<div class="plot" id="{div_id}"></div>'
    return f'<div class="plot mode-{view}" id="{div_id}" data-view="{view}"></div>'


@dataclass
class ViewFigures:
    """Everything :func:`view_figures` computed for one experiment."""

    views: list[View]
    default: str
    results: dict[str, pd.DataFrame]
    figures: dict[str, go.Figure] = field(default_factory=dict)
    heatmaps: list[str] = field(default_factory=list)  # plot containers, in page order
    others: list[str] = field(default_factory=list)
    static: dict[str, StaticFigure] = field(default_factory=dict)  # file stem -> figure


def view_figures(
    experiment: Experiment, table: pd.DataFrame, key: str, bins: Bins | Mapping[str, Bins],
    evaluator: BaseImportanceEvaluator | None = None,
) -> ViewFigures:
    """Compute every figure of ``experiment`` (``table``: its ``trial_table``; ``key``: its
    prefix of plot ids, e.g. ``"e0"``)."""
    views, results = experiment_views(experiment, table)
    out = ViewFigures(views, default_view(views, len(table)), results)
    stem = f"{slug(experiment.task)}__{slug(experiment.name)}"
    space = experiment.space
    for number, (x, y) in enumerate(param_pairs(space)):
        for view in views:
            info = heatmap_info(results[view.key], x, y, space, bins=bins, mode=view.key)
            div_id = f"{key}-heat{number}-{view.key}"
            out.figures[div_id] = heatmap_figure(info, heatmap_title(experiment, x, y))
            out.heatmaps.append(plot_div(div_id, view.key))
            if view.key == out.default:
                draw = partial(heatmap_figure_mpl, info, _plain_title(experiment, x, y))
                out.static[f"{stem}__{x}__{y}"] = StaticFigure(out.figures[div_id], draw)
    curves = learning_curves(experiment)
    args = (curves, experiment.max_epochs, f"{experiment.task}: learning curves",
            source_only_accuracy(experiment))
    out.figures[f"{key}-curves"] = learning_curves_figure(*args)
    out.static[f"{stem}__curves"] = StaticFigure(out.figures[f"{key}-curves"],
                                                 partial(learning_curves_figure_mpl, *args))
    out.others.append(plot_div(f"{key}-curves"))
    for view in views:
        chosen = results[view.key]
        parts = {
            "parallel": parallel_figure(chosen, space, view.key,
                                        f"{experiment.task}: hyperparameters to accuracy"),
            "importance": importances_figure(importance_infos(chosen, space, evaluator), view.key,
                                             f"{experiment.task}: hyperparameter importance"),
            "marginal": marginal_figure(marginal_infos(chosen, space), view.key,
                                        f"{experiment.task}: marginal effect of each hyperparameter"),
        }
        for name, figure in parts.items():
            out.figures[f"{key}-{name}-{view.key}"] = figure
            out.others.append(plot_div(f"{key}-{name}-{view.key}", view.key))
    return out
