"""The one searcher of a search: an Optuna study that proposes each trial's P >= 1 configs and is told every one.

:class:`StudySearcher` is a Ray ``Searcher`` around an in-memory Optuna study (TPE or random,
seeded). Each new trial asks the study for its P members (:mod:`tune.members`: P is
``--population``, default 1), so they are proposed from every result told so far; configs given
up front are asked first, in order (the paper's default point, or every config of
``--configs-from``). Every member is told how it ended, with the status ``trials.csv`` gives it
(:func:`tune.members.member_status`), as soon as it is known:

- completed: ``COMPLETE`` with its final value of the search's metric;
- early-stopped (at a rung inside its population, or by ASHA across trials): ``PRUNED``, with its
  value at every epoch it ran as the trial's intermediate values (TPE ranks pruned trials after
  every completed one, those that reached a later rung first: ASHA's own verdict), rather than
  ``COMPLETE`` with a truncated value;
- diverged: ``COMPLETE`` with the metric's worst value (finite: TPE learns to avoid it);
- errored with its trial: ``FAIL``; when ``--resume`` runs the trial again, the member is asked
  again as a new Optuna trial with the same config (user attribute ``attempt``).

Each Optuna trial carries user attributes: ``member_id`` (its row in ``trials.csv``),
``ray_trial_id``, ``attempt``, and once it ended its ``status`` and its final metrics (the search's
metric, ``target_acc`` where the target is labelled, every validator). The study's objective is
named after the metric (Optuna's ``set_metric_names``).

The study lives in the searcher's own state, which Ray saves with its experiment state: what a
``--resume`` restores is exactly the study of the trials Ray continues. With ``--optuna-storage``,
a copy is kept in the database for optuna-dashboard (:class:`tune.optuna_study.StudyMirror`), written one
save behind Ray's (:meth:`StudySearcher.save`): a driver killed at any moment leaves a database
that holds nothing Ray's saved state does not, so that trials ``--resume`` runs again are told
once, with their final result, and never disagree with ``trials.csv``. The last save is copied
when the search ends (:class:`StudySync`). A resumed search first brings the database to the
restored study: trials a killed driver had asked for that Ray never saved are failed there
(never left ``RUNNING``) and their configs are asked again.

The searcher proposes a trial only when one of the ``slots`` trials that can run at once is free,
so TPE learns from every result reported before it proposes (more pending trials than slots
would make it sample blindly: random search).
"""
from __future__ import annotations

import copy
import math
import pickle
from typing import Any

from ray import tune as ray_tune
from ray.tune.search import Searcher

from ssot.results.metrics import EPOCH_VALIDATORS
from ssot.results.metrics import metric as metric_spec
from ssot.results.trials import COMPLETED, DIVERGED, EARLY_STOPPED, ERRORED, RUNNING
from tune import members as member_results
from tune.members import finite
from tune.optuna_study import ATTEMPT_ATTR, MEMBER_ATTR, ORPHAN_ATTR, RAY_TRIAL_ATTR, StudyMirror, quietly

#: The user attributes an ended Optuna trial gets (besides the ids): its status in trials.csv, then its final metrics.
STATUS_ATTR = "status"
FINAL_ATTRS: tuple[str, ...] = ("target_acc", *EPOCH_VALIDATORS)


def optuna_state(status: str) -> Any:
    """The Optuna state a member of ``trials.csv``'s ``status`` is told (module docstring); None
    while it runs."""
    import optuna

    states = {COMPLETED: optuna.trial.TrialState.COMPLETE, DIVERGED: optuna.trial.TrialState.COMPLETE,
              EARLY_STOPPED: optuna.trial.TrialState.PRUNED, ERRORED: optuna.trial.TrialState.FAIL}
    return states.get(status)


