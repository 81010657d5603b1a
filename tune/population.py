"""Searches by populations: ``python tune/search.py --task A2W --features a2w.pt --population 64``.

A population (:class:`ssot.population.Population`: P configs of one task trained at once on a
feature cache) is **one Ray trial**: Ray schedules it on one CPU or GPU slot (fractions allowed),
checkpoints it every epoch (all members), restarts it from its last checkpoint after a failure
and resumes it with ``--resume``, exactly like a trial. Inside, ASHA stops members at the search's
rungs (:func:`ssot.results.trials.asha_rungs`); at the Ray level the search runs no scheduler.

:class:`PopulationSearcher` is the Ray searcher: an Optuna study (TPE or random, in memory or in
``--optuna-storage``). Each new population asks the study for its members, so they are proposed
from every result told so far; each member's result is told as soon as the member ends:

- completed: ``COMPLETE`` with its final-epoch value of the search's metric;
- early-stopped at a rung: ``PRUNED``, with its value at every epoch it ran reported as the
  trial's intermediate values (TPE ranks pruned trials after every completed one, those that
  reached a later rung first, then by value: ASHA's own verdict), rather than ``COMPLETE`` with a
  truncated value;
- diverged: ``COMPLETE`` with the metric's worst value (what an independent diverged trial tells);
- errored with its population: ``FAIL``.

``--configs-from EXPERIMENT`` enqueues an experiment's configs in the study, so the populations
replay exactly those configs (a screen matched with an end-to-end search, ``analysis/proxy.py``).
Results land in the search's usual files through :mod:`tune.members`.
"""
from __future__ import annotations

import math
import pickle
import tempfile
from pathlib import Path
from typing import Any

import torch
from ray import tune
from ray.tune.search import Searcher

from ssot.population import Member, Population
from ssot.results.metrics import metric as metric_spec
from ssot.results.trials import DIVERGED, EARLY_STOPPED, PREDICTIONS_COLUMN
from tune import members as member_results
from tune.state import POPULATION_STATE_FILE as STATE_FILE
from tune.trainable import config_of, diverged_result, epoch_result, pretrain_shared, restored, task_of

#: The population trial's private params (besides :data:`tune.members.MEMBERS_KEY`).
RUNGS_KEY, REDUCTION_KEY, METRIC_KEY = "_rungs", "_reduction_factor", "_metric"


# ---------------------------------------------------------------------------- the trainable
def population_trainable(params: dict[str, Any]) -> None:
    """Train one population under Ray Tune, reporting every epoch (its members' entries, the
    best member's value under the search's metric) with a checkpoint of every member."""
    members = params[member_results.MEMBERS_KEY]
    configs = [config_of({**params, **m["params"]}) for m in members]
    ids = [str(m["trial_id"]) for m in members]
    chosen = metric_spec(params[METRIC_KEY])
    population = Population(configs, task_of(configs[0]), rungs=params.get(RUNGS_KEY) or (),
                            reduction_factor=int(params.get(REDUCTION_KEY) or 3), metric=chosen.name)
    ended, state = restored(STATE_FILE, population.device)
    if ended:  # the population had ended (tune.state.repair_checkpoints)
        return
    if state is not None:
        population.load_state_dict(state)
    else:
        population.pretrain(lambda host: pretrain_shared(host, params.get("_pretrain_cache")))
        if not population.alive:  # every member diverged in the shared pretraining
            entries = [{**diverged_result(0, m.record["reason"], None), "trial_id": i, member_results.EARLY_STOPPED_FLAG: 0}
                       for i, m in zip(ids, population.members)]
            tune.report({"epoch": 0, chosen.name: chosen.worst, member_results.MEMBERS_COLUMN: member_results.encode(entries)})
            return
    while population.alive:
        touched = population.adapt_epoch()
        entries = [_entry(ids[m.index], m, population.epoch) for m in touched]
        result = {"epoch": population.epoch, member_results.MEMBERS_COLUMN: member_results.encode(entries),
                  chosen.name: member_results.best_value(entries, chosen.name, chosen.direction or "max", chosen.worst)}
        with tempfile.TemporaryDirectory() as folder:
            torch.save(population.state_dict(), Path(folder) / STATE_FILE)
            tune.report(result, checkpoint=tune.Checkpoint.from_directory(folder))


def _entry(trial_id: str, member: Member, epoch: int) -> dict[str, Any]:
    """A member's entry for ``epoch``: the result an independent trial would report."""
    if member.status == DIVERGED:
        entry = diverged_result(epoch, member.record["reason"], member.record)
    else:
        entry = epoch_result(member.epochs[-1], member.record, final=epoch == member.config.epochs)
    entry[member_results.EARLY_STOPPED_FLAG] = int(member.status == EARLY_STOPPED)
    return {"trial_id": trial_id, **entry}


