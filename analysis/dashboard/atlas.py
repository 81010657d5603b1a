"""The atlas across tasks: its HTML section (also a section of the dashboard when the results
hold several tasks) and its self-contained page with static figures (``analysis/atlas.py``).

:func:`atlas_section` lays out, for the searches of several tasks (one per task), what the atlas's
data modules compute, group by group (:mod:`analysis.data.atlas`: tasks that share space and
budget): importance per task and its spread (:mod:`analysis.data.importance`), signed effects
(:mod:`analysis.data.effects`), tunability (:mod:`analysis.data.tunability`), the transfer
matrix (:mod:`analysis.data.transfer`), trust in early stopping (:mod:`analysis.data.rungs`) and
coverage (:mod:`analysis.data.coverage`), drawn by :mod:`analysis.charts.atlas` (and
:mod:`analysis.mpl.atlas` for the static figures), laid out by ``templates/atlas_section.html``.
Every table and figure says how many trials or seeds its numbers rest on. The section's figures
go in a JSON script element drawn once the page has loaded: the dashboard's page puts the section
before the end of its ``<main>``, and :func:`build_atlas_page` wraps it into a page of its own
(``templates/atlas.html``).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Any

import pandas as pd
import plotly.graph_objects as go
from markupsafe import Markup
from optuna.importance import BaseImportanceEvaluator

from analysis.charts import atlas as charts
from analysis.dashboard.static import DEFAULT_FORMATS, StaticFigure, write_static
from analysis.dashboard.templates import figures_json, param_label, render
from analysis.data.atlas import DEFAULT_VIEW, Atlas, build_atlas
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

    html: Markup | str = ""
    figures: dict[str, go.Figure] = field(default_factory=dict)
    static: dict[str, StaticFigure] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    groups: list[str] = field(default_factory=list)
    #: The id of the script element holding its figures, and the class of its plots' containers.
    script_id = "atlas-figures"
    plot_class = "atlas-plot"

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

    def figures_json(self) -> Markup:
        return figures_json(self.figures)


# --------------------------------------------------------------------------------------------
# Pieces
# --------------------------------------------------------------------------------------------

#: One part of the section, group by group: the items of ``templates/atlas_section.html`` (``("heading", group)``,
#: ``("plot", id)``, ``("table", header, rows)``, ``("meta" | "note" | "partial", text)``, ``("notes", lines)``).
Items = list[tuple[Any, ...]]


def _num(value: float, digits: int = 1, signed: bool = False) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    return f"{value:+.{digits}f}" if signed else f"{value:.{digits}f}"


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


def _tasks(atlas: Atlas) -> dict[str, Any]:
    """The table of the atlas's tasks, and each group's space and budget as text."""
    rows = []
    for t in atlas.tasks:
        counts = t.table["status"].value_counts()
        statuses = ", ".join(f"{int(n)} {s}" for s, n in counts.items())
        rows.append([t.task, f"{t.experiment.name} ({t.experiment.search})", t.group, t.view, f"{t.n_trials} / {len(t.table)}",
                     statuses, t.seeds, Markup("<code>{}</code>").format(t.experiment.path)])
    return {"header": ["task", "search", "group", "view", "trials in view / proposed", "trials by status", "seeds", "folder"],
            "rows": rows, "spaces": [_space_text(g.space) for g in atlas.groups],
            "budgets": [_budget_text(g.budget) for g in atlas.groups]}


def _importance(atlas: Atlas, evaluator: BaseImportanceEvaluator | None, section: AtlasSection) -> Items:
    items: Items = []
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
                cells += [_num(rows.loc[p, "importance"], 2) if p in rows.index else "—" for p in params]
            per_task.append([t.task, str(t.n_trials), *cells])
        header = ["task", "trials"] + [Markup("{}: {}").format(e, param_label(p)) for e in dict.fromkeys(frame["evaluator"])
                                       for p in params]
        spread = importance_spread(frame) if len(tasks) > 1 else pd.DataFrame()
        spread_rows = [[r.evaluator, param_label(r.param), str(r.n_tasks), _num(r.median, 2), f"{r.q1:.2f}–{r.q3:.2f}",
                        f"{r.min:.2f}–{r.max:.2f}", ", ".join(r.tasks)] for r in spread.itertuples()]
        items += [("heading", group), ("plot", div), ("table", header, per_task)]
        if spread_rows:
            items += [("meta", "Spread over the group's tasks (each task's importance rests on its trials above):"),
                      ("table", ["evaluator", "hyperparameter", "tasks", "median", "quartiles", "range", "tasks, most important first"],
                       spread_rows)]
    return items


def _effects(atlas: Atlas, section: AtlasSection) -> Items:
    items: Items = []
    for group in atlas.groups:
        tasks = atlas.of_group(group.label)
        frame = effects_frame({t.task: signed_effects(t.results, t.space) for t in tasks})
        div = section.add("effects", group.label, f"Group {group.label}: signed effect on accuracy",
                          charts.effects_figure, mpl.effects_figure_mpl, frame)
        rows = [[r.task, param_label(r.param), str(r.n), _num(r.rho, 2, True),
                 "—" if math.isnan(r.low) else f"[{r.low:+.2f}, {r.high:+.2f}]", r.direction if not r.note else r.note]
                for r in frame.itertuples()]
        items += [("heading", group), ("plot", div), ("table", ["task", "hyperparameter", "trials", "rho", "95 % interval", "direction"], rows)]
    return items


def _tunability_table(info: TunabilityInfo, reference: str) -> tuple[Any, ...]:
    rows_of = info.table[info.table["reference"] == reference]
    params = list(dict.fromkeys(rows_of["param"]))
    rows = []
    for task in info.tasks:
        mine = rows_of[rows_of["task"] == task].set_index("param")
        cells = [f"{mine.loc[p, 'loss']:.1f} [{mine.loc[p, 'low']:.1f}, {mine.loc[p, 'high']:.1f}]" for p in params]
        rows.append([task, str(info.n_trials[task]), _num(float(mine.loc[ALL, "own_best"])), *cells])
    header = ["task", "trials", "own best (%, surrogate)", *[("whole config" if p == ALL else param_label(p)) for p in params]]
    return ("table", header, rows)


def _values(values: Mapping[str, Any]) -> Markup:
    """``name = value, ...`` with each hyperparameter's display name."""
    return Markup(", ").join(Markup("{} = {}").format(param_label(p), format_value(v)) for p, v in values.items())


