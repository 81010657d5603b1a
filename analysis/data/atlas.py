"""The tasks of an atlas: one finished search per task, the trials each is read on, and which
tasks can be compared as equals.

An atlas (``analysis/atlas.py``) compares the searches of several tasks, one per task
(:mod:`ssot.results.searches` chooses them). Two tasks are compared as equals only when their
searches had

* the same space: the same searched hyperparameters with the same ranges or choices (the
  ``space`` of ``experiment.json``), and
* the same budget (:func:`budget_of`): the same last epoch (``max_epochs``, the adaptation
  epochs of a trial), the same early stopping (ASHA's ``grace_period`` and ``reduction_factor``,
  hence the same rungs) and the same kind of trial (the base config's ``backbone``: a screen on
  a feature cache, ``features``, or training on the images). The task's own setting (its data,
  iterations per epoch, pretraining) is the task's, not the search's budget.

Tasks that agree on both form a *group*, labelled ``A``, ``B``, ... (the largest first). Numbers
that compare tasks (the spread of importances, shared values, tunability) are computed within a
group; the page names the group of every task and how groups differ, so tasks that differ are
never compared silently.

Every task of a group is read under one view (:mod:`analysis.data.views`): the one asked for,
or by default the earliest of the tasks' half views (:func:`analysis.data.views.half_view`: the
highest rung that at least half of a task's trials reached, the final epoch counting as the last rung), so that every task of
the group has at least half of its trials in it and all are compared at one budget.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from analysis.data.experiments import AnalysisError, Experiment, ParamSpec
from analysis.data.frames import trial_table
from analysis.data.views import experiment_views, half_view, view_label, view_results

__all__ = ["BUDGET_FIELDS", "DEFAULT_VIEW", "AtlasTask", "Group", "Atlas", "budget_of", "space_of", "seed_label",
           "build_atlas"]

#: Fields of a search's base config that set what kind of trial it ran (a screen on a feature
#: cache or end-to-end training).
BUDGET_FIELDS: tuple[str, ...] = ("backbone",)
#: The view that picks, per group, the earliest of its tasks' default views.
DEFAULT_VIEW = "default"


def budget_of(experiment: Experiment) -> dict[str, Any]:
    """What a search gave each trial: ``max_epochs``, its early stopping (``asha`` as
    ``"grace G, factor F"`` or ``"off"``) and :data:`BUDGET_FIELDS` of its base config (absent
    ones are ``None``)."""
    meta = experiment.meta or {}
    asha = f"grace {meta.get('grace_period')}, factor {meta.get('reduction_factor')}" if meta.get("early_stop") else "off"
    base = meta.get("base_config") or {}
    return {"max_epochs": experiment.max_epochs, "asha": asha, **{f: base.get(f) for f in BUDGET_FIELDS}}


def space_of(experiment: Experiment) -> dict[str, Any]:
    """The searched part of a search's space as ``experiment.json`` records it (fixed values
    included: a parameter fixed at another value is another space)."""
    raw = (experiment.meta or {}).get("space") or {}
    return {name: raw.get(name, {"type": spec.kind, "values": list(spec.values)}) for name, spec in experiment.space.items()}


def seed_label(experiment: Experiment) -> str:
    """How many seeds each trial of a search rests on: ``"1 seed per trial (seed 0)"``."""
    seed = ((experiment.meta or {}).get("base_config") or {}).get("seed")
    return "1 seed per trial" + ("" if seed is None else f" (seed {seed})")


@dataclass(frozen=True)
class AtlasTask:
    """One task of an atlas: its search, its trials and the view it is read under.

    Attributes
    ----------
    experiment : Experiment
    table : pandas.DataFrame
        :func:`analysis.data.frames.trial_table` of its search: every trial the sampler proposed.
    results : pandas.DataFrame
        The trials of ``view`` with their accuracy ``acc`` (:func:`analysis.data.views.view_results`).
    view : str
    group : str
        The label of its group.
    """

    experiment: Experiment
    table: pd.DataFrame
    results: pd.DataFrame
    view: str
    group: str

    @property
    def task(self) -> str:
        return self.experiment.task

    @property
    def n_trials(self) -> int:
        """Trials in its view."""
        return len(self.results)

    @property
    def space(self) -> dict[str, ParamSpec]:
        return self.experiment.space

    @property
    def seeds(self) -> str:
        return seed_label(self.experiment)


@dataclass(frozen=True)
class Group:
    """Tasks whose searches share space and budget (module docstring).

    Attributes
    ----------
    label : str
        ``"A"``, ``"B"``, ...
    tasks : tuple of str
    space : dict
        The shared space (:func:`space_of`).
    budget : dict
        The shared budget (:func:`budget_of`).
    view : str
        The view its tasks are read under.
    differs : str
        How it differs from group ``A`` (``""`` for ``A``).
    """

    label: str
    tasks: tuple[str, ...]
    space: dict[str, Any]
    budget: dict[str, Any]
    view: str
    differs: str = ""

    @property
    def view_label(self) -> str:
        return view_label(self.view)


@dataclass
class Atlas:
    """The tasks of an atlas and their groups (module docstring)."""

    tasks: list[AtlasTask]
    groups: list[Group]
    notes: list[str] = field(default_factory=list)

    def of_group(self, label: str) -> list[AtlasTask]:
        """The tasks of group ``label``, in task order."""
        return [t for t in self.tasks if t.group == label]

    @property
    def compared(self) -> list[Group]:
        """The groups of at least two tasks: those within which tasks are compared."""
        return [g for g in self.groups if len(g.tasks) > 1]


def _differences(first: dict[str, Any], other: dict[str, Any], what: str) -> list[str]:
    keys = list(dict.fromkeys([*first, *other]))
    return [f"{what} {k}: {json.dumps(other.get(k))} instead of {json.dumps(first.get(k))}" for k in keys
            if first.get(k) != other.get(k)]


def _ladder(experiment: Experiment, table: pd.DataFrame) -> tuple[list[str], str]:
    views, _ = experiment_views(experiment, table)
    return [v.key for v in views if v.key != "best"], half_view(views, len(table))


def build_atlas(experiments: Sequence[Experiment], view: str = DEFAULT_VIEW) -> Atlas:
    """The tasks of ``experiments`` (one search per task), grouped and each read under its
    group's view.

    Parameters
    ----------
    experiments : sequence of Experiment
        One finished search per task (:func:`ssot.results.searches.task_searches`).
    view : str
        ``"default"`` (module docstring), ``"final"``, ``"best"`` or ``"epoch<R>"``.

    Raises
    ------
    AnalysisError
        If ``view`` is not a view of some task (e.g. a rung its search does not have).
    """
    if view != DEFAULT_VIEW:
        try:
            view_label(view)
        except ValueError:
            raise AnalysisError(f"The '--view' argument must be 'default', 'final', 'best' or 'epoch<R>'. Got {view!r} instead.") from None
    tables = {e.task: trial_table(e) for e in experiments}
    signature: dict[str, str] = {e.task: json.dumps([space_of(e), budget_of(e)], sort_keys=True, default=str)
                                 for e in experiments}
    members: dict[str, list[Experiment]] = {}
    for e in experiments:
        members.setdefault(signature[e.task], []).append(e)
    ordered = sorted(members.values(), key=lambda group: (-len(group), group[0].task))
    groups: list[Group] = []
    tasks: list[AtlasTask] = []
    for number, group in enumerate(ordered):
        label = chr(ord("A") + number) if number < 26 else f"G{number + 1}"
        ladders = {e.task: _ladder(e, tables[e.task]) for e in group}
        chosen = view
        if view == DEFAULT_VIEW:
            ladder, _ = ladders[group[0].task]
            defaults = [ladders[e.task][1] for e in group]
            chosen = min(defaults, key=lambda key: ladder.index(key) if key in ladder else len(ladder))
        for e in group:
            if chosen not in (*ladders[e.task][0], "best"):
                have = ", ".join([*ladders[e.task][0], "best"])
                raise AnalysisError(f"The view {chosen!r} is not a view of the search {e.path} (task {e.task}); its "
                                    f"views are {have}. Choose another --view.")
            tasks.append(AtlasTask(e, tables[e.task], view_results(e, tables[e.task], chosen), chosen, label))
        first = groups[0] if groups else None
        space, budget = space_of(group[0]), budget_of(group[0])
        differs = "" if first is None else "; ".join(
            _differences(first.space, space, "space of") + _differences(first.budget, budget, "budget:"))
        groups.append(Group(label, tuple(e.task for e in group), space, budget, chosen, differs))
    tasks.sort(key=lambda t: (t.group, t.task))
    return Atlas(tasks, groups)
