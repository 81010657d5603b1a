"""Assemble the sensitivity dashboard: one self-contained HTML file, plus static heatmap images.

:func:`build_dashboard` reads every experiment under a results folder and writes

* ``dashboard.html``: plotly.js is inlined (no network access at view time); a task selector;
  a toggle between the final-epoch and the best-reached views; per experiment its heatmaps,
  learning curves, parallel coordinates, importances and best config; a cross-task table beside
  the paper's accuracies; a "Warnings" box listing every problem found (and any script error);
* ``figures/<task>__<experiment>__<x>__<y>.png`` (or ``.svg``): each heatmap of the final-epoch
  view, for papers (needs ``kaleido``; skipped with one warning if it cannot run).

Only these derived files are written; the experiment folders are never modified. Plots are drawn
lazily in the browser when their section is shown, so large result folders open quickly.
"""

from __future__ import annotations

import html
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from string import Template
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import plotly.io as pio
from optuna.importance import BaseImportanceEvaluator
from plotly.offline import get_plotlyjs

from analysis._template import PAGE
from analysis.dashboard_paper import paper_section
from analysis.experiments import Experiment, NoExperimentsError, load_experiments
from analysis.figures import (
    heatmap_figure,
    learning_curves_figure,
    param_label,
)
from analysis.bins import Bins, heatmap_info
from analysis.figures_trials import importance_figure, parallel_figure
from analysis.frames import (
    MODE_LABELS,
    MODES,
    Mode,
    best_trial,
    cross_task_table,
    final_results,
    learning_curves,
    param_pairs,
    source_only_accuracy,
    trial_table,
)
from analysis.images import ImageFormat, export_images
from analysis.importance import importance_info
from analysis.paper import read_paper_accuracy
from analysis.selection import regret_html
from tune import schema
from tune.schema import Problem

__all__ = ["DashboardResult", "build_dashboard", "export_images", "DASHBOARD_FILE", "FIGURES_DIR"]

DASHBOARD_FILE = "dashboard.html"
FIGURES_DIR = "figures"

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


# --------------------------------------------------------------------------------------------
# Per-experiment content
# --------------------------------------------------------------------------------------------


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-") or "x"


@dataclass
class _Section:
    """The figures and HTML of one experiment."""

    experiment: Experiment
    html: str
    figures: dict[str, go.Figure]
    static: dict[str, go.Figure]  # file stem -> heatmap of the final-epoch view


def _heatmap_title(experiment: Experiment, x: str, y: str) -> str:
    return (
        f"{experiment.task} ({experiment.search}): "
        f"{param_label(y)} vs {param_label(x)}"
    )


def _status_summary(table: pd.DataFrame, results: Mapping[Mode, pd.DataFrame]) -> str:
    counts = table["status"].value_counts()
    parts = ", ".join(f"{int(n)} {status}" for status, n in counts.items())
    return (
        f"{len(table)} trials: {parts}. The final-epoch view uses {len(results['final'])} of "
        f"them, the best-reached view {len(results['best'])}; diverged and errored trials are "
        "in neither."
    )


def _best_trial_line(experiment: Experiment, table: pd.DataFrame, results: pd.DataFrame, mode: Mode) -> str:
    """The view's best trial; in the final-epoch view, the trial of ``best_config.json`` (the one
    rule of :func:`tune.schema.best_trial` on the experiment's metric, ties to the lowest id)."""
    if mode == "final":
        top = best_trial(experiment, table)
        metric = schema.metric(experiment.metric)
        label = f", {metric.label}" if metric.label else ""
        rule = f"best final {metric.name} ({metric.direction}{label}), ties to the lowest trial id"
        value = f"{metric.name} {top[metric.name]:.4f}" if top is not None else ""
    else:
        top = results.iloc[0] if len(results) else None
        rule, value = "best accuracy reached, ties to the lowest trial id", f"{100 * top['acc']:.2f}%" if top is not None else ""
    if top is None:
        return f"No trial in the {MODE_LABELS[mode]} view."
    return (
        f'Best trial in this view ({html.escape(rule)}): <b data-trial="{html.escape(str(top["trial_id"]))}">'
        f"{html.escape(str(top['trial_id']))}</b>, {html.escape(value)} &mdash; <code>{html.escape(str(top['config']))}</code>"
    )


def _config_block(experiment: Experiment, key: str) -> str:
    if experiment.best_config is not None:
        text = json.dumps(experiment.best_config, indent=2, sort_keys=False)
        source = "best_config.json written by the search"
    else:
        text = "{}"
        source = "no best_config.json yet (the search is still running or the file is unreadable)"
    return (
        f'<div class="config"><div class="config-head">Best config ({html.escape(source)}) '
        f'<button type="button" class="copy" data-target="cfg-{key}">Copy</button></div>'
        f'<pre id="cfg-{key}">{html.escape(text)}</pre></div>'
    )


def _plot_div(div_id: str, mode: Mode | None = None) -> str:
    mode_class = f" mode-{mode}" if mode else ""
    return f'<div class="plot{mode_class}" id="{div_id}"></div>'