def _tunability(atlas: Atlas, section: AtlasSection, n_bootstrap: int, log: Log | None) -> Items:
    items: Items = []
    for group in atlas.compared:
        if log is not None:
            log(f"tunability of group {group.label} ({len(group.tasks)} tasks, {n_bootstrap} bootstrap replicates)")
        info = tunability_info(atlas.of_group(group.label), n_bootstrap=n_bootstrap)
        items.append(("heading", group))
        if info.notes:
            items.append(("notes", info.notes))
        if info.table.empty:
            continue
        items.append(("meta", Markup("Shared values (best across the group's tasks, one hyperparameter at a time): {}. Shared config "
                                     "(best on average): {}. The paper's default: {}.").format(
            _values({p: info.shared[p] for p in info.params}), _values(info.shared[ALL]), _values({p: info.default[p] for p in info.params}))))
        for reference, stem in (("shared", "tunability"), ("default", "tunability-default")):
            what = "the shared value" if reference == "shared" else "the paper's default"
            div = section.add(stem, group.label, f"Group {group.label}: accuracy lost at {what}",
                              charts.tunability_figure, mpl.tunability_figure_mpl, info, reference)
            items += [("plot", div), ("meta", f"Loss at {what} (points, 95 % bootstrap interval):"), _tunability_table(info, reference)]
        div = f"atlas-profiles-{group.label}"
        section.figures[div] = charts.profiles_figure(info, f"Group {group.label}: best accuracy with one hyperparameter held")
        items.append(("plot", div))
    return items


