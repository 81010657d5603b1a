"""Replaying an experiment's configs: ``python tune/search.py ... --configs-from RESULTS/e2e/P2H``.

A screen measures how well cheap training ranks configs only if it trains exactly the configs of
an end-to-end experiment (``analysis/proxy.py`` compares the two). :func:`read_reference` reads
the finished experiment at a path (local or a URI) and returns its configs, one per trial in
trial-id order (the order they were proposed), as the values of its sampled fields; the search
then proposes exactly those (its searcher asks them first, in order: :mod:`tune.searcher`) and
records the reference in ``experiment.json`` (:data:`ssot.results.experiment.REFERENCE_KEY`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ssot.config import SSOTConfig
from ssot.errors import ResultsError
from ssot.results import storage
from ssot.results.experiment import Experiment, check_finished, read_experiment


@dataclass
class Reference:
    """An experiment whose configs a search replays."""

    path: str
    name: str
    task: str
    search: str
    seed: int | None
    space: dict[str, Any]
    configs: list[dict[str, Any]]

    def meta(self) -> dict[str, Any]:
        """What the replaying search records under
        :data:`ssot.results.experiment.REFERENCE_KEY`."""
        return {"path": self.path, "name": self.name, "task": self.task, "search": self.search, "seed": self.seed,
                "n_configs": len(self.configs)}


def read_finished(path: str, flag: str) -> Experiment:
    """The finished experiment at ``path`` (its task folder, local or a URI), read for ``flag``.

    Raises
    ------
    ResultsError
        One line starting with ``flag`` and ``path``: no readable experiment there, or it is not
        finished (:func:`ssot.results.experiment.check_finished`).
    """
    experiment = read_experiment(path, read=lambda name: storage.read_text(storage.join(str(path), name)))
    if experiment.meta is None or experiment.trials is None:
        problem = experiment.errors[0] if experiment.errors else None
        raise ResultsError(f"{flag} {path}: no readable experiment there ({problem.message if problem else 'no trials'}). "
                           "Pass the task folder of a search (it holds experiment.json and trials.csv).")
    try:
        check_finished(experiment)
    except ResultsError as exc:
        raise ResultsError(f"{flag} {path}: {exc}. Pass a finished search (rerun it with --resume first).") from None
    return experiment


def sampled_values(row: Any, space: dict[str, Any]) -> dict[str, Any]:
    """A trial's values (a row of :meth:`Experiment.trial_table`) of the fields ``space`` samples,
    typed as the config's fields (``trials.csv`` reads a width as a float)."""
    values = {}
    for name in space:
        kind = type(getattr(SSOTConfig(), name))
        values[name] = kind(row[name]) if kind in (int, float) else row[name]
    return values


def read_reference(path: str, task: str) -> Reference:
    """The configs of the experiment at ``path`` (its task folder) for a search of ``task``.

    Raises
    ------
    ResultsError
        If there is no readable experiment at ``path``, it is not finished
        (:func:`ssot.results.experiment.check_finished`), it is of another task, or it has no trial.
    """
    experiment = read_finished(path, "--configs-from")
    assert experiment.meta is not None
    if experiment.task != task:
        raise ResultsError(f"--configs-from {path} holds a search of task {experiment.task!r}, not {task!r}. Pass the experiment "
                           f"of task {task!r}.")
    space = {k: v for k, v in (experiment.meta.get("space") or {}).items() if v.get("type") in ("loguniform", "choice")}
    table = experiment.trial_table()
    configs = [sampled_values(row, space) for _, row in table.sort_values("trial_id", kind="stable").iterrows()]
    if not configs:
        raise ResultsError(f"--configs-from {path}: the experiment has no trial to replay.")
    seed = (experiment.meta.get("base_config") or {}).get("seed")
    return Reference(path=str(path), name=experiment.name, task=experiment.task, search=experiment.search,
                     seed=None if seed is None else int(seed), space=space, configs=configs)
