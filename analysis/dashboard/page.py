"""Assemble the sensitivity dashboard: one self-contained HTML file, plus static heatmap images.

:func:`build_dashboard` reads every experiment under a results folder and writes

* ``dashboard.html``: plotly.js is inlined (no network access at view time); a task selector;
  a selector of the views (:mod:`analysis.data.views`: the final epoch, which every experiment
  opens on, accuracy at each ASHA rung, best-reached); per experiment its budget, the view's best
  trial (in percent, as everywhere), the best config, the optimisation history, the rank
  correlation of each ASHA rung with the final epoch (:mod:`analysis.dashboard.rungs`), per view
  its heatmaps (one colour range per task), importances (fANOVA and PED-ANOVA with bootstrap
  intervals, a note when they disagree), parallel coordinates and marginal effects, its learning
  curves, a sortable table of its trials linked to the plots (:mod:`analysis.dashboard.trials_table`)
  and the validators' regret; a banner on a search still running; a cross-task table beside the
  paper's accuracies that says when the searches it compares had different budgets; a
  "Warnings" box listing every problem found (and any script error); when the folder holds
  finished searches of several tasks, the atlas across them (:mod:`analysis.dashboard.atlas`);
* ``figures/<task>__<experiment>__<x>__<y>.pdf`` and ``.png`` (the folder beside the page, named
  after it, :func:`figures_folder`): each heatmap of the experiment's default view, and
  ``<task>__<experiment>__curves.*``, the learning curves, for papers, drawn with matplotlib (no
  browser needed; ``image_backend="plotly"`` uses kaleido instead).

Only these derived files are written; the experiment folders are never modified. Plots are drawn
lazily in the browser when their section is shown, so large result folders open quickly.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from markupsafe import Markup
from optuna.importance import BaseImportanceEvaluator

from analysis.dashboard.atlas import AtlasSection, dashboard_atlas
from analysis.dashboard.paper_section import PaperSection, paper_section
from analysis.dashboard.proxy import proxy_section
from analysis.dashboard.regret import regret_html
from analysis.dashboard.rungs import rungs_html
from analysis.dashboard.sections import Prepared, prepare, view_figures
from analysis.dashboard.static import DEFAULT_FORMATS, Backend, StaticFigure, write_static
from analysis.dashboard.templates import figures_json, render
from analysis.dashboard.trials_table import trials_table_html
from analysis.data.bins import Bins, HeatmapInfo, color_range
from analysis.data.budget import BUDGET_FIELDS, budget_differences, search_budget
from analysis.data.experiments import AnalysisError, Experiment, NoExperimentsError, load_experiments
from analysis.data.frames import MODE_LABELS, best_trial, cross_task_table, format_metric, format_percent
from analysis.data.importance import LEVEL, MIN_TRIALS, N_BOOT
from analysis.data.paper_runs import paper_input_paths
from analysis.data.views import View
from ssot.results import discovery, metrics, storage
from ssot.results.experiment import Problem
from ssot.results.metrics import DEFAULT_METRIC
from ssot.results.paper import read_paper_accuracy
from ssot.results.trials import STATUSES

__all__ = ["DashboardResult", "build_dashboard", "output_paths", "figures_folder", "DASHBOARD_FILE", "FIGURES_DIR",
           "FIGURES_SUFFIX"]

DASHBOARD_FILE = "dashboard.html"
FIGURES_DIR = "figures"
#: The figures folder of a page named otherwise than :data:`DASHBOARD_FILE`: ``<stem>_figures``.
FIGURES_SUFFIX = "_figures"

_PLOT_CONFIG = {
    "responsive": True,
    "displaylogo": False,
    "toImageButtonOptions": {"format": "svg"},
}


@dataclass
class DashboardResult:
    """What :func:`build_dashboard` wrote.

    Attributes
    ----------
    path : Path
        The HTML dashboard.
    images : list of Path
        The static heatmap images written.
    problems : list of Problem
        Every problem found (also listed in the dashboard's "Warnings" box).
    n_experiments : int
        Experiments drawn.
    n_plots : int
        Plot containers in the HTML.
    """

    path: Path
    images: list[Path] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    n_experiments: int = 0
    n_plots: int = 0


def print_written(result: DashboardResult | Any, summary: str) -> None:
    """What a page command prints once its page is written (the dashboard's and the atlas's):
    each problem on stderr, then the page with ``summary`` and the folder of its static figures."""
    for problem in result.problems:
        print(problem, file=sys.stderr)
    print(f"wrote {result.path} ({summary})")
    if result.images:
        print(f"wrote {len(result.images)} static figure file(s) to {result.images[0].parent}")


# --------------------------------------------------------------------------------------------
# Per-experiment content
# --------------------------------------------------------------------------------------------


@dataclass
class _Section:
    """The figures and HTML of one experiment."""

    experiment: Experiment
    html: Markup
    figures: dict[str, go.Figure]
    static: dict[str, StaticFigure]  # file stem -> heatmap of the default view, learning curves
    views: list[View] = field(default_factory=list)
    default: str = "final"


def _status_summary(table: pd.DataFrame, views: list[View], default: str) -> str:
    counts = table["status"].value_counts()
    parts = ", ".join(f"{int(n)} {status}" for status, n in counts.items())
    uses = ", ".join(view.short for view in views)
    chosen = next(v.short for v in views if v.key == default)
    return (
        f"{len(table)} trials: {parts}. Trials per view: {uses}. This page opens on {chosen}."
    )


def _best_trial_line(experiment: Experiment, table: pd.DataFrame, results: pd.DataFrame, mode: str) -> dict[str, Any]:
    """The view's best trial; in the final-epoch view, the trial of ``best_config.json`` (the one
    rule of :func:`ssot.results.trials.best_trial` on the experiment's metric, ties to the lowest
    id), the trial of the cross-task table. Accuracies in percent."""
    if mode == "final":
        top = best_trial(experiment, table)
        metric = metrics.metric(experiment.metric)
        label = f", {metric.label}" if metric.label else ""
        rule = f"best final {metric.name} ({metric.direction}{label}), ties to the lowest trial id"
        value = ""
        if top is not None:
            value = f"{metric.name} {format_metric(metric.name, top[metric.name], 2)}"
            if metric.name != DEFAULT_METRIC:
                value += f", target accuracy {format_percent(top[DEFAULT_METRIC], 2)}"
    else:
        top = results.iloc[0] if len(results) else None
        what = "best accuracy reached" if mode == "best" else f"best accuracy at epoch {mode.removeprefix('epoch')}"
        rule, value = f"{what}, ties to the lowest trial id", format_percent(top["acc"], 2) if top is not None else ""
    if top is None:
        return {"view": mode, "trial": None, "shown": MODE_LABELS.get(mode, mode)}  # type: ignore[call-overload]  # a mode outside the labels is shown as is
    return {"view": mode, "trial": str(top["trial_id"]), "rule": rule, "value": value, "config": str(top["config"])}


def _build_section(
    prepared: Prepared, zrange: tuple[float, float] | None,
    evaluator: BaseImportanceEvaluator | None, n_boot: int,
) -> _Section:
    """Compute every figure of one experiment and the HTML that holds them (``templates/experiment.html``)."""
    experiment, key, table = prepared.experiment, prepared.key, prepared.table
    made = view_figures(prepared, zrange, evaluator, n_boot=n_boot)
    best = best_trial(experiment, table)
    proxy, proxy_figures = proxy_section(experiment, key)
    made.figures.update(proxy_figures)
    if experiment.best_config is not None:
        config_text = json.dumps(experiment.best_config, indent=2, sort_keys=False)
        config_source = "best_config.json written by the search"
    else:
        config_text = "{}"
        config_source = "no best_config.json yet (the search is still running or the file is unreadable)"
    body = render(
        "experiment.html", experiment=experiment, key=key, made=made, started=experiment.meta.get("started"),
        budget=search_budget(experiment), status_summary=_status_summary(table, made.views, made.default),
        n_trials=len(table), n_running=int((table["status"] == "running").sum()),
        best_lines=[_best_trial_line(experiment, table, made.results[v.key], v.key) for v in made.views],
        config_text=config_text, config_source=config_source,
        zrange=None if zrange is None else (format_percent(zrange[0]), format_percent(zrange[1])),
        rungs=rungs_html(experiment, table), proxy=proxy, regret=regret_html(experiment.meta, experiment.trials),
        trials_table=trials_table_html(experiment, table, key, None if best is None else str(best["trial_id"])),
    )
    return _Section(experiment, body, made.figures, made.static, made.views, made.default)


def _build_sections(
    experiments: Sequence[Experiment], bins: Bins | Mapping[str, Bins],
    evaluator: BaseImportanceEvaluator | None, n_boot: int,
) -> list[_Section]:
    """Every experiment's section; the heatmaps of one task share one colour range."""
    prepared = [prepare(e, f"e{i}", bins) for i, e in enumerate(experiments)]
    by_task: dict[str, list[HeatmapInfo]] = {}
    for item in prepared:
        by_task.setdefault(item.experiment.task, []).extend(panel.info for panel in item.panels)
    ranges = {task: color_range(infos) for task, infos in by_task.items()}
    return [_build_section(item, ranges[item.experiment.task], evaluator, n_boot) for item in prepared]