def _transfer(atlas: Atlas, section: AtlasSection, transfer: Transfer) -> Items:
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
            rows.append([source, f"{target} [{groups.get(target, '?')}]", str(int(info.n_seeds[i, j])),
                         _num(info.acc[i, j]), _num(info.own[j]), f"{_num(info.loss[i, j])} ± {_num(info.loss_std[i, j])}"])
    crossing = sorted({groups[s] + groups[t] for s in info.sources for t in info.targets if s in groups and t in groups
                       and groups[s] != groups[t]})
    items: Items = [("meta", Markup("Replays in <code>{}</code>, seeds {}.").format(info.path, " ".join(map(str, info.seeds))))]
    if info.notes:
        items.append(("notes", info.notes))
    if crossing:
        items.append(("partial", "Some replays cross groups (another space or budget): the source config was found under another "
                                 "setting; read those cells with that in mind."))
    return items + [("plot", "atlas-transfer"), ("table", ["config of", "run on [group]", "seeds", "accuracy (%)", "own best (%)",
                                                          "loss (points, mean ± std)"], rows)]


def _rungs(atlas: Atlas, section: AtlasSection) -> Items:
    items: Items = []
    for group in atlas.groups:
        tasks = atlas.of_group(group.label)
        frame = rungs_frame({t.task: rung_correlations(t.experiment, t.table) for t in tasks})
        div = section.add("rungs", group.label, f"Group {group.label}: rank correlation of each rung with the last epoch",
                          charts.rungs_figure, mpl.rungs_figure_mpl, frame)
        rows = [[r.task, f"{r.rung}{' (ASHA rung)' if r.asha else ''}", str(r.final_epoch), str(r.n), _num(r.rho, 2),
                 "—" if math.isnan(r.low) else f"[{r.low:.2f}, {r.high:.2f}]",
                 Markup("<b>{}</b>").format(r.strength) if r.very_strong else (r.strength or r.note)] for r in frame.itertuples()]
        items += [("heading", group), ("plot", div),
                  ("table", ["task", "rung (epoch)", "last epoch", "trials (both)", "rho", "95 % interval", "strength"], rows)]
    return items


def _coverage(atlas: Atlas, section: AtlasSection) -> Items:
    items: Items = []
    for group in atlas.groups:
        tasks = atlas.of_group(group.label)
        infos = {t.task: coverage_infos(t.table, t.results, t.space) for t in tasks}
        div = section.add("coverage", group.label, f"Group {group.label}: proposals of each search",
                          charts.coverage_figure, mpl.coverage_figure_mpl, infos)
        params = list(dict.fromkeys(c.param for items in infos.values() for c in items))
        rows = []
        for task, found in infos.items():
            by = {c.param: c for c in found}
            rows.append([task, str(found[0].n if found else 0),
                         *[(f"{int((by[p].counts > 0).sum())}/{len(by[p].counts)} cells" if p in by else "—") for p in params]])
        items += [("heading", group), ("plot", div), ("table", ["task", "trials proposed", *[param_label(p) for p in params]], rows)]
    return items


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
    if log is not None:
        log(f"importance of {len(atlas.tasks)} tasks (fANOVA and PED-ANOVA)")
    section.html = render(
        "atlas_section.html", atlas=atlas, notes=notes, tasks=_tasks(atlas), importance=_importance(atlas, evaluator, section),
        effects=_effects(atlas, section), tunability=_tunability(atlas, section, n_bootstrap, log), n_bootstrap=n_bootstrap,
        transfer=None if transfer is None else _transfer(atlas, section, transfer), transfer_command=TRANSFER_COMMAND,
        rungs=_rungs(atlas, section), coverage=_coverage(atlas, section), min_trials=MIN_TRIALS, min_rung_trials=MIN_RUNG_TRIALS)
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
    page = render("atlas.html", title=f"SSOT-Tune atlas: {', '.join(sorted({s.task for s in searches}))}", root=root,
                  generated=datetime.now().strftime("%Y-%m-%d %H:%M"), problems=problems, section=section)
    out.mkdir(parents=True, exist_ok=True)
    path = out / ATLAS_FILE
    path.write_text(page, encoding="utf-8")
    return AtlasResult(path, written, problems, len(section.figures))
