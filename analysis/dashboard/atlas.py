"""The atlas across tasks: its HTML section (also a section of the dashboard when the results
hold several tasks) and its self-contained page with static figures (``analysis/atlas.py``).

:func:`atlas_section` lays out, for the searches of several tasks (one per task), what the atlas's
data modules compute, group by group (:mod:`analysis.data.atlas`: tasks that share space and
budget): importance per task and its spread (:mod:`analysis.data.importance`), signed effects
(:mod:`analysis.data.effects`), tunability (:mod:`analysis.data.tunability`), the transfer
matrix (:mod:`analysis.data.transfer`), trust in early stopping (:mod:`analysis.data.rungs`) and
coverage (:mod:`analysis.data.coverage`), drawn by :mod:`analysis.charts.atlas` (and
:mod:`analysis.mpl.atlas` for the static figures). Every table and figure says how many trials or
seeds its numbers rest on. The section carries its figures in a JSON script element and draws
them once the page has loaded, so :func:`analysis.dashboard.page.build_dashboard` adds it with
one call (:meth:`AtlasSection.insert`), and :func:`build_atlas_page` wraps it into a page of its own.
"""

from __future__ import annotations

import html
import json
import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial
from pathlib import Path
from string import Template
from typing import Any

import pandas as pd
import plotly.graph_objects as go
import plotly.io as pio
from optuna.importance import BaseImportanceEvaluator
from plotly.offline import get_plotlyjs

from analysis.charts import atlas as charts
from analysis.charts.style import param_label
from analysis.dashboard.static import DEFAULT_FORMATS, StaticFigure, write_static
from analysis.dashboard.template import ATLAS_PAGE
from analysis.data.atlas import DEFAULT_VIEW, Atlas, Group, build_atlas
from analysis.data.coverage import coverage_infos
from analysis.data.effects import effects_frame, signed_effects
from analysis.data.experiments import Experiment
from analysis.data.frames import format_value
from analysis.data.importance import MIN_TRIALS, importance_frame, importance_infos, importance_spread
from analysis.data.rungs import MIN_RUNG_TRIALS, rung_correlations, rungs_frame
from analysis.data.transfer import TRANSFER_COMMAND, TransferInfo, find_atlas_transfer, transfer_info
from analysis.data.tunability import ALL, N_BOOTSTRAP, TunabilityInfo, tunability_info
from analysis.mpl import atlas as mpl
from ssot.results.experiment import Problem
from ssot.results.numbers import fixed
from ssot.results.searches import choose_searches
from ssot.results.transfer import Transfer

__all__ = ["ATLAS_FILE", "ATLAS_FIGURES_DIR", "DASHBOARD_BOOTSTRAP", "AtlasSection", "AtlasResult", "atlas_section", "dashboard_atlas",
           "build_atlas_page", "static_names"]

ATLAS_FILE = "atlas.html"
ATLAS_FIGURES_DIR = "figures"
#: The figures of the atlas written as static files (per group where the name has ``{group}``).
STATIC_STEMS: tuple[str, ...] = ("atlas__importance__{group}", "atlas__effects__{group}", "atlas__tunability__{group}",
                                 "atlas__tunability-default__{group}", "atlas__rungs__{group}", "atlas__coverage__{group}",
                                 "atlas__transfer")
Log = Callable[[str], None]
#: Bootstrap replicates of the tunability in the dashboard's section (the atlas's page: ``--bootstrap``,
#: default :data:`analysis.data.tunability.N_BOOTSTRAP`): the dashboard is drawn often, and each
#: replicate refits every task's forest.
DASHBOARD_BOOTSTRAP = 30


def static_names(groups: Sequence[str], formats: Sequence[str]) -> list[str]:
    """The file names the static figures of groups ``groups`` may take (for the output check)."""
    stems = {s.format(group=g) for s in STATIC_STEMS for g in groups}
    return sorted(f"{stem}.{f}" for stem in stems for f in formats)