# --------------------------------------------------------------------------------------------
# Page
# --------------------------------------------------------------------------------------------


def _percent(value: Any, signed: bool = False) -> str:
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return "—"
    return f"{value:+.1f}" if signed else f"{value:.1f}"


def _space_letters(experiments: Sequence[Experiment]) -> dict[str, str]:
    """A letter per distinct searched space (A, B, ...), in order of first appearance."""
    letters: dict[str, str] = {}
    for experiment in experiments:
        space = search_budget(experiment).space
        letters.setdefault(space, chr(ord("A") + len(letters)) if len(letters) < 26 else str(len(letters) + 1))
    return letters


def _budget_note(experiments: Sequence[Experiment], letters: Mapping[str, str]) -> dict[str, Any]:
    """Above the cross-task table: whether the searches compared there share one budget (what
    differs, by value and search, or the shared budget) and the legend of the spaces' letters."""
    legend = "; ".join(f"space {letter}: {space}" for space, letter in letters.items())
    note: dict[str, Any] = {"legend": legend, "n": len(experiments), "shared": "", "differences": []}
    if len(experiments) < 2:
        return note
    differences = budget_differences(experiments)
    if not differences:
        note["shared"] = search_budget(experiments[0]).text()
    for name, values in differences.items():
        shown = {(f"space {letters[v]}" if name == "space" else v): keys for v, keys in values.items()}
        note["differences"].append(f"{BUDGET_FIELDS[name]}: " + ", ".join(f"{v} ({', '.join(keys)})" for v, keys in shown.items()))
    return note