# ---------------------------------------------------------------------------- the searcher
class PopulationSearcher(Searcher):
    """Proposes the members of each population from an Optuna study and tells it every member's
    result (module docstring).

    Parameters
    ----------
    space : the sampled space as Optuna distributions (:func:`tune.space.optuna_space`).
    metric, mode : the search's metric and its direction (``"max"`` or ``"min"``).
    sampler : the Optuna sampler (TPE or random, seeded).
    population : members per population.
    total : members in all (the search's ``num_samples``); the last population may be smaller.
    enqueued : configs (sampled fields only) asked first, in order: the paper's default point, or
        every config of ``--configs-from``.
    storage, study_name : an Optuna storage (``--optuna-storage``) and the study's name.
    """

    def __init__(self, space: dict[str, Any], metric: str, mode: str, sampler: Any, population: int, total: int, *,
                 enqueued: list[dict[str, Any]] | None = None, storage: Any = None, study_name: str | None = None):
        import optuna

        super().__init__(metric=metric, mode=mode)
        self.space, self.population, self.total = space, int(population), int(total)
        self.worst = metric_spec(metric).worst
        direction = "maximize" if mode == "max" else "minimize"
        self.study = optuna.create_study(storage=storage, study_name=study_name, sampler=sampler, direction=direction,
                                         load_if_exists=storage is not None)
        for point in enqueued or []:
            self.study.enqueue_trial(point, skip_if_exists=False)
        self.proposed = 0
        self.trials: dict[str, Any] = {}  # member id -> its Optuna trial
        self.members: dict[str, list[str]] = {}  # population trial id -> its member ids
        self.reported: dict[str, set[int]] = {}  # member id -> epochs reported as intermediate values
        self.told: set[str] = set()

    def set_search_properties(self, metric: str | None, mode: str | None, config: dict[str, Any], **spec: Any) -> bool:
        return True  # metric, mode and space are fixed at construction

    def suggest(self, trial_id: str) -> dict[str, Any] | None:
        remaining = self.total - self.proposed
        if remaining <= 0:
            return Searcher.FINISHED
        size = min(self.population, remaining)
        populations, members = math.ceil(self.total / self.population), []
        for index in range(size):
            trial = self.study.ask(self.space)
            member = member_results.member_id(trial_id, len(self.members), populations, index, self.population)
            self.trials[member] = trial
            members.append({"trial_id": member, "params": dict(trial.params)})
        self.members[trial_id] = [m["trial_id"] for m in members]
        self.proposed += size
        return {member_results.MEMBERS_KEY: members}

    def on_trial_result(self, trial_id: str, result: dict[str, Any]) -> None:
        for entry in member_results.decode(result.get(member_results.MEMBERS_COLUMN)):
            self._observe(entry)

    def _observe(self, entry: dict[str, Any]) -> None:
        """Report a member's epoch, and tell its result when it ended."""
        import optuna

        member = str(entry["trial_id"])
        trial = self.trials.get(member)
        if trial is None or member in self.told:
            return
        value = entry.get(self.metric)
        finite = isinstance(value, (int, float)) and math.isfinite(value)
        epoch = int(entry.get("epoch") or 0)
        if entry.get("diverged"):
            self._tell(member, self.worst, optuna.trial.TrialState.COMPLETE)
            return
        if finite and epoch not in self.reported.setdefault(member, set()):
            try:
                trial.report(float(value), epoch)
            except optuna.exceptions.UpdateFinishedTrialError:  # told before a crash, after this state was saved
                self.told.add(member)
                return
            self.reported[member].add(epoch)
        if entry.get(member_results.EARLY_STOPPED_FLAG):
            self._tell(member, None, optuna.trial.TrialState.PRUNED)
        elif PREDICTIONS_COLUMN in entry:  # its last epoch: the config completed
            self._tell(member, float(value) if finite else self.worst, optuna.trial.TrialState.COMPLETE)

    def _tell(self, member: str, value: float | None, state: Any) -> None:
        import optuna

        try:
            self.study.tell(self.trials[member], value, state=state)
        except (ValueError, RuntimeError, optuna.exceptions.UpdateFinishedTrialError):  # told before a crash (restored state)
            pass
        self.told.add(member)

    def on_trial_complete(self, trial_id: str, result: dict[str, Any] | None = None, error: bool = False) -> None:
        import optuna

        if result:
            self.on_trial_result(trial_id, result)
        for member in self.members.get(trial_id, []):
            if member in self.told:
                continue
            # errored with its population: FAIL; an end not seen (the searcher's state was restored
            # from before it, after a crash): PRUNED at the last value reported, if any
            pruned = not error and self.reported.get(member)
            self._tell(member, None, optuna.trial.TrialState.PRUNED if pruned else optuna.trial.TrialState.FAIL)

    def save(self, checkpoint_path: str) -> None:
        with open(checkpoint_path, "wb") as f:
            pickle.dump(self.__dict__, f)

    def restore(self, checkpoint_path: str) -> None:
        with open(checkpoint_path, "rb") as f:
            self.__dict__.update(pickle.load(f))
