"""The searches a cross-task study compares: one finished search per task.

The atlas (``analysis/atlas.py``) and the transfer replays (``tune/transfer.py``) both read the
experiments under a results folder and need the same answer to "which search stands for each
task". The rule, owned here:

* only finished searches count (:func:`ssot.results.experiment.check_finished`: status
  ``finished``, readable files, ``trials.csv`` agreeing with the best trial ``experiment.json``
  recorded);
* ``name`` (an experiment's ``--name``) keeps only the searches of that name;
* each task has exactly one search: two searches of one task must be told apart with ``name``;
* at least two tasks.

:func:`task_searches` applies it strictly (a command refuses its input in one line otherwise);
:func:`choose_searches` applies it leniently, leaving out what does not fit and saying why (the
dashboard draws what it can).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from ssot.errors import ResultsError
from ssot.results.experiment import Experiment, check_finished

__all__ = ["MIN_TASKS", "Choice", "choose_searches", "task_searches"]

#: Tasks a cross-task study needs.
MIN_TASKS = 2

E = TypeVar("E", bound=Experiment)


@dataclass
class Choice:
    """The searches chosen, one per task (sorted by task), and one line per search left out."""

    searches: list[Experiment] = field(default_factory=list)
    left_out: list[str] = field(default_factory=list)


def _readable(experiments: Sequence[Experiment]) -> list[Experiment]:
    return [e for e in experiments if e.meta is not None and e.trials is not None]


def _not_finished(experiment: Experiment) -> str | None:
    try:
        check_finished(experiment)
    except ResultsError as exc:
        return str(exc)
    return None


def choose_searches(experiments: Sequence[Experiment], name: str | None = None) -> Choice:
    """One finished search per task among ``experiments`` (of experiment name ``name`` if given).

    A search that is not finished is left out; of several searches of one task the one with the
    most trials is kept (ties: the first path). Each search left out gets one line in
    :attr:`Choice.left_out`. Never raises.
    """
    choice = Choice()
    by_task: dict[str, list[Experiment]] = {}
    for experiment in _readable(experiments):
        if name is not None and experiment.name != name:
            continue
        reason = _not_finished(experiment)
        if reason is not None:
            choice.left_out.append(f"{experiment.path}: left out, not finished ({reason})")
            continue
        by_task.setdefault(experiment.task, []).append(experiment)
    for task in sorted(by_task):
        group = sorted(by_task[task], key=lambda e: (-_n_trials(e), str(e.path)))
        choice.searches.append(group[0])
        choice.left_out += [f"{e.path}: left out, another search of task {task} ({group[0].path}) has more trials"
                            for e in group[1:]]
    return choice


def _n_trials(experiment: Experiment) -> int:
    return int(experiment.trials["trial_id"].nunique()) if experiment.trials is not None else 0


def task_searches(experiments: Sequence[E], name: str | None = None, where: str = "RESULTS",
                  what: str = "A cross-task comparison") -> list[E]:
    """The searches of :func:`choose_searches`, refusing anything it would leave out.

    Parameters
    ----------
    experiments : the experiments read under ``where`` (:func:`ssot.results.discovery.read_experiments`).
    name : keep only the searches of this experiment name (``--name``).
    where : how the messages name the results folder.
    what : how the messages name the command's work (e.g. ``"The atlas"``).

    Raises
    ------
    ResultsError
        One line naming the problem and the fix: no readable search (of ``name``), a search not
        finished, two searches of one task, fewer than :data:`MIN_TASKS` tasks.
    """
    readable = [e for e in experiments if e.meta is not None and e.trials is not None]
    if not readable:
        raise ResultsError(f"No readable search under {where}. Pass the folder tune/search.py wrote its experiments to.")
    named = [e for e in readable if name is None or e.name == name]
    if not named:
        names = ", ".join(sorted({e.name for e in readable}))
        raise ResultsError(f"No search named {name!r} under {where} (names found: {names}). Pass one of them as --name.")
    for experiment in named:
        reason = _not_finished(experiment)
        if reason is not None:
            raise ResultsError(f"The search {experiment.path} (task {experiment.task}) is not finished: {reason}. "
                               f"{what} compares finished searches: let it finish or --resume it, or choose the "
                               "others with --name.")
    by_task: dict[str, list[E]] = {}
    for experiment in named:
        by_task.setdefault(experiment.task, []).append(experiment)
    for task, group in sorted(by_task.items()):
        if len(group) > 1:
            paths = " and ".join(str(e.path) for e in group[:2])
            raise ResultsError(f"Two searches of task {task} under {where}: {paths}. Choose one search per task with "
                               "--name, or pass a folder holding one search per task.")
    if len(by_task) < MIN_TASKS:
        only = ", ".join(sorted(by_task))
        raise ResultsError(f"{what} needs the searches of at least {MIN_TASKS} tasks; {where} holds one task only "
                           f"({only}). Search another task first (e.g. python tune/search.py --task embedded).")
    return [by_task[task][0] for task in sorted(by_task)]