def _cross_rows(table: pd.DataFrame, keys: Mapping[str, str], experiments: Sequence[Experiment]) -> list[dict[str, Any]]:
    """The rows of the cross-task table (``templates/cross_table.html``): text, accuracies in percent."""
    letters = _space_letters(experiments)
    differs = budget_differences(experiments)
    budgets = {e.key: search_budget(e) for e in experiments}
    rows = []
    for row in table.to_dict("records"):
        delta = row["delta"]
        budget = budgets[row["experiment"]]
        texts = {"trials": f"{budget.field_text('trials')} trials", "max_epochs": f"{budget.max_epochs} epochs",
                 "early_stop": f"early stopping {budget.early_stop}", "space": f"space {letters[budget.space]}"}
        rows.append({
            "key": keys[row["experiment"]], "task": row["task"], "name": row["name"], "running": row["status"] == "running",
            "search": row["search"], "counts": " / ".join(str(row[f"n_{status}"]) for status in STATUSES),
            "budget": [{"name": name, "text": text, "differs": name in differs} for name, text in texts.items()],
            "best_final": _percent(row["best_final"]), "best_reached": _percent(row["best_reached"]),
            "source_only": _percent(row["source_only"]), "paper_ssot": _percent(row["paper_ssot"]),
            "delta": _percent(delta, signed=True), "tone": "" if pd.isna(delta) else (" good" if delta >= 0 else " bad"),
            "paper_source_only": _percent(row["paper_source_only"]),
            "other": f"{_percent(row['best_other'])} ({row['best_other_method']})" if row["best_other_method"] else "—",
        })
    return rows


