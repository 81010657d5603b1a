"""The dashboard's section of the paper's other analyses: class weights vs truth, OT solvers, feature maps.

:func:`paper_section` finds, under a results folder (:func:`analysis.data.paper_runs.find_paper_inputs`),

* run records whose class weights can be drawn against the truth (labelled target,
  ``use_class_weights`` on): per record, the estimated target class proportions per epoch
  against the true ones (outlier classes dashed red) and the final estimate beside the truth,
  plus a table of the mass left on outlier classes at the end;
* the output of ``tune/solvers.py`` (run records of one task under one folder that differ in
  ``ot_solver``): OT value per epoch and time per epoch;
* t-SNE files of ``python -m ssot.feature_maps``: one panel per model, coloured by class, ``o`` source,
  ``+`` target, outlier classes grey.

The content comes from :mod:`analysis.data.paper_runs`, drawn by :mod:`analysis.charts.paper`
(also drawn with matplotlib by :mod:`analysis.mpl.paper`); this module only lays it out. The section is
self-contained HTML (its figures in a JSON script element, drawn by its own script once the page
has loaded), so :mod:`analysis.dashboard.page` adds it with one call (:meth:`PaperSection.insert`).
"""
from __future__ import annotations

import html
import json
from dataclasses import dataclass, field
from pathlib import Path

import plotly.graph_objects as go
import plotly.io as pio

from analysis.charts.paper import class_weight_plotly, feature_map_plotly, solver_plotly
from analysis.data.paper_runs import (
    FigureError,
    class_weight_info,
    feature_map_panels,
    find_paper_inputs,
    has_class_weights,
    solver_info,
)
from ssot.results.experiment import Problem
from ssot.results.numbers import fixed, percent

__all__ = ["PaperSection", "paper_section", "MAX_CLASS_WEIGHT_PLOTS"]

#: Class-weight plots drawn at most (the table lists every record).
MAX_CLASS_WEIGHT_PLOTS = 24


@dataclass
class PaperSection:
    """The section's HTML (empty when nothing was found), its figures by div id, and its problems."""

    html: str = ""
    figures: dict[str, go.Figure] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.html)

    def insert(self, page: str) -> str:
        """``page`` with this section (and the script drawing it) before its ``</main>``."""
        if not self.html:
            return page
        data = ("{" + ",".join(f"{json.dumps(k)}:{pio.to_json(f, validate=False)}" for k, f in self.figures.items())
                + "}").replace("</", "<\\/")
        script = (f'<script type="application/json" id="paper-figures">{data}</script>'
                  "<script>document.addEventListener('DOMContentLoaded', function () {"
                  "var figs = JSON.parse(document.getElementById('paper-figures').textContent);"
                  "document.querySelectorAll('.paper-plot').forEach(function (div) { var f = figs[div.id];"
                  "Plotly.newPlot(div, f.data, f.layout || {}, {responsive: true, displaylogo: false}).then(function () {"
                  "div.setAttribute('data-rendered', 'true'); }, function (e) { (window.__dashboardReport || console.error)(div.id + ': ' + e); });"
                  "}); });</script>")
        head, sep, tail = page.partition("</main>")
        return head + self.html + script + sep + tail if sep else page + self.html + script


def _rel(path: Path, root: Path) -> str:
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)


def _fmt(value: float | None) -> str:
    return fixed(value, 4, missing="&mdash;")


def _div(div_id: str) -> str:
    return (f'<div class="paper-plot" id="{div_id}" style="background:#fff; border:1px solid #e3e3e3; '
            f'border-radius:4px; min-height:420px"></div>')