def disagreements(study_trials: list[Any], frame: Any, metric: str) -> dict[str, str]:
    """Where a search's Optuna study (its trials, e.g. of ``--optuna-storage``) disagrees with its
    ``trials.csv`` (``frame``): a member id of ``trials.csv`` (or ``#<number>`` of an Optuna trial)
    -> the first difference found; empty when they agree trial by trial.

    They agree when every member of ``trials.csv`` is the latest attempt (:data:`ATTEMPT_ATTR`) of
    one Optuna trial with its member id and its config, told the state of its last status
    (:func:`optuna_state`) with that status as a user attribute, its ``metric`` at every epoch as
    intermediate values and, unless it failed, its final value; and when the study holds no trial
    left running or waiting, and no other trial than the failed ones a killed driver had asked for
    (:data:`tune.optuna_study.ORPHAN_ATTR`).
    """
    found: dict[str, str] = {}
    for trial in study_trials:
        if trial.state.name in ("RUNNING", "WAITING"):
            found[f"#{trial.number}"] = f"left {trial.state.name} in the study"
    latest: dict[Any, Any] = {}
    for trial in sorted(study_trials, key=lambda t: t.user_attrs.get(ATTEMPT_ATTR, 1)):
        latest[trial.user_attrs.get(MEMBER_ATTR)] = trial
    rows = {str(member): group.sort_values("epoch") for member, group in frame.groupby("trial_id")} if len(frame) else {}
    for member, trial in latest.items():
        if member not in rows and ORPHAN_ATTR not in trial.user_attrs and f"#{trial.number}" not in found:
            found[f"#{trial.number}"] = f"in the study (member {member}) but not in trials.csv"
    for member, mine in rows.items():
        trial, last = latest.get(member), mine.iloc[-1]
        if trial is None:
            found[member] = "in trials.csv but not in the study"
            continue
        epochs = mine.dropna(subset=["epoch"])
        values = {int(e): float(v) for e, v in zip(epochs["epoch"], epochs[metric]) if math.isfinite(float(v))}
        wanted = optuna_state(str(last["status"]))
        checks = [(name, not math.isclose(float(value), float(last[name]), rel_tol=1e-9))
                  for name, value in trial.params.items()]
        checks += [("state", wanted is None or trial.state != wanted),
                   ("intermediate values", trial.intermediate_values != values),
                   ("value", trial.state.name not in ("FAIL", "RUNNING", "WAITING")
                    and not math.isclose(float(trial.value), float(last[metric]), rel_tol=1e-9)),
                   ("status", trial.user_attrs.get(STATUS_ATTR) != last["status"])]
        differ = [name for name, bad in checks if bad]
        if differ:
            found[member] = (f"{', '.join(differ)} differ (study: {trial.state.name}, status {trial.user_attrs.get(STATUS_ATTR)}; "
                             f"trials.csv: {last['status']} at epoch {last['epoch']})")
    return found