def _render_page(
    root: Path | str, sections: list[_Section], cross: pd.DataFrame, problems: list[Problem], n_boot: int,
    paper: PaperSection, atlas: AtlasSection,
) -> str:
    """The page (``templates/dashboard.html``)."""
    keys = {s.experiment.key: f"e{i}" for i, s in enumerate(sections)}
    figures: dict[str, go.Figure] = {}
    for section in sections:
        figures.update(section.figures)
    experiments = [s.experiment for s in sections]
    return render(
        "dashboard.html",
        title=f"SSOT-Tune sensitivity dashboard: {str(root).rstrip('/').rsplit('/', 1)[-1] or root}",
        root=str(root), generated=datetime.now().strftime("%Y-%m-%d %H:%M"),
        sections=[{"key": f"e{i}", "experiment": s.experiment, "html": s.html} for i, s in enumerate(sections)],
        mode_labels=MODE_LABELS, min_trials=MIN_TRIALS, n_boot=n_boot, level=LEVEL, problems=problems,
        budgets=_budget_note(experiments, _space_letters(experiments)), rows=_cross_rows(cross, keys, experiments),
        paper=paper, atlas=atlas, figures=figures_json(figures), plot_config=_PLOT_CONFIG,
        views={f"e{i}": {"default": s.default, "views": [{"key": v.key, "short": v.short, "label": v.label} for v in s.views]}
               for i, s in enumerate(sections)},
    )


# --------------------------------------------------------------------------------------------
# Entry point
# --------------------------------------------------------------------------------------------


def figures_folder(page: str | os.PathLike[str]) -> Path:
    """The static figures' default folder for the dashboard ``page``: beside it, named after it
    (``figures/`` beside ``dashboard.html``, ``<name>_figures/`` beside ``<name>.html``), so that
    dashboards of one results folder written to different pages never share a figures folder."""
    page = Path(page)
    return page.parent / (FIGURES_DIR if page.name == DASHBOARD_FILE else f"{page.stem}{FIGURES_SUFFIX}")


def output_paths(root: str | os.PathLike[str], out: str | os.PathLike[str] | None = None,
                 figures_dir: str | os.PathLike[str] | None = None) -> tuple[Path, Path]:
    """Where :func:`build_dashboard` writes: the HTML file (default ``root/dashboard.html``) and
    the folder of the static figures (default :func:`figures_folder` of the HTML file:
    ``root/figures``, or ``<name>_figures`` beside ``--out <name>.html``).

    Raises
    ------
    AnalysisError
        If ``root`` is a URI and ``out`` is not given.
    """
    if storage.is_uri(root) and out is None:
        raise AnalysisError(f"The results {root} are not a local folder: pass --out, the local HTML file to write.")
    page = Path(out) if out else Path(root) / DASHBOARD_FILE
    return page, (Path(figures_dir) if figures_dir else figures_folder(page))


def input_paths(root: str | os.PathLike[str], paper_csv: str | os.PathLike[str] | None = None) -> list[Path]:
    """Every local file :func:`build_dashboard` reads: the experiments' files under a local
    ``root`` (:func:`ssot.results.discovery.experiment_inputs`), the run records and t-SNE files
    of its paper section (:func:`analysis.data.paper_runs.paper_input_paths`) and ``paper_csv``.
    What the command's outputs may never be."""
    found = [Path(paper_csv)] if paper_csv else []
    if storage.is_uri(root):
        return found
    return [*discovery.experiment_inputs(root), *paper_input_paths(Path(root)), *found]