def paper_section(root: str | Path) -> PaperSection:
    """The section for every paper-analysis input under ``root`` (see the module docstring)."""
    root = Path(root)
    found = find_paper_inputs(root)
    section = PaperSection(problems=list(found.problems))
    parts: list[str] = []
    weighted = {p: r for p, r in found.records.items() if has_class_weights(r)}
    if weighted:
        rows, divs = [], []
        for i, (path, record) in enumerate(weighted.items()):
            try:
                info = class_weight_info(record)
            except (FigureError, KeyError, IndexError, ValueError) as exc:
                section.problems.append(Problem(path, f"its class weights cannot be drawn ({exc})"))
                continue
            acc = percent(info.target_acc, missing="&mdash;")
            rows.append(f"<tr><td>{html.escape(_rel(path, root))}</td><td>{html.escape(info.title.rsplit(' ', 1)[-1])}</td>"
                        f"<td>{acc}</td><td>{_fmt(info.outlier_mass_source_only)}</td>"
                        f'<td class="outlier-mass">{_fmt(info.outlier_mass)}</td></tr>')
            if i < MAX_CLASS_WEIGHT_PLOTS:
                section.figures[f"paper-cw{i}"] = class_weight_plotly(info, _rel(path, root))
                divs.append(_div(f"paper-cw{i}"))
        skipped = len(found.records) - len(weighted)
        more = len(weighted) - MAX_CLASS_WEIGHT_PLOTS
        parts.append(
            '<h3 id="paper-class-weights">Class weights vs truth</h3><p class="meta">Estimated target class proportions '
            "p<sup>s</sup>&odot;m per epoch against the true ones of the labelled target; outlier classes (absent from "
            "the target) dashed red. Outlier mass: the share of target predictions on outlier classes."
            + (f" {skipped} run record(s) without class weights to draw (use_class_weights=false, unlabelled target, "
               "or written before the class frequencies were recorded) are left out." if skipped else "")
            + (f" Plots of the first {MAX_CLASS_WEIGHT_PLOTS} records; the table lists all." if more > 0 else "") + "</p>"
            '<table class="cross"><tr><th>run record</th><th>task</th><th>final target acc (%)</th>'
            "<th>outlier mass, source-only</th><th>outlier mass, last epoch</th></tr>" + "".join(rows) + "</table>"
            f'<div class="grid">{"".join(divs)}</div>')
    comparisons = found.solver_comparisons()
    if comparisons:
        rows, divs = [], []
        for i, ((folder, task), records) in enumerate(comparisons.items()):
            curves = solver_info(records)
            title = f"OT solvers, task {task} ({_rel(folder, root)})"
            section.figures[f"paper-solvers{i}"] = solver_plotly(curves, title)
            divs.append(_div(f"paper-solvers{i}"))
            rows += [f"<tr><td>{html.escape(_rel(folder, root))}</td><td>{html.escape(task)}</td><td>{html.escape(c.solver)}</td>"
                     f"<td>{c.n_runs}</td><td>{100 * c.target_acc:.1f}</td><td>{c.values[-1]:.4g}</td>"
                     f'<td class="time-per-epoch">{c.time_per_epoch:.2f}</td></tr>' for c in curves]
        parts.append(
            '<h3 id="paper-solvers">OT solvers</h3><p class="meta">Runs of tune/solvers.py: the OT value per epoch '
            "(net/vector: the semi-dual H before the ascent step; sinkhorn: the plan's cost; not the same quantity) and "
            "the mean time per adaptation epoch.</p>"
            '<table class="cross"><tr><th>folder</th><th>task</th><th>OT solver</th><th>runs</th><th>final target acc (%)</th>'
            "<th>OT value, last epoch</th><th>time / epoch (s)</th></tr>" + "".join(rows) + "</table>"
            f'<div class="grid">{"".join(divs)}</div>')
    if found.feature_maps:
        divs = []
        for i, (path, data) in enumerate(found.feature_maps.items()):
            section.figures[f"paper-tsne{i}"] = feature_map_plotly(feature_map_panels(data), f"t-SNE of {_rel(path, root)}")
            divs.append(_div(f"paper-tsne{i}"))
        parts.append('<h3 id="paper-feature-maps">Feature maps</h3><p class="meta">t-SNE files of python -m ssot.feature_maps: '
                     "source and target features of each model.</p>" f'<div class="grid">{"".join(divs)}</div>')
    if parts:
        section.html = ('<section class="paper-analyses" style="border-top: 2px solid #ccc; margin-top: 18px">'
                        "<h2>The paper's other analyses</h2>" + "".join(parts) + "</section>")
    return section