def _build_section(
    experiment: Experiment, index: int, bins: Bins | Mapping[str, Bins],
    evaluator: BaseImportanceEvaluator | None,
) -> _Section:
    """Compute every figure of one experiment and the HTML that holds them."""
    key = f"e{index}"
    table = trial_table(experiment)
    results = {mode: final_results(table, mode) for mode in MODES}
    figures: dict[str, go.Figure] = {}
    static: dict[str, go.Figure] = {}
    heatmaps: list[str] = []
    for number, (x, y) in enumerate(param_pairs(experiment.space)):
        for mode in MODES:
            info = heatmap_info(results[mode], x, y, experiment.space, bins=bins, mode=mode)
            div_id = f"{key}-heat{number}-{mode}"
            figures[div_id] = heatmap_figure(info, _heatmap_title(experiment, x, y))
            heatmaps.append(_plot_div(div_id, mode))
            if mode == "final":
                stem = f"{_slug(experiment.task)}__{_slug(experiment.name)}__{x}__{y}"
                static[stem] = figures[div_id]
    curves_id = f"{key}-curves"
    figures[curves_id] = learning_curves_figure(
        learning_curves(experiment), experiment.max_epochs, f"{experiment.task}: learning curves",
        source_only_accuracy(experiment),
    )
    others = [_plot_div(curves_id)]
    for mode in MODES:
        figures[f"{key}-parallel-{mode}"] = parallel_figure(
            results[mode], experiment.space, mode,
            f"{experiment.task}: hyperparameters to accuracy",
        )
        figures[f"{key}-importance-{mode}"] = importance_figure(
            importance_info(results[mode], experiment.space, evaluator), mode,
            f"{experiment.task}: hyperparameter importance",
        )
        others += [_plot_div(f"{key}-parallel-{mode}", mode),
                   _plot_div(f"{key}-importance-{mode}", mode)]
    best_lines = "".join(
        f'<p class="mode-{mode} best-line">{_best_trial_line(experiment, table, results[mode], mode)}</p>'
        for mode in MODES
    )
    meta = experiment.meta
    header = (
        f"<h2>{html.escape(experiment.task)} &mdash; {html.escape(experiment.name)} "
        f"<small>({html.escape(experiment.search)} search, {html.escape(experiment.status)}, "
        f"{experiment.max_epochs} epochs)</small></h2>"
        f'<p class="meta">{html.escape(str(experiment.path))} &middot; dataset '
        f"{html.escape(experiment.dataset or '?')} &middot; started "
        f"{html.escape(str(meta.get('started') or '?'))}</p>"
        f'<p class="meta">{html.escape(_status_summary(table, results))}</p>'
    )
    if not heatmaps:
        heatmaps.append('<p class="note">Fewer than two searched hyperparameters: no heatmap.</p>')
    body = (
        f'<section class="experiment" data-key="{key}" hidden>{header}{best_lines}'
        f"{_config_block(experiment, key)}"
        f'<h3>Sensitivity heatmaps</h3><div class="grid">{"".join(heatmaps)}</div>'
        f'<h3>Trials</h3><div class="grid">{"".join(others)}</div>'
        f"{regret_html(meta, experiment.trials)}</section>"
    )
    return _Section(experiment, body, figures, static)


# --------------------------------------------------------------------------------------------
# Page
# --------------------------------------------------------------------------------------------


def _percent(value: Any, signed: bool = False) -> str:
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return "&mdash;"
    return f"{value:+.1f}" if signed else f"{value:.1f}"


def _cross_task_html(table: pd.DataFrame, keys: Mapping[str, str]) -> str:
    head = (
        "<tr><th>task</th><th>experiment</th><th>search</th><th>trials (done / ASHA-stopped / "
        "diverged / errored / running)</th><th>best final-epoch acc (%)</th>"
        "<th>best acc reached (%)</th><th>our source-only (%)</th><th>paper SSOT (%)</th>"
        "<th>&Delta; vs paper</th>"
        "<th>paper source-only (%)</th><th>paper best other (%)</th></tr>"
    )
    rows = []
    for row in table.to_dict("records"):
        counts = " / ".join(
            str(row[f"n_{status}"]) for status in schema.STATUSES
        )
        delta = row["delta"]
        tone = "" if pd.isna(delta) else (" good" if delta >= 0 else " bad")
        other = (
            f"{_percent(row['best_other'])} ({html.escape(row['best_other_method'])})"
            if row["best_other_method"] else "&mdash;"
        )
        rows.append(
            f'<tr data-key="{keys[row["experiment"]]}" class="pick">'
            f"<td>{html.escape(row['task'])}</td><td>{html.escape(row['name'])}"
            f"{' (running)' if row['status'] == 'running' else ''}</td>"
            f"<td>{html.escape(row['search'])}</td><td>{counts}</td>"
            f"<td>{_percent(row['best_final'])}</td><td>{_percent(row['best_reached'])}</td>"
            f"<td>{_percent(row['source_only'])}</td>"
            f"<td>{_percent(row['paper_ssot'])}</td><td class=\"delta{tone}\">"
            f"{_percent(delta, signed=True)}</td><td>{_percent(row['paper_source_only'])}</td>"
            f"<td>{other}</td></tr>"
        )
    return f'<table class="cross">{head}{"".join(rows)}</table>'