@dataclass
class AtlasSection:
    """The section's HTML (empty when fewer than two tasks), figures by div id, static figures by
    file stem, and problems."""

    html: str = ""
    figures: dict[str, go.Figure] = field(default_factory=dict)
    static: dict[str, StaticFigure] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    groups: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.html)

    def add(self, stem: str, group: str, title: str, chart: Callable[..., go.Figure],
            mpl_chart: Callable[..., Any], *data: Any) -> str:
        """Draw ``chart(*data, title)`` as the interactive figure ``atlas-<stem>-<group>`` and its
        static twin ``mpl_chart(*data, title)`` as ``atlas__<stem>__<group>``; the div id."""
        div = f"atlas-{stem}-{group}"
        self.figures[div] = chart(*data, title)
        self.static[f"atlas__{stem}__{group}"] = StaticFigure(self.figures[div], partial(mpl_chart, *data, title))
        return div

    def script(self) -> str:
        """The figures as JSON and the script that draws each one into its container."""
        data = ("{" + ",".join(f"{json.dumps(k)}:{pio.to_json(f, validate=False)}" for k, f in self.figures.items())
                + "}").replace("</", "<\\/")
        return (f'<script type="application/json" id="atlas-figures">{data}</script>'
                "<script>document.addEventListener('DOMContentLoaded', function () {"
                "var figs = JSON.parse(document.getElementById('atlas-figures').textContent);"
                "document.querySelectorAll('.atlas-plot').forEach(function (div) { var f = figs[div.id];"
                "if (!f) { (window.__dashboardReport || console.error)('no figure data for ' + div.id); return; }"
                "Plotly.newPlot(div, f.data, f.layout || {}, {responsive: true, displaylogo: false}).then(function () {"
                "div.setAttribute('data-rendered', 'true'); }, function (e) { (window.__dashboardReport || console.error)(div.id + ': ' + e); });"
                "}); });</script>")

    def insert(self, page: str) -> str:
        """``page`` with this section (and the script drawing it) before its ``</main>``."""
        if not self.html:
            return page
        head, sep, tail = page.partition("</main>")
        return head + self.html + self.script() + sep + tail if sep else page + self.html + self.script()


# --------------------------------------------------------------------------------------------
# Pieces
# --------------------------------------------------------------------------------------------

def _e(value: object) -> str:
    return html.escape(str(value))


def _div(div_id: str) -> str:
    return (f'<div class="atlas-plot" id="{div_id}" style="background:#fff; border:1px solid #e3e3e3; border-radius:4px; '
            f'min-height:360px; margin:8px 0"></div>')


def _num(value: float, digits: int = 1, signed: bool = False) -> str:
    return fixed(value, digits, missing="&mdash;", sign=signed)


