"""Read finished (or running) searches from disk and draw their sensitivity dashboards.

The analysis never trains and never imports torch, Ray or ``ssot``: it only reads the files that
``tune/`` writes, through their one owner :mod:`tune.schema` (standard library and pandas).

Data first (pure functions returning frames and info objects)::

    experiments, problems = load_experiments("ray_results")
    table = trial_table(experiments[0])              # one row per trial
    results = final_results(table, mode="final")     # or mode="best"
    views, by_view = experiment_views(experiments[0], table)  # + "epoch<R>" per ASHA rung
    info = heatmap_info(by_view["epoch5"], "lambda_ot", "lambda_ent", experiments[0].space,
                        mode="epoch5")

then figures (``heatmap_figure(info)``, or ``heatmap_figure_mpl(info)`` with matplotlib for
papers, ...) and the whole dashboard
(``build_dashboard("ray_results")``, also ``python analysis/sensitivity.py ray_results``).
"""

from analysis.dashboard import DashboardResult, build_dashboard, export_images
from analysis.bins import AxisBins, HeatmapInfo, axis_bins, heatmap_info
from analysis.experiments import (
    AnalysisError,
    Experiment,
    NoExperimentsError,
    ParamSpec,
    Problem,
    load_experiment,
    load_experiments,
)
from analysis.figures import (
    heatmap_figure,
    learning_curves_figure,
)
from analysis.figures_trials import importance_figure, parallel_figure
from analysis.frames import (
    MODE_LABELS,
    MODES,
    best_trial,
    cross_task_table,
    final_results,
    learning_curves,
    param_pairs,
    source_only_accuracy,
    trial_table,
)
from analysis.figures_mpl import heatmap_figure_mpl, learning_curves_figure_mpl
from analysis.figures_views import importances_figure, marginal_figure
from analysis.importance import MIN_TRIALS, ImportanceInfo, importance_info, importance_infos
from analysis.marginal import MarginalInfo, marginal_infos
from analysis.views import View, default_view, experiment_views, view_results
from analysis.paper import paper_accuracy_path, read_paper_accuracy

__all__ = [
    "AnalysisError",
    "AxisBins",
    "DashboardResult",
    "Experiment",
    "HeatmapInfo",
    "ImportanceInfo",
    "MODES",
    "MODE_LABELS",
    "MIN_TRIALS",
    "MarginalInfo",
    "View",
    "NoExperimentsError",
    "ParamSpec",
    "Problem",
    "axis_bins",
    "best_trial",
    "build_dashboard",
    "cross_task_table",
    "default_view",
    "experiment_views",
    "heatmap_figure_mpl",
    "importances_figure",
    "importance_infos",
    "learning_curves_figure_mpl",
    "marginal_figure",
    "marginal_infos",
    "view_results",
    "export_images",
    "final_results",
    "heatmap_figure",
    "heatmap_info",
    "importance_figure",
    "importance_info",
    "learning_curves",
    "learning_curves_figure",
    "load_experiment",
    "load_experiments",
    "parallel_figure",
    "param_pairs",
    "paper_accuracy_path",
    "read_paper_accuracy",
    "source_only_accuracy",
    "trial_table",
]
