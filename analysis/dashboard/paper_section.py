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
laid out by ``templates/paper_section.html``; the dashboard's page puts it before the end of its
``<main>``, with its figures in a JSON script element drawn once the page has loaded.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import plotly.graph_objects as go
from markupsafe import Markup

from analysis.charts.paper import class_weight_plotly, feature_map_plotly, solver_plotly
from analysis.dashboard.templates import figures_json, render
from analysis.data.paper_runs import (
    FigureError,
    class_weight_info,
    feature_map_panels,
    find_paper_inputs,
    has_class_weights,
    solver_info,
)
from ssot.results.experiment import Problem

__all__ = ["PaperSection", "paper_section", "MAX_CLASS_WEIGHT_PLOTS"]

#: Class-weight plots drawn at most (the table lists every record).
MAX_CLASS_WEIGHT_PLOTS = 24


@dataclass
class PaperSection:
    """The section's HTML (empty when nothing was found), its figures by div id, and its problems."""

    html: Markup | str = ""
    figures: dict[str, go.Figure] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    #: The id of the script element holding its figures, and the class of its plots' containers.
    script_id = "paper-figures"
    plot_class = "paper-plot"

    def __bool__(self) -> bool:
        return bool(self.html)

    def figures_json(self) -> Markup:
        return figures_json(self.figures)


def _rel(path: Path, root: Path) -> str:
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)


def _fmt(value: float | None, digits: int = 4) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def paper_section(root: str | Path) -> PaperSection:
    """The section for every paper-analysis input under ``root`` (see the module docstring)."""
    root = Path(root)
    found = find_paper_inputs(root)
    section = PaperSection(problems=list(found.problems))
    weights: dict[str, Any] = {}
    weighted = {p: r for p, r in found.records.items() if has_class_weights(r)}
    rows: list[dict[str, Any]]
    divs: list[str]
    if weighted:
        rows, divs = [], []
        for i, (path, record) in enumerate(weighted.items()):
            try:
                info = class_weight_info(record)
            except (FigureError, KeyError, IndexError, ValueError) as exc:
                section.problems.append(Problem(path, f"its class weights cannot be drawn ({exc})"))
                continue
            rows.append({"record": _rel(path, root), "task": info.title.rsplit(" ", 1)[-1],
                         "acc": "—" if info.target_acc is None else f"{100 * info.target_acc:.1f}",
                         "source_only": _fmt(info.outlier_mass_source_only), "mass": _fmt(info.outlier_mass)})
            if i < MAX_CLASS_WEIGHT_PLOTS:
                section.figures[f"paper-cw{i}"] = class_weight_plotly(info, _rel(path, root))
                divs.append(f"paper-cw{i}")
        weights = {"rows": rows, "divs": divs, "skipped": len(found.records) - len(weighted),
                   "more": len(weighted) - MAX_CLASS_WEIGHT_PLOTS}
    solvers: dict[str, Any] = {}
    comparisons = found.solver_comparisons()
    if comparisons:
        rows, divs = [], []
        for i, ((folder, task), records) in enumerate(comparisons.items()):
            curves = solver_info(records)
            title = f"OT solvers, task {task} ({_rel(folder, root)})"
            section.figures[f"paper-solvers{i}"] = solver_plotly(curves, title)
            divs.append(f"paper-solvers{i}")
            rows += [{"folder": _rel(folder, root), "task": task, "solver": c.solver, "runs": c.n_runs,
                      "acc": f"{100 * c.target_acc:.1f}", "value": f"{c.values[-1]:.4g}", "time": f"{c.time_per_epoch:.2f}"}
                     for c in curves]
        solvers = {"rows": rows, "divs": divs}
    maps = []
    for i, (path, data) in enumerate(found.feature_maps.items()):
        section.figures[f"paper-tsne{i}"] = feature_map_plotly(feature_map_panels(data), f"t-SNE of {_rel(path, root)}")
        maps.append(f"paper-tsne{i}")
    if weights or solvers or maps:
        section.html = render("paper_section.html", weights=weights, solvers=solvers, maps=maps, max_plots=MAX_CLASS_WEIGHT_PLOTS)
    return section