def _table(header: Sequence[str], rows: Sequence[Sequence[str]], cls: str = "atlas") -> str:
    """A table; the cells are HTML already (escape data before)."""
    head = "".join(f"<th>{h}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f'<table class="cross {cls}"><tr>{head}</tr>{body}</table>'


def _space_text(space: Mapping[str, Any]) -> str:
    parts = []
    for name, spec in space.items():
        kind = spec.get("type", "")
        if kind == "loguniform":
            parts.append(f"{name} log-uniform [{format_value(spec.get('low'))}, {format_value(spec.get('high'))}]")
        elif kind == "fixed":
            parts.append(f"{name} fixed at {format_value(spec.get('value'))}")
        else:
            parts.append(f"{name} {kind} {{{', '.join(format_value(v) for v in spec.get('values', []))}}}")
    return "; ".join(parts)


def _budget_text(budget: Mapping[str, Any]) -> str:
    return ", ".join(f"{k} {v}" for k, v in budget.items() if v is not None)


def _group_heading(group: Group, tag: str = "h4") -> str:
    alone = " (alone in its group: not compared with other tasks)" if len(group.tasks) < 2 else ""
    return f"<{tag}>Group {_e(group.label)}: {_e(', '.join(group.tasks))}{alone}</{tag}>"


def _tasks_html(atlas: Atlas) -> str:
    rows = []
    for t in atlas.tasks:
        counts = t.table["status"].value_counts()
        statuses = ", ".join(f"{int(n)} {s}" for s, n in counts.items())
        rows.append([_e(t.task), _e(f"{t.experiment.name} ({t.experiment.search})"), _e(t.group), _e(t.view),
                     f"{t.n_trials} / {len(t.table)}", _e(statuses), _e(t.seeds), f"<code>{_e(t.experiment.path)}</code>"])
    table = _table(["task", "search", "group", "view", "trials in view / proposed", "trials by status", "seeds", "folder"], rows)
    groups = []
    for g in atlas.groups:
        differs = f" <b>Differs from group A:</b> {_e(g.differs)}." if g.differs else ""
        groups.append(f"<li><b>Group {_e(g.label)}</b> ({len(g.tasks)} task(s): {_e(', '.join(g.tasks))}): space "
                      f"{_e(_space_text(g.space))}; budget {_e(_budget_text(g.budget))}; read at "
                      f"{_e(g.view_label)}.{differs}</li>")
    compared = ("" if atlas.compared else '<p class="partial"><b>No two tasks share space and budget:</b> nothing below is '
                "compared across tasks (no spread, shared value or tunability); each task is drawn in its own group.</p>")
    return table + f"<ul class=\"meta\">{''.join(groups)}</ul>" + compared


def _importance(atlas: Atlas, evaluator: BaseImportanceEvaluator | None, section: AtlasSection) -> str:
    parts = ['<h3 id="atlas-importance">Importance of each hyperparameter on each task, and its spread</h3>'
             '<p class="meta">fANOVA (a random forest\'s variance decomposition, Hutter et al. 2014) and PED-ANOVA (the '
             "top trials' Parzen estimate against all, Watanabe et al. 2023) on each task's trials, side by side; the box is "
             "the distribution over the group's tasks (van Rijn and Hutter 2018): high everywhere means it matters on every "
             f"task, a wide box that it matters on some. Not fitted on fewer than {MIN_TRIALS} trials.</p>"]
    for group in atlas.groups:
        tasks = atlas.of_group(group.label)
        frame = importance_frame({t.task: importance_infos(t.results, t.space, evaluator) for t in tasks}, list(tasks[0].space))
        div = section.add("importance", group.label, f"Group {group.label}: importance per task",
                          charts.importance_atlas_figure, mpl.importance_atlas_figure_mpl, frame)
        per_task = []
        params = [p for p in dict.fromkeys(frame["param"]) if p]
        for t in tasks:
            mine = frame[frame["task"] == t.task]
            cells = []
            for evaluator_name in dict.fromkeys(frame["evaluator"]):
                rows = mine[mine["evaluator"] == evaluator_name].set_index("param")
                cells += [_num(rows.loc[p, "importance"], 2) if p in rows.index else "&mdash;" for p in params]
            per_task.append([_e(t.task), str(t.n_trials), *cells])
        header = ["task", "trials"] + [f"{_e(e)}: {param_label(p)}" for e in dict.fromkeys(frame["evaluator"]) for p in params]
        spread = importance_spread(frame) if len(tasks) > 1 else pd.DataFrame()
        spread_rows = [[_e(r.evaluator), param_label(r.param), str(r.n_tasks), _num(r.median, 2), f"{r.q1:.2f}&ndash;{r.q3:.2f}",
                        f"{r.min:.2f}&ndash;{r.max:.2f}", _e(", ".join(r.tasks))] for r in spread.itertuples()]
        parts += [_group_heading(group), _div(div), _table(header, per_task)]
        if spread_rows:
            parts.append("<p class=\"meta\">Spread over the group's tasks (each task's importance rests on its trials above):</p>"
                         + _table(["evaluator", "hyperparameter", "tasks", "median", "quartiles", "range", "tasks, most important first"],
                                  spread_rows))
    return "".join(parts)


def _effects(atlas: Atlas, section: AtlasSection) -> str:
    parts = ['<h3 id="atlas-effects">Signed effect: which way each hyperparameter moves accuracy</h3>'
             "<p class=\"meta\">Spearman's rank correlation between a hyperparameter's value and the accuracy over a task's "
             "trials, with a 95 % interval (Fisher's z, n &ge; 4): measured on the trials rather than on a model, the same on "
             "a log or a linear axis, and not swayed by how far a collapsed trial fell. + : larger values go with higher "
             "accuracy; &minus; : smaller; ? : the interval holds 0. A hyperparameter with its best value inside the range "
             "can matter (importance) with rho near 0; under TPE a rho can borrow another hyperparameter's effect.</p>"]
    for group in atlas.groups:
        tasks = atlas.of_group(group.label)
        frame = effects_frame({t.task: signed_effects(t.results, t.space) for t in tasks})
        div = section.add("effects", group.label, f"Group {group.label}: signed effect on accuracy",
                          charts.effects_figure, mpl.effects_figure_mpl, frame)
        rows = [[_e(r.task), param_label(r.param), str(r.n), _num(r.rho, 2, True),
                 "&mdash;" if math.isnan(r.low) else f"[{r.low:+.2f}, {r.high:+.2f}]", _e(r.direction if not r.note else r.note)]
                for r in frame.itertuples()]
        parts += [_group_heading(group), _div(div),
                  _table(["task", "hyperparameter", "trials", "rho", "95 % interval", "direction"], rows)]
    return "".join(parts)


def _tunability_table(info: TunabilityInfo, reference: str) -> str:
    rows_of = info.table[info.table["reference"] == reference]
    params = list(dict.fromkeys(rows_of["param"]))
    rows = []
    for task in info.tasks:
        mine = rows_of[rows_of["task"] == task].set_index("param")
        cells = [f"{mine.loc[p, 'loss']:.1f} [{mine.loc[p, 'low']:.1f}, {mine.loc[p, 'high']:.1f}]" for p in params]
        rows.append([_e(task), str(info.n_trials[task]), _num(float(mine.loc[ALL, "own_best"])), *cells])
    header = ["task", "trials", "own best (%, surrogate)", *[("whole config" if p == ALL else param_label(p)) for p in params]]
    return _table(header, rows)


def _tunability(atlas: Atlas, section: AtlasSection, n_bootstrap: int, log: Log | None) -> str:
    parts = ['<h3 id="atlas-tunability">Tunability: what one shared value costs each task</h3>'
             "<p class=\"meta\">The accuracy (points) a task loses when a hyperparameter is held at one value shared by every "
             "task (the value best across the group's tasks, or the paper's default) while the others are still tuned for it; "
             "for the whole config, the shared config (best on average) or the paper's default instead of the task's own best "
             "(Probst, Boulesteix and Bischl 2019). Estimated on a random forest fitted to each task's trials (as fANOVA "
             f"does), maximised over every config tried and 256 random ones; intervals: {n_bootstrap} bootstrap replicates "
             "over each task's trials. 0: the value does not matter on that task, or is its own best.</p>"]
    compared = atlas.compared
    if not compared:
        return parts[0] + '<p class="note">Not computed: no two tasks share space and budget.</p>'
    for group in compared:
        if log is not None:
            log(f"tunability of group {group.label} ({len(group.tasks)} tasks, {n_bootstrap} bootstrap replicates)")
        info = tunability_info(atlas.of_group(group.label), n_bootstrap=n_bootstrap)
        parts.append(_group_heading(group))
        if info.notes:
            parts.append("<ul class=\"meta\">" + "".join(f"<li>{_e(n)}</li>" for n in info.notes) + "</ul>")
        if info.table.empty:
            continue
        shared = ", ".join(f"{param_label(p)} = {_e(format_value(info.shared[p]))}" for p in info.params)
        default = ", ".join(f"{param_label(p)} = {_e(format_value(info.default[p]))}" for p in info.params)
        whole = ", ".join(f"{param_label(p)} = {_e(format_value(v))}" for p, v in info.shared[ALL].items())
        parts.append(f"<p class=\"meta\">Shared values (best across the group's tasks, one hyperparameter at a time): {shared}. "
                     f"Shared config (best on average): {whole}. The paper's default: {default}.</p>")
        for reference, stem in (("shared", "tunability"), ("default", "tunability-default")):
            what = "the shared value" if reference == "shared" else "the paper's default"
            div = section.add(stem, group.label, f"Group {group.label}: accuracy lost at {what}",
                              charts.tunability_figure, mpl.tunability_figure_mpl, info, reference)
            parts += [_div(div), f"<p class=\"meta\">Loss at {what} (points, 95 % bootstrap interval):</p>",
                      _tunability_table(info, reference)]
        div = f"atlas-profiles-{group.label}"
        section.figures[div] = charts.profiles_figure(info, f"Group {group.label}: best accuracy with one hyperparameter held")
        parts.append(_div(div))
    return "".join(parts)


def _transfer(atlas: Atlas, section: AtlasSection, transfer: Transfer | None) -> str:
    head = ('<h3 id="atlas-transfer">Transfer: each task\'s best config on every task</h3>'
            "<p class=\"meta\">Each task's best config (and the paper's default) replayed on every task with the same seeds; "
            "the loss is the task's own best config minus the replay, paired over seeds (0 on the diagonal).</p>")
    if transfer is None:
        return head + (f'<p class="note">No replays found. Produce them with <code>{_e(TRANSFER_COMMAND)}</code> '
                       "(it trains; the atlas only reads), then draw the atlas again.</p>")
    info: TransferInfo = transfer_info(transfer, {t.task: t.experiment.path for t in atlas.tasks})
    section.problems += info.problems
    section.figures["atlas-transfer"] = charts.transfer_figure(info, "Loss of each best config on each task")
    section.static["atlas__transfer"] = StaticFigure(section.figures["atlas-transfer"],
                                                     partial(mpl.transfer_figure_mpl, info, "Loss of each best config on each task"))
    groups = {t.task: t.group for t in atlas.tasks}
    rows = []
    for i, source in enumerate(info.sources):
        for j, target in enumerate(info.targets):
            if math.isnan(info.acc[i, j]):
                continue
            rows.append([_e(source), f"{_e(target)} [{_e(groups.get(target, '?'))}]", str(int(info.n_seeds[i, j])),
                         _num(info.acc[i, j]), _num(info.own[j]), f"{_num(info.loss[i, j])} &plusmn; {_num(info.loss_std[i, j])}"])
    crossing = sorted({groups[s] + groups[t] for s in info.sources for t in info.targets if s in groups and t in groups
                       and groups[s] != groups[t]})
    note = ("" if not crossing else "<p class=\"partial\">Some replays cross groups (another space or budget): the source "
            "config was found under another setting; read those cells with that in mind.</p>")
    listed = "".join(f"<li>{_e(n)}</li>" for n in info.notes)
    return (head + f"<p class=\"meta\">Replays in <code>{_e(info.path)}</code>, seeds {_e(' '.join(map(str, info.seeds)))}.</p>"
            + (f'<ul class="meta">{listed}</ul>' if listed else "") + note + _div("atlas-transfer")
            + _table(["config of", "run on [group]", "seeds", "accuracy (%)", "own best (%)", "loss (points, mean &plusmn; std)"], rows))


def _rungs(atlas: Atlas, section: AtlasSection) -> str:
    parts = ['<h3 id="atlas-rungs">Trust in early stopping</h3>'
             "<p class=\"meta\">Spearman's rank correlation between a trial's accuracy at each ASHA rung (every epoch when the "
             "search did not stop trials early) and at the last epoch, over the trials that reached both, with its 95 % "
             "interval. DeepCAVE calls &ge; 0.7 very strong (0.4 strong, 0.3 moderate, 0.2 weak). Not computed on fewer than "
             f"{MIN_RUNG_TRIALS} trials. Under ASHA those trials are the ones it promoted: a restricted range.</p>"]
    for group in atlas.groups:
        tasks = atlas.of_group(group.label)
        frame = rungs_frame({t.task: rung_correlations(t.experiment, t.table) for t in tasks})
        div = section.add("rungs", group.label, f"Group {group.label}: rank correlation of each rung with the last epoch",
                          charts.rungs_figure, mpl.rungs_figure_mpl, frame)
        rows = [[_e(r.task), f"{r.rung}{' (ASHA rung)' if r.asha else ''}", str(r.final_epoch), str(r.n), _num(r.rho, 2),
                 "&mdash;" if math.isnan(r.low) else f"[{r.low:.2f}, {r.high:.2f}]",
                 f"<b>{_e(r.strength)}</b>" if r.very_strong else _e(r.strength or r.note)] for r in frame.itertuples()]
        parts += [_group_heading(group), _div(div),
                  _table(["task", "rung (epoch)", "last epoch", "trials (both)", "rho", "95 % interval", "strength"], rows)]
    return "".join(parts)


def _coverage(atlas: Atlas, section: AtlasSection) -> str:
    parts = ['<h3 id="atlas-coverage">Coverage: where the sampler searched</h3>'
             "<p class=\"meta\">Every trial each search proposed (any status), coloured by its accuracy in the view (x: not in "
             "it); the table gives the cells of each axis (a decade of a log axis, a choice) that hold at least one proposal.</p>"]
    for group in atlas.groups:
        tasks = atlas.of_group(group.label)
        infos = {t.task: coverage_infos(t.table, t.results, t.space) for t in tasks}
        div = section.add("coverage", group.label, f"Group {group.label}: proposals of each search",
                          charts.coverage_figure, mpl.coverage_figure_mpl, infos)
        params = list(dict.fromkeys(c.param for items in infos.values() for c in items))
        rows = []
        for task, items in infos.items():
            by = {c.param: c for c in items}
            rows.append([_e(task), str(items[0].n if items else 0),
                         *[(f"{by[p].n_covered}/{len(by[p].counts)} cells" if p in by else "&mdash;") for p in params]])
        parts += [_group_heading(group), _div(div), _table(["task", "trials proposed", *[param_label(p) for p in params]], rows)]
    return "".join(parts)


# --------------------------------------------------------------------------------------------
# The section and the page
# --------------------------------------------------------------------------------------------

def atlas_section(searches: Sequence[Experiment], *, transfer: Transfer | None = None, notes: Sequence[str] = (),
                  view: str = DEFAULT_VIEW, n_bootstrap: int = N_BOOTSTRAP, evaluator: BaseImportanceEvaluator | None = None,
                  log: Log | None = None, atlas: Atlas | None = None) -> AtlasSection:
    """The atlas of ``searches`` (one finished search per task; empty below two tasks).

    Parameters
    ----------
    searches : sequence of Experiment
        One search per task (:func:`ssot.results.searches.task_searches` or :func:`~ssot.results.searches.choose_searches`).
    transfer : Transfer, optional
        The replays of ``tune/transfer.py`` (:func:`analysis.data.transfer.find_atlas_transfer`).
    notes : sequence of str
        Lines about searches or replays left out, listed at the top.
    view, n_bootstrap, evaluator
        The view (:func:`analysis.data.atlas.build_atlas`), the bootstrap replicates of the
        tunability, the importance evaluator (default fANOVA, seed 0).
    log : callable, optional
        Receives a line before each long step.
    atlas : Atlas, optional
        :func:`analysis.data.atlas.build_atlas` of ``searches`` and ``view``, when the caller has it.
    """
    section = AtlasSection()
    if len({s.task for s in searches}) < 2:
        return section
    atlas = atlas if atlas is not None else build_atlas(searches, view)
    section.groups = [g.label for g in atlas.groups]
    listed = "".join(f"<li>{_e(n)}</li>" for n in notes)
    body = [
        '<section class="atlas" id="atlas" style="border-top: 2px solid #ccc; margin-top: 18px">',
        f"<h2>Across tasks: the atlas of {len(atlas.tasks)} tasks</h2>",
        "<p class=\"meta\">One finished search per task. Numbers that compare tasks are computed within a group of tasks whose "
        "searches share space and budget; every number says how many trials (one seed each) or seeds it rests on. "
        "How to read it: the manual's page <i>The atlas across tasks</i> (docs/atlas.md).</p>",
        f'<ul class="meta">{listed}</ul>' if listed else "",
        _tasks_html(atlas),
    ]
    if log is not None:
        log(f"importance of {len(atlas.tasks)} tasks (fANOVA and PED-ANOVA)")
    body.append(_importance(atlas, evaluator, section))
    body.append(_effects(atlas, section))
    body.append(_tunability(atlas, section, n_bootstrap, log))
    body.append(_transfer(atlas, section, transfer))
    body.append(_rungs(atlas, section))
    body.append(_coverage(atlas, section))
    body.append("</section>")
    section.html = "".join(body)
    return section


def dashboard_atlas(root: str | os.PathLike[str], experiments: Sequence[Experiment], *, local: bool = True,
                    evaluator: BaseImportanceEvaluator | None = None) -> AtlasSection:
    """The dashboard's atlas section: one finished search per task among ``experiments`` (the
    others listed as left out), replays found under ``root`` when it is a local folder,
    :data:`DASHBOARD_BOOTSTRAP` bootstrap replicates; empty when fewer than two tasks have a
    finished search."""
    choice = choose_searches(experiments)
    if len(choice.searches) < 2:
        return AtlasSection()
    tasks = [s.task for s in choice.searches]
    transfer, notes = find_atlas_transfer([root], tasks) if local else (None, [])
    chosen: list[Experiment] = [s for s in choice.searches if isinstance(s, Experiment)]
    return atlas_section(chosen, transfer=transfer, notes=[*choice.left_out, *notes], evaluator=evaluator,
                         n_bootstrap=DASHBOARD_BOOTSTRAP)


@dataclass
class AtlasResult:
    """What :func:`build_atlas_page` wrote."""

    path: Path
    images: list[Path] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    n_plots: int = 0


def build_atlas_page(searches: Sequence[Experiment], out_dir: str | os.PathLike[str], *, root: str = "",
                     transfer: Transfer | None = None, notes: Sequence[str] = (), view: str = DEFAULT_VIEW,
                     n_bootstrap: int = N_BOOTSTRAP, images: bool = True, image_format: Sequence[str] = DEFAULT_FORMATS,
                     evaluator: BaseImportanceEvaluator | None = None, log: Log | None = None,
                     atlas: Atlas | None = None) -> AtlasResult:
    """Write ``out_dir/atlas.html`` (self-contained: plotly.js inlined) and, with ``images``, the
    static figures into ``out_dir/figures`` (matplotlib); returns what was written."""
    out = Path(out_dir)
    section = atlas_section(searches, transfer=transfer, notes=notes, view=view, n_bootstrap=n_bootstrap,
                            evaluator=evaluator, log=log, atlas=atlas)
    written: list[Path] = []
    problems = list(section.problems)
    if images:
        figures = {out / ATLAS_FIGURES_DIR / stem: figure for stem, figure in section.static.items()}
        written, image_problems = write_static(figures, list(image_format), "matplotlib")
        problems += image_problems
    warnings = "".join(f"<li>{_e(p)}</li>" for p in problems)
    page = Template(ATLAS_PAGE).substitute(
        title=_e(f"SSOT-Tune atlas: {', '.join(sorted({s.task for s in searches}))}"), root=_e(root),
        generated=datetime.now().strftime("%Y-%m-%d %H:%M"), plotlyjs=get_plotlyjs(),
        warnings=(f'<div id="warnings" class="warnings"><h3>Warnings ({len(problems)})</h3><ul>{warnings}</ul></div>'
                  if problems else ""),
        section=section.html + section.script())
    out.mkdir(parents=True, exist_ok=True)
    path = out / ATLAS_FILE
    path.write_text(page, encoding="utf-8")
    return AtlasResult(path, written, problems, len(section.figures))