def _warnings_html(problems: list[Problem]) -> str:
    items = "".join(f"<li>{html.escape(str(p))}</li>" for p in problems)
    hidden = "" if problems else " hidden"
    return (
        f'<div id="warnings" class="warnings"{hidden}><h3>Warnings ({len(problems)})</h3>'
        f"<ul>{items}</ul></div>"
    )


def _figures_json(figures: Mapping[str, go.Figure]) -> str:
    """All figures as one JS object literal, safe inside a ``<script>`` element."""
    parts = [
        f"{json.dumps(div_id)}:{pio.to_json(figure, validate=False)}"
        for div_id, figure in figures.items()
    ]
    return ("{" + ",".join(parts) + "}").replace("</", "<\\/")


_PAGE = Template(PAGE)


def _render_page(
    root: Path, sections: list[_Section], cross: pd.DataFrame, problems: list[Problem]
) -> str:
    keys = {s.experiment.key: f"e{i}" for i, s in enumerate(sections)}
    options = "".join(
        f'<option value="{keys[s.experiment.key]}">{html.escape(s.experiment.task)} &mdash; '
        f"{html.escape(s.experiment.name)} ({html.escape(s.experiment.search)})</option>"
        for s in sections
    )
    figures: dict[str, go.Figure] = {}
    for section in sections:
        figures.update(section.figures)
    return _PAGE.substitute(
        title=html.escape(f"SSOT-Tune sensitivity dashboard: {root.name or root}"),
        root=html.escape(str(root)),
        generated=datetime.now().strftime("%Y-%m-%d %H:%M"),
        options=options,
        mode_final=html.escape(MODE_LABELS["final"]),
        mode_best=html.escape(MODE_LABELS["best"]),
        warnings=_warnings_html(problems),
        cross=_cross_task_html(cross, keys),
        sections="".join(s.html for s in sections),
        plotlyjs=get_plotlyjs(),
        figures=_figures_json(figures),
        mode_labels=json.dumps(MODE_LABELS),
        plot_config=json.dumps(_PLOT_CONFIG),
    )


# --------------------------------------------------------------------------------------------
# Entry point
# --------------------------------------------------------------------------------------------


def build_dashboard(
    root: str | os.PathLike[str],
    *,
    out: str | os.PathLike[str] | None = None,
    figures_dir: str | os.PathLike[str] | None = None,
    images: bool = True,
    image_format: ImageFormat = "png",
    bins: Bins | Mapping[str, Bins] = "decades",
    paper_csv: str | os.PathLike[str] | None = None,
    evaluator: BaseImportanceEvaluator | None = None,
) -> DashboardResult:
    """Read every experiment under ``root`` and write its dashboard and heatmap images.

    Parameters
    ----------
    root : path-like
        A results folder (searched recursively for ``experiment.json``).
    out : path-like, optional
        The HTML file; default ``root/dashboard.html`` (replaced if it exists: it is derived).
    figures_dir : path-like, optional
        Where static heatmaps go; default ``root/figures``.
    images : bool
        Write the static heatmap images.
    image_format : {"png", "svg"}
        Their format.
    bins : "decades", int, sequence of float, or Mapping of parameter name to those
        Binning of continuous axes (see ``analysis.frames.axis_bins``).
    paper_csv : path-like, optional
        The paper's accuracies; default the project's copy (``ssot/paper_accuracy.csv``).
    evaluator : optuna.importance.BaseImportanceEvaluator, optional
        Default ``FanovaImportanceEvaluator(seed=0)``.

    Returns
    -------
    DashboardResult

    Raises
    ------
    analysis.experiments.NoExperimentsError
        If ``root`` holds no readable experiment.
    """
    root_path = Path(root)
    paper_part = paper_section(root_path)  # run records and t-SNE files: the paper's other analyses
    try:
        experiments, problems = load_experiments(root_path)
    except NoExperimentsError:
        if not paper_part:
            raise
        experiments, problems = [], []
    problems.extend(paper_part.problems)
    paper = read_paper_accuracy(Path(paper_csv) if paper_csv else None, problems)
    sections = [_build_section(e, i, bins, evaluator) for i, e in enumerate(experiments)]
    written: list[Path] = []
    if images:
        folder = Path(figures_dir) if figures_dir else root_path / FIGURES_DIR
        static = {folder / stem: fig for s in sections for stem, fig in s.static.items()}
        written, image_problems = export_images(static, image_format)
        problems.extend(image_problems)
    out_path = Path(out) if out else root_path / DASHBOARD_FILE
    page = paper_part.insert(_render_page(root_path, sections, cross_task_table(experiments, paper), problems))
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(page, encoding="utf-8")
    n_plots = sum(len(s.figures) for s in sections) + len(paper_part.figures)
    return DashboardResult(out_path, written, problems, len(experiments), n_plots)