class StudySearcher(Searcher):
    """Proposes each trial's members from an Optuna study and tells it every member's end (module docstring).

    Parameters
    ----------
    space : the sampled space as Optuna distributions (:func:`ssot.results.space.optuna_space`).
    metric, mode : the search's metric and its direction (``"max"`` or ``"min"``).
    sampler : the Optuna sampler (TPE or random, seeded).
    members : configs per trial (P); the last trial of the search may have fewer.
    total : configs in all (the search's ``--num-samples``).
    max_epochs : the epochs of a complete member (ASHA's ``max_t``).
    enqueued : configs (sampled fields only) asked first, in order.
    slots : trials that can run at once (None: no limit).
    mirror : the study's copy in a database (``--optuna-storage``), or None.
    """

    def __init__(self, space: dict[str, Any], metric: str, mode: str, sampler: Any, *, members: int, total: int,
                 max_epochs: int, enqueued: list[dict[str, Any]] | None = None, slots: int | None = None,
                 mirror: StudyMirror | None = None):
        import optuna

        super().__init__(metric=metric, mode=mode)
        self.space, self.size, self.total, self.max_epochs, self.slots = space, int(members), int(total), int(max_epochs), slots
        self.worst = metric_spec(metric).worst
        self.study = quietly(optuna.create_study, sampler=sampler, direction="maximize" if mode == "max" else "minimize")
        quietly(self.study.set_metric_names, [metric])
        for point in enqueued or []:
            self.study.enqueue_trial(point, skip_if_exists=False)
        self.mirror = mirror
        self.proposed = 0  # configs proposed
        self.trials: dict[str, list[str]] = {}  # Ray trial id -> its member ids
        self.numbers: dict[str, int] = {}  # member id -> its (latest) Optuna trial number
        self.last: dict[str, dict[str, Any]] = {}  # member id -> its latest entry
        self.told: set[str] = set()
        self.replays: list[dict[str, Any]] = []  # configs to ask again before sampling (a killed driver's, found on resume)
        self.dirty: set[int] = set()  # Optuna trials changed since the last save
        self.saved: dict[int, Any] = {}  # their state at the last save, copied to the mirror at the next one
        self.live: set[str] = set()  # Ray trials proposed and not ended (this driver's; not saved)

    # ------------------------------------------------------------------ Ray's Searcher interface
    def set_search_properties(self, metric: str | None, mode: str | None, config: dict[str, Any], **spec: Any) -> bool:
        return True  # metric, mode and space are fixed at construction

    def suggest(self, trial_id: str) -> dict[str, Any] | None:
        if self.proposed >= self.total:
            return Searcher.FINISHED  # type: ignore[return-value]  # Ray's documented sentinel (a str)
        if self.slots is not None and len(self.live) >= self.slots:
            return None  # no free slot: TPE waits for the results of the running trials
        size = min(self.size, self.total - self.proposed)
        proposed, trials = len(self.trials), math.ceil(self.total / self.size)
        members: dict[str, dict[str, Any]] = {}
        for index in range(size):
            member = member_results.member_id(trial_id, proposed, trials, index, self.size)
            trial = self._ask({MEMBER_ATTR: member, RAY_TRIAL_ATTR: trial_id, ATTEMPT_ATTR: 1})
            members[member] = dict(trial.params)
        self.trials[trial_id] = list(members)
        self.proposed += size
        self.live.add(trial_id)
        return member_results.proposal(members)

    def on_trial_result(self, trial_id: str, result: dict[str, Any]) -> None:
        self.live.add(trial_id)  # a trial Ray restored (a resumed search) counts once it reports
        for member, entry in member_results.entries(result).items():
            self._observe(member, entry)

    def on_trial_complete(self, trial_id: str, result: dict[str, Any] | None = None, error: bool = False) -> None:
        self.live.discard(trial_id)
        for member, entry in member_results.entries(result or {}).items():
            self._observe(member, entry)
        for member in self.trials.get(trial_id, []):
            if member in self.told or member not in self.numbers:
                continue
            last = self.last.get(member)
            status, _ = member_results.member_status([last] if last else [], "errored" if error else None, self.max_epochs, True)
            self._tell(member, status)

    def save(self, checkpoint_path: str) -> None:
        """Ray's save of the searcher, with its experiment state: the study as it is now; the
        mirror gets what the previous save held (uploaded by now with Ray's state)."""
        with open(checkpoint_path, "wb") as f:
            pickle.dump({k: v for k, v in self.__dict__.items() if k != "live"}, f)
        trials = self.study.get_trials(deepcopy=False)
        previous, self.saved = self.saved, {n: copy.deepcopy(trials[n]) for n in sorted(self.dirty)} if self.mirror else {}
        self.dirty = set()
        if self.mirror is not None:
            self.mirror.flush(previous.values())

    def restore(self, checkpoint_path: str) -> None:
        """Ray's restore (``--resume``): the study as saved; the mirror brought to it (a killed
        driver's unsaved trials failed there, their configs asked again)."""
        with open(checkpoint_path, "rb") as f:
            self.__dict__.update(pickle.load(f))
        self.live = set()
        if self.mirror is not None:
            self.replays += self.mirror.sync(self.study.get_trials(deepcopy=False))
            self.saved, self.dirty = {}, set()

    def flush_saved(self) -> None:
        """Copy the last save's study to the mirror (the search ended: Ray's last save is on the storage)."""
        if self.mirror is not None:
            self.mirror.flush(self.saved.values())
            self.saved = {}

    # ------------------------------------------------------------------ the study
    def _ask(self, attrs: dict[str, Any], params: dict[str, Any] | None = None) -> Any:
        """A new Optuna trial with user attributes ``attrs``: of ``params`` when given, else of
        the next replayed config, else the next enqueued one, else sampled."""
        import optuna

        params = params if params is not None else (self.replays.pop(0) if self.replays else None)
        if params is None:
            trial = self.study.ask(self.space)
        else:
            self.study.add_trial(optuna.trial.create_trial(state=optuna.trial.TrialState.RUNNING, params=params,
                                                           distributions=self.space))
            trial = optuna.trial.Trial(self.study, self.study.get_trials(deepcopy=False)[-1]._trial_id)
        for key, value in attrs.items():
            trial.set_user_attr(key, value)
        self.numbers[attrs[MEMBER_ATTR]] = trial.number
        self.dirty.add(trial.number)
        return trial

    def _frozen(self, member: str) -> Any:
        return self.study.get_trials(deepcopy=False)[self.numbers[member]]

    def _trial(self, member: str) -> Any:
        import optuna

        return optuna.trial.Trial(self.study, self._frozen(member)._trial_id)

    def _observe(self, member: str, entry: dict[str, Any]) -> None:
        """Report a member's epoch (an intermediate value), and tell its end when the entry says
        it ended (diverged, or stopped at a rung); a member told ``FAIL`` that reports again (its
        trial run again by ``--resume``) is asked again."""
        if member not in self.numbers:
            return  # not this searcher's (a trial Ray saved after the searcher's last save)
        if member in self.told:
            frozen = self._frozen(member)
            if frozen.state.name != "FAIL":
                return
            attrs = {**frozen.user_attrs, ATTEMPT_ATTR: int(frozen.user_attrs.get(ATTEMPT_ATTR, 1)) + 1}
            self._ask({k: attrs[k] for k in (MEMBER_ATTR, RAY_TRIAL_ATTR, ATTEMPT_ATTR)}, dict(frozen.params))
            self.told.discard(member)
        self.last[member] = entry
        value = finite(entry.get(self.metric))
        frozen = self._frozen(member)
        if value is not None and entry["epoch"] not in frozen.intermediate_values:
            self._trial(member).report(value, entry["epoch"])
            self.dirty.add(frozen.number)
        status, _ = member_results.member_status([entry], None, self.max_epochs, False)
        if status != RUNNING:
            self._tell(member, status)

    def _tell(self, member: str, status: str) -> None:
        """Tell the study that ``member`` ended with ``status``, its final metrics as user attributes."""
        state = optuna_state(status)
        if state is None:
            return
        trial, last = self._trial(member), self.last.get(member) or {}
        trial.set_user_attr(STATUS_ATTR, status)
        for name in dict.fromkeys((self.metric, *FINAL_ATTRS)):
            value = finite(last.get(name))
            if value is not None:
                trial.set_user_attr(name, value)
        value = None
        if state.name == "COMPLETE":
            value = self.worst if status == DIVERGED else finite(last.get(self.metric))
            value = self.worst if value is None else value
        self.study.tell(trial.number, value, state=state)
        self.told.add(member)
        self.dirty.add(trial.number)


class StudySync(ray_tune.Callback):
    """Copies the searcher's last saved study to its database when the search ends (Ray's last
    save is then on the storage). Pickled with the searcher in Ray's ``tuner.pkl``, so a resumed
    search's callback holds the restored searcher."""

    def __init__(self, searcher: StudySearcher):
        self.searcher = searcher

    def on_experiment_end(self, trials: list, **info: Any) -> None:
        self.searcher.flush_saved()