def build_dashboard(
    root: str | os.PathLike[str],
    *,
    out: str | os.PathLike[str] | None = None,
    figures_dir: str | os.PathLike[str] | None = None,
    images: bool = True,
    image_format: str | Sequence[str] = DEFAULT_FORMATS,
    image_backend: Backend = "matplotlib",
    bins: Bins | Mapping[str, Bins] = "decades",
    paper_csv: str | os.PathLike[str] | None = None,
    evaluator: BaseImportanceEvaluator | None = None,
    n_boot: int = N_BOOT,
) -> DashboardResult:
    """Read every experiment under ``root`` and write its dashboard and heatmap images.

    Parameters
    ----------
    root : path-like or str
        A results folder (searched recursively for ``experiment.json``), or a URI
        (``s3://bucket/prefix``) whose dashboard is written locally.
    out : path-like, optional
        The HTML file; default ``root/dashboard.html`` (replaced if it exists: the command
        ``analysis/sensitivity.py`` refuses an existing one without ``--overwrite``); required
        when ``root`` is a URI.
    figures_dir : path-like, optional
        Where static figures go; default beside the HTML file, named after it
        (:func:`figures_folder`: ``root/figures`` for the default page, ``<name>_figures`` for
        ``out=<name>.html``).
    images : bool
        Write the static figures (heatmaps of each experiment's default view, learning curves).
    image_format : str or sequence of {"pdf", "png", "svg"}
        Their formats; default PDF and PNG.
    image_backend : {"matplotlib", "plotly"}
        ``"matplotlib"`` (default, no browser needed) or the dashboard's Plotly figures through
        kaleido (needs Chrome or Chromium).
    bins : "decades", int, sequence of float, or Mapping of parameter name to those
        Binning of continuous axes (see :func:`analysis.data.bins.axis_bins`).
    paper_csv : path-like, optional
        The paper's accuracies; default the project's copy (``ssot/paper_accuracy.csv``).
    evaluator : optuna.importance.BaseImportanceEvaluator, optional
        Default ``FanovaImportanceEvaluator(seed=0)``.
    n_boot : int
        Bootstrap resamples of the importances' intervals (seeded); 0 draws none. The cost is
        mostly fANOVA's: about 0.15 s per resample of 20 trials on one CPU core.

    Returns
    -------
    DashboardResult

    Raises
    ------
    analysis.data.experiments.NoExperimentsError
        If ``root`` holds no readable experiment.
    """
    out_path, folder = output_paths(root, out, figures_dir)
    root_path = out_path.parent if storage.is_uri(root) else Path(root)
    formats = [image_format] if isinstance(image_format, str) else list(image_format)
    write_static({}, formats, image_backend)  # checks the arguments before any work
    # run records and t-SNE files (the paper's other analyses) are read from local folders only
    paper_part = PaperSection() if storage.is_uri(root) else paper_section(root_path)
    try:
        experiments, problems = load_experiments(root)
    except NoExperimentsError:
        if not paper_part:
            raise
        experiments, problems = [], []
    problems.extend(paper_part.problems)
    # several tasks: the atlas across them (analysis/atlas.py draws the same on a page of its own)
    atlas_part = dashboard_atlas(root_path, experiments, local=not storage.is_uri(root), evaluator=evaluator)
    problems.extend(atlas_part.problems)
    paper = read_paper_accuracy(Path(paper_csv) if paper_csv else None, problems)
    if n_boot < 0:
        raise ValueError(f"The 'n_boot' parameter must be an int >= 0. Got {n_boot!r} instead.")
    sections = _build_sections(experiments, bins, evaluator, n_boot)
    written: list[Path] = []
    if images:
        static = {folder / stem: fig for s in sections for stem, fig in s.static.items()}
        written, image_problems = write_static(static, formats, image_backend)
        problems.extend(image_problems)
    page = _render_page(str(root) if storage.is_uri(root) else root_path, sections, cross_task_table(experiments, paper), problems,
                        n_boot, paper_part, atlas_part)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(page, encoding="utf-8")
    n_plots = sum(len(s.figures) for s in sections) + len(paper_part.figures) + len(atlas_part.figures)
    return DashboardResult(out_path, written, problems, len(experiments), n_plots)
