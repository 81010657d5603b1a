"""Read finished (or running) searches and draw their sensitivity dashboards.

The analysis never trains and never imports torch or Ray: it reads the files that ``tune/`` and
the training commands write through their one owner, :mod:`ssot.results` (standard library and
pandas), and imports nothing from ``tune``. Laid out by concept:

:mod:`analysis.data`
    pure data, no drawing: experiments with their hyperparameter specs, per-trial frames, views
    (ASHA rungs, final, best), heatmap bins, importances, marginal effects, the selection regret,
    the paper's analyses read from run records, and the atlas across tasks (groups, signed
    effects, tunability on a surrogate, rung correlations, coverage, the transfer matrix).
:mod:`analysis.charts`, :mod:`analysis.mpl`
    figure builders by backend, over the same info objects (as Optuna's ``visualization`` and
    ``visualization.matplotlib``); :mod:`analysis.style` holds what both share.
:mod:`analysis.dashboard`
    the HTML page, its sections and its static figures.

Commands: ``python analysis/sensitivity.py`` (the dashboard), ``python analysis/atlas.py`` (the
atlas across tasks), ``python analysis/selection.py`` (regret tables), ``python
analysis/paper_figures.py`` (the paper's figures).

Data first (pure functions returning frames and info objects)::

    experiments, problems = load_experiments("ray_results")
    table = trial_table(experiments[0])              # one row per trial
    results = final_results(table, mode="final")     # or mode="best"
    views, by_view = experiment_views(experiments[0], table)  # + "epoch<R>" per ASHA rung
    info = heatmap_info(by_view["epoch5"], "lambda_ot", "lambda_ent", experiments[0].space,
                        mode="epoch5")

then figures (``heatmap_figure(info)``, or ``heatmap_figure_mpl(info)`` with matplotlib for
papers, ...) and the whole dashboard (``build_dashboard("ray_results")``).
"""

from analysis.charts.curves import learning_curves_figure
from analysis.charts.heatmap import heatmap_figure
from analysis.charts.importance import importance_figure, importances_figure
from analysis.charts.marginal import marginal_figure
from analysis.charts.parallel import parallel_figure
from analysis.dashboard import DashboardResult, build_dashboard, export_images
from analysis.data.bins import AxisBins, HeatmapInfo, axis_bins, heatmap_info
from analysis.data.experiments import (
    AnalysisError,
    Experiment,
    NoExperimentsError,
    ParamSpec,
    Problem,
    load_experiment,
    load_experiments,
)
from analysis.data.frames import (
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
from analysis.data.importance import MIN_TRIALS, ImportanceInfo, importance_info, importance_infos
from analysis.data.marginal import MarginalInfo, marginal_infos
from analysis.data.views import View, default_view, experiment_views, view_results
from analysis.mpl.figures import heatmap_figure_mpl, learning_curves_figure_mpl
from ssot.results.paper import paper_accuracy_path, read_paper_accuracy

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
