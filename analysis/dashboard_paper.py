"""The dashboard's section of the paper's other analyses: class weights vs truth, OT solvers, feature maps.

:func:`paper_section` finds, under a results folder (:func:`analysis.paper_info.find_paper_inputs`),

* run records whose class weights can be drawn against the truth (labelled target,
  ``use_class_weights`` on): per record, the estimated target class proportions per epoch
  against the true ones (outlier classes dashed red) and the final estimate beside the truth,
  plus a table of the mass left on outlier classes at the end;
* the output of ``tune/solvers.py`` (run records of one task under one folder that differ in
  ``ot_solver``): OT value per epoch and time per epoch;
* t-SNE files of ``tune/feature_maps.py``: one panel per model, coloured by class, ``o`` source,
  ``+`` target, outlier classes grey.

The content comes from :mod:`analysis.paper_info` (also drawn with matplotlib by
:mod:`analysis.paper_figures`); this module only renders it with Plotly. The section is
self-contained HTML (its figures in a JSON script element, drawn by its own script once the page
has loaded), so :mod:`analysis.dashboard` adds it with one call (:meth:`PaperSection.insert`).
"""
from __future__ import annotations

import html
import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
from plotly.subplots import make_subplots

from analysis.paper_info import (
    ClassWeightInfo,
    FeaturePanel,
    FigureError,
    SolverCurve,
    class_weight_info,
    feature_map_panels,
    find_paper_inputs,
    has_class_weights,
    solver_info,
)
from tune.schema import Problem

__all__ = ["PaperSection", "paper_section", "class_weight_plotly", "solver_plotly", "feature_map_plotly",
           "MAX_CLASS_WEIGHT_PLOTS"]

#: Class-weight plots drawn at most (the table lists every record).
MAX_CLASS_WEIGHT_PLOTS = 24
_TAB10 = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"]
_PALETTE = [c for i, c in enumerate(_TAB10) if i != 3]  # red is for outliers
_OUTLIER, _GREY = "#d62728", "#bbbbbb"
_LEGEND = {"orientation": "h", "y": -0.2, "font": {"size": 10}}


def class_weight_plotly(info: ClassWeightInfo, name: str = "") -> go.Figure:
    """(a) estimated proportion per class over epochs, dotted truth, outliers dashed red;
    (b) final estimate beside the truth; the final outlier mass in the title."""
    fig = make_subplots(rows=1, cols=2, subplot_titles=("estimate per class (dotted: truth)", "final epoch"))
    outliers = set(info.outliers)
    colour = {k: _PALETTE[i % len(_PALETTE)] for i, k in enumerate(k for k in range(len(info.truth)) if k not in outliers)}
    for k, cls in enumerate(info.names):
        out = k in outliers
        fig.add_trace(go.Scatter(x=info.epochs, y=info.estimate[:, k], mode="lines+markers", name=f"{cls} (outlier)" if out else cls,
                                 legendgroup=cls, line={"color": _OUTLIER if out else colour[k], "dash": "dash" if out else "solid"},
                                 marker={"size": 4}), row=1, col=1)
        if not out:
            fig.add_trace(go.Scatter(x=[info.epochs[0], info.epochs[-1]], y=[info.truth[k]] * 2, mode="lines", legendgroup=cls,
                                     showlegend=False, hoverinfo="skip", line={"color": colour[k], "dash": "dot", "width": 1}), row=1, col=1)
    fig.add_trace(go.Bar(x=info.names, y=info.truth, name="true (oracle)", marker_color="#999999"), row=1, col=2)
    fig.add_trace(go.Bar(x=info.names, y=info.estimate[-1], name="SSOT estimate",
                         marker_color=[_OUTLIER if k in outliers else _TAB10[0] for k in range(len(info.names))]), row=1, col=2)
    fig.update_xaxes(title_text="epoch (0 = source-only)", row=1, col=1)
    fig.update_yaxes(title_text="estimated target proportion", row=1, col=1)
    fig.update_yaxes(title_text="target proportion", row=1, col=2)
    fig.update_layout(title=f"{info.title}{f' ({name})' if name else ''}<br><sub>mass on outlier classes at the last epoch: "
                            f"{info.outlier_mass:.4f}</sub>", barmode="group", height=500, margin={"t": 90}, legend=_LEGEND)
    return fig


def solver_plotly(curves: list[SolverCurve], title: str) -> go.Figure:
    """(a) OT value per epoch per solver; (b) mean time per adaptation epoch (s)."""
    fig = make_subplots(rows=1, cols=2, subplot_titles=("OT value (epoch mean)", "time per adaptation epoch (s)"))
    for i, c in enumerate(curves):
        fig.add_trace(go.Scatter(x=c.epochs, y=c.values, mode="lines+markers", name=c.label, line={"color": _TAB10[i % 10]}), row=1, col=1)
    fig.add_trace(go.Bar(x=[c.label for c in curves], y=[c.time_per_epoch for c in curves], showlegend=False,
                         text=[f"{c.time_per_epoch:.2f}" for c in curves], textposition="outside",
                         marker_color=[_TAB10[i % 10] for i in range(len(curves))]), row=1, col=2)
    fig.update_xaxes(title_text="epoch", row=1, col=1)
    fig.update_layout(title=title, height=460, legend=_LEGEND)
    return fig


def feature_map_plotly(panels: list[FeaturePanel], title: str) -> go.Figure:
    """One panel per model: ``o`` source, ``+`` target, colour = class, outlier classes grey."""
    fig = make_subplots(rows=1, cols=len(panels), subplot_titles=[p.model for p in panels])
    for col, panel in enumerate(panels, start=1):
        for dom, (dom_name, symbol) in enumerate((("source", "circle-open"), ("target", "cross-thin-open"))):
            for cls in np.unique(panel.label):
                sel = (panel.domain == dom) & (panel.label == cls)
                if not sel.any():
                    continue
                out = bool(panel.outlier[sel][0])
                name = f"{dom_name} {cls}{' (outlier)' if out else ''}"
                fig.add_trace(go.Scattergl(x=panel.xy[sel, 0], y=panel.xy[sel, 1], mode="markers", name=name, legendgroup=name,
                                           showlegend=col == 1, marker={"symbol": symbol, "size": 6, "line": {"width": 1},
                                                                        "color": _GREY if out else _TAB10[int(cls) % 10]}),
                              row=1, col=col)
    fig.update_xaxes(showticklabels=False)
    fig.update_yaxes(showticklabels=False)
    fig.update_layout(title=f"{title}<br><sub>o source, + target, grey: outlier classes</sub>", height=620, margin={"t": 90},
                      legend=_LEGEND)
    return fig


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


def _fmt(value: float | None, digits: int = 4) -> str:
    return "&mdash;" if value is None else f"{value:.{digits}f}"


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
            acc = "&mdash;" if info.target_acc is None else f"{100 * info.target_acc:.1f}"
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
        parts.append('<h3 id="paper-feature-maps">Feature maps</h3><p class="meta">t-SNE files of tune/feature_maps.py: '
                     "source and target features of each model.</p>" f'<div class="grid">{"".join(divs)}</div>')
    if parts:
        section.html = ('<section class="paper-analyses" style="border-top: 2px solid #ccc; margin-top: 18px">'
                        "<h2>The paper's other analyses</h2>" + "".join(parts) + "</section>")
    return section
