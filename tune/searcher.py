"""Ray Tune's side of a search: a searcher, a scheduler and a callback that read and write the record.

Hand-written rather than Ray's ``OptunaSearch`` + ``ConcurrencyLimiter`` + ``ASHAScheduler``, for
three reasons:

1. a Ray trial trains a batch of P >= 1 configs (``--population``: one population), so each
   proposal asks the study P times and every member is told its own end (``OptunaSearch`` asks
   and tells one config per Ray trial);
2. the study is the search's record (:mod:`tune.record`), in the experiment folder or a database,
   written as the results arrive; ``OptunaSearch`` keeps its study in memory and saves it only in
   Ray's pickles of the searcher, on Ray's schedule, which ``--resume`` no longer reads;
3. ASHA's decisions must survive a resume: Ray does not save its scheduler, whose rungs then start
   empty; here a stop is decided from the values at the rung recorded in the study
   (:func:`ssot.results.trials.asha_continues`) and recorded there (``PRUNED``) before Ray stops the trial.

:class:`StudySearcher` proposes a unit (:meth:`tune.record.Record.next`) only when one of the
``slots`` trials that can run at once is free, so TPE learns from every result before it proposes
(more pending trials than slots would make it sample blindly: random search);
:class:`RecordScheduler` records each report and stops a trial ASHA stops; :class:`RecordCallback`
records how each Ray trial ended. Ray pickles these objects into its own files: nothing of the
record goes with them (they are never restored).
"""
from __future__ import annotations

from typing import Any

from ray import tune as ray_tune
from ray.tune.schedulers import FIFOScheduler, TrialScheduler
from ray.tune.search import Searcher

from tune import members as member_results
from tune.record import Record
from tune.trial import UNIT_KEY


class _NotSaved:
    """Ray pickles a search's searcher, scheduler and callbacks with its own state: the record
    stays out of them (``--resume`` reads only the record)."""

    def __getstate__(self) -> dict[str, Any]:
        return {}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)


class StudySearcher(_NotSaved, Searcher):
    """Proposes the record's units into free slots (module docstring)."""

    def __init__(self, record: Record, metric: str, mode: str, slots: int | None = None):
        super().__init__(metric=metric, mode=mode)
        self.record, self.slots = record, slots
        self.live: set[str] = set()  # Ray trials proposed and not ended

    def set_search_properties(self, metric: str | None, mode: str | None, config: dict[str, Any], **spec: Any) -> bool:
        return True  # fixed at construction

    def suggest(self, trial_id: str) -> dict[str, Any] | None:
        if not self.record.units_left():
            return Searcher.FINISHED  # type: ignore[return-value]  # Ray's documented sentinel (a str)
        if self.slots is not None and len(self.live) >= self.slots:
            return None  # no free slot: TPE waits for the results of the running trials
        unit = self.record.next()
        assert unit is not None
        self.live.add(trial_id)
        return {**member_results.proposal(unit.members), UNIT_KEY: unit.id}

    def on_trial_complete(self, trial_id: str, result: dict[str, Any] | None = None, error: bool = False) -> None:
        self.live.discard(trial_id)

    def save(self, checkpoint_path: str) -> None:
        """Nothing: the record is the state (Ray's save of the searcher writes no file)."""

    def restore(self, checkpoint_path: str) -> None:
        """Nothing: ``--resume`` reads the record."""


class RecordScheduler(_NotSaved, FIFOScheduler):
    """Records every report of a trial (:meth:`tune.record.Record.observe`) before Ray goes on, and
    stops the trial when ASHA stops it."""

    def __init__(self, record: Record):
        super().__init__()
        self.record = record

    def on_trial_result(self, tune_controller: Any, trial: Any, result: dict[str, Any]) -> str:
        stop = self.record.observe(trial.config[UNIT_KEY], result)
        return TrialScheduler.STOP if stop else TrialScheduler.CONTINUE


class RecordCallback(_NotSaved, ray_tune.Callback):
    """Records how each Ray trial ended (:meth:`tune.record.Record.ended`: errored, with the last
    line of its traceback) and how often Ray restarted it."""

    def __init__(self, record: Record):
        self.record = record

    def on_trial_complete(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        self.record.ended(trial.config[UNIT_KEY], None)

    def on_trial_error(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        from tune.live import last_error_line

        self.record.ended(trial.config[UNIT_KEY], last_error_line(trial)[0] or "errored (see the trial's error.txt)")

    def on_trial_recover(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        unit = trial.config[UNIT_KEY]
        self.record.retries[unit] = self.record.retries.get(unit, 0) + 1
