"""The figures of one experiment under each of its views (:mod:`analysis.data.views`).

Per view: a heatmap per pair of searched hyperparameters, parallel coordinates, the importances
of two evaluators with their bootstrap intervals (and a note when they disagree) and the marginal
effects; once per experiment: the optimisation history and the learning curves. Every heatmap of
a task shares one colour range (:func:`analysis.data.bins.color_range`), so :func:`prepare`
computes each experiment's heatmap cells first and the page gives :func:`view_figures` the range
of their task. The heatmaps of the default view and the learning curves are also kept as
:class:`~analysis.dashboard.static.StaticFigure` objects (Plotly figure + matplotlib drawing of the
same info) for the static files of papers.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import NamedTuple

import pandas as pd
import plotly.graph_objects as go
from optuna.importance import BaseImportanceEvaluator

from analysis.charts.curves import learning_curves_figure
from analysis.charts.heatmap import heatmap_figure
from analysis.charts.history import history_figure
from analysis.charts.importance import importances_figure
from analysis.charts.marginal import marginal_figure
from analysis.charts.parallel import parallel_figure
from analysis.charts.style import param_label
from analysis.dashboard.static import StaticFigure
from analysis.data.bins import Bins, HeatmapInfo, heatmap_info
from analysis.data.experiments import Experiment
from analysis.data.frames import learning_curves, param_pairs, source_only_accuracy, trial_table
from analysis.data.history import history_info
from analysis.data.importance import N_BOOT, importance_disagreement, importance_infos
from analysis.data.marginal import marginal_infos
from analysis.data.views import View, default_view, experiment_views
from analysis.mpl.figures import heatmap_figure_mpl, learning_curves_figure_mpl

__all__ = ["HeatmapPanel", "Plot", "Prepared", "ViewFigures", "prepare", "view_figures", "slug", "heatmap_title"]


def slug(text: str) -> str:
    """``text`` as a file-name part."""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-") or "x"


def heatmap_title(experiment: Experiment, x: str, y: str) -> str:
    return f"{experiment.task} ({experiment.search}): {param_label(y)} vs {param_label(x)}"


def _plain_title(experiment: Experiment, x: str, y: str) -> str:
    """The title without Plotly's HTML (for matplotlib, which sets the axis names itself)."""
    return f"{experiment.task} ({experiment.search}): {y} vs {x}"


class Plot(NamedTuple):
    """A plot container of the page (``templates/macros.html``'s ``plot_div``): its figure's id, the
    view it belongs to (None: every view), and a note shown below it."""

    div_id: str
    view: str | None = None
    note: str = ""


@dataclass(frozen=True)
class HeatmapPanel:
    """One heatmap of an experiment: its plot id, view, axes and cells."""

    div_id: str
    view: str
    x: str
    y: str
    info: HeatmapInfo


@dataclass
class Prepared:
    """An experiment's trials, views and heatmap cells (:func:`prepare`), before any figure."""

    experiment: Experiment
    key: str
    table: pd.DataFrame
    views: list[View]
    default: str
    results: dict[str, pd.DataFrame]
    panels: list[HeatmapPanel]


def prepare(experiment: Experiment, key: str, bins: Bins | Mapping[str, Bins]) -> Prepared:
    """The trial table, views and heatmap cells of ``experiment`` (``key``: its prefix of plot ids,
    e.g. ``"e0"``)."""
    table = trial_table(experiment)
    views, results = experiment_views(experiment, table)
    panels = [
        HeatmapPanel(f"{key}-heat{number}-{view.key}", view.key, x, y,
                     heatmap_info(results[view.key], x, y, experiment.space, bins=bins, mode=view.key))
        for number, (x, y) in enumerate(param_pairs(experiment.space)) for view in views
    ]
    return Prepared(experiment, key, table, views, default_view(views), results, panels)


@dataclass
class ViewFigures:
    """Everything :func:`view_figures` computed for one experiment."""

    views: list[View]
    default: str
    results: dict[str, pd.DataFrame]
    figures: dict[str, go.Figure] = field(default_factory=dict)
    heatmaps: list[Plot] = field(default_factory=list)  # in page order
    others: list[Plot] = field(default_factory=list)
    importances: list[Plot] = field(default_factory=list)  # per view, with the evaluators' disagreement as its note
    history: str = ""  # the optimisation history's plot id
    static: dict[str, StaticFigure] = field(default_factory=dict)  # file stem -> figure


def view_figures(
    prepared: Prepared, zrange: tuple[float, float] | None = None,
    evaluator: BaseImportanceEvaluator | None = None, *, n_boot: int = N_BOOT,
) -> ViewFigures:
    """Compute every figure of a prepared experiment.

    Parameters
    ----------
    prepared : Prepared
        From :func:`prepare`.
    zrange : (float, float), optional
        The colour range of its task's heatmaps (accuracies in [0, 1]).
    evaluator : optuna.importance.BaseImportanceEvaluator, optional
        Default fANOVA (:func:`analysis.data.importance.importance_infos`).
    n_boot : int
        Bootstrap resamples of the importance intervals (0: none).
    """
    experiment, key, results, views = prepared.experiment, prepared.key, prepared.results, prepared.views
    out = ViewFigures(views, prepared.default, results)
    stem = f"{slug(experiment.task)}__{slug(experiment.name)}"
    space = experiment.space
    for panel in prepared.panels:
        out.figures[panel.div_id] = heatmap_figure(panel.info, heatmap_title(experiment, panel.x, panel.y), zrange=zrange)
        out.heatmaps.append(Plot(panel.div_id, panel.view))
        if panel.view == out.default:
            draw = partial(heatmap_figure_mpl, panel.info, _plain_title(experiment, panel.x, panel.y), zrange=zrange)
            out.static[f"{stem}__{panel.x}__{panel.y}"] = StaticFigure(out.figures[panel.div_id], draw)
    out.figures[f"{key}-history"] = history_figure(history_info(experiment, prepared.table),
                                                   f"{experiment.task}: optimisation history")
    out.history = f"{key}-history"
    curves = learning_curves(experiment)
    args = (curves, experiment.max_epochs, f"{experiment.task}: learning curves",
            source_only_accuracy(experiment))
    out.figures[f"{key}-curves"] = learning_curves_figure(*args)
    out.static[f"{stem}__curves"] = StaticFigure(out.figures[f"{key}-curves"],
                                                 partial(learning_curves_figure_mpl, *args))
    out.others.append(Plot(f"{key}-curves"))
    for view in views:
        chosen = results[view.key]
        infos = importance_infos(chosen, space, evaluator, n_boot=n_boot)
        out.figures[f"{key}-importance-{view.key}"] = importances_figure(
            infos, view.key, f"{experiment.task}: hyperparameter importance")
        out.importances.append(Plot(f"{key}-importance-{view.key}", view.key, importance_disagreement(*infos) or ""))
        parts = {
            "parallel": parallel_figure(chosen, space, view.key,
                                        f"{experiment.task}: hyperparameters to accuracy"),
            "marginal": marginal_figure(marginal_infos(chosen, space), view.key,
                                        f"{experiment.task}: marginal effect of each hyperparameter"),
        }
        for name, figure in parts.items():
            out.figures[f"{key}-{name}-{view.key}"] = figure
            out.others.append(Plot(f"{key}-{name}-{view.key}", view.key))
    return out
