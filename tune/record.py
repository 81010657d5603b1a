"""The record of a search, its only state: an Optuna study and each trial's files, read by ``--resume``.

A search keeps, in its experiment folder ``<storage-path>/<name>/<task>/``:

``study.journal``
    its Optuna study (Optuna's journal file storage; or the database of ``--optuna-storage``,
    :func:`optuna_storage`), named ``<name>/<task>`` (:func:`study_name`): every config asked, as an
    Optuna trial with user attributes (:data:`MEMBER_ATTR` its row in ``trials.csv``,
    :data:`UNIT_ATTR` the Ray trial that trains it with the others of its population,
    :data:`CONFIG_ATTR` its place among the search's configs, :data:`ATTEMPT_ATTR`), its
    search metric at every epoch as intermediate values, and how it ended: ``COMPLETE``
    (completed; diverged, with the metric's worst value), ``PRUNED`` (early-stopped: at a rung of
    its population, or by ASHA across trials, :func:`ssot.results.trials.asha_continues`), ``FAIL``
    (errored, or cut off), with :data:`STATUS_ATTR` (its status in ``trials.csv``) and its final
    metrics (:data:`FINAL_ATTR`);
``trials/<unit>/``
    each unit's files (:class:`UnitFiles`, written by the trainable, :mod:`tune.trial`):
    ``history.json``, its reports so far, ``epoch-<e>.pt``, the state of its members after epoch
    ``e`` (the newest only; removed once the unit ended), and ``end.json``, the epoch at which
    nothing was left to train (no state is written then). A unit is one Ray trial's configs:
    one config (its id is its member's, ``t0007``), or a population (``p0003``, members
    ``p0003-m00``...). Each is written whole (a file beside, renamed), the history first.

A member's epochs are the steps of its intermediate values in the study; its rows of
``trials.csv`` are its entries of those epochs in its unit's history (:meth:`Record.trials`).
What a driver does is recorded before it goes on: an epoch's state is written before its report
reaches the driver; the driver records the report, then the early-stopping decision, before it
lets the trial go on. So a driver killed at any moment leaves a record from which
:meth:`Record.repair` continues, with Optuna's public API only:

* the trials its driver had running (left ``RUNNING``, or errored ``FAIL``) are failed and
  asked again as new attempts of the same configs, with their values so far (what Optuna's own
  ``RetryFailedTrialCallback`` does for trials whose process died);
* a unit continues from its newest state; its epochs recorded after that state are dropped
  (trained again, the same numbers), those reported before are recorded now (each epoch once);
* a member that ended in its history, or that ASHA stops at its last epoch, is told so now: a
  completed trial is never run again, an early-stopped one stays stopped;
* the states of units that ended are removed.

Nothing of Ray's own files is read: Ray runs the trials of one driver (its files go to
``ray/``), and every driver starts a new Ray Tune run from the record.
"""
from __future__ import annotations

import json
import math
import re
import sys
import tempfile
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import optuna
from optuna.trial import TrialState

from ssot.errors import ConfigError, SSOTError
from ssot.results import storage
from ssot.results.experiment import BEST_CONFIG_FILE, TRIALS_FILE, experiment_texts
from ssot.results.metrics import EPOCH_VALIDATORS, worst_value
from ssot.results.numbers import finite
from ssot.results.outputs import check_output
from ssot.results.trials import COMPLETED, DIVERGED, EARLY_STOPPED, ERRORED, RUNNING, asha_continues
from tune import members as member_results
from tune.outputs import TrialHistory, best_config, trial_frame

#: The study's file in an experiment folder, the folder of the units' files, Ray's own folder.
STUDY_FILE, TRIALS_DIR, RAY_DIR = "study.journal", "trials", "ray"
#: A unit's reports so far (a JSON list, oldest first), its state after an epoch, and the epoch it ended at.
HISTORY_FILE, END_FILE = "history.json", "end.json"
STATE_FILE = re.compile(r"epoch-(\d+)\.pt")
#: User attributes of every Optuna trial of a search (module docstring).
MEMBER_ATTR, UNIT_ATTR, CONFIG_ATTR, ATTEMPT_ATTR = "member_id", "unit", "config", "attempt"
#: User attributes of an ended trial: its status in trials.csv, why (an error's last line), its final
#: metrics (one attribute, a dict of :data:`FINAL_METRICS`: one append to the study, not one each).
STATUS_ATTR, REASON_ATTR, FINAL_ATTR = "status", "reason", "final"
FINAL_METRICS: tuple[str, ...] = ("target_acc", *EPOCH_VALIDATORS)
#: Database URLs an Optuna study can be stored at (SQLAlchemy's form ``dialect[+driver]://...``).
STORAGE_URL = re.compile(r"^(sqlite|postgresql|mysql)(\+\w+)?://")
#: The reason a trial of a driver that stopped (Ctrl-C, an error of the search) is failed with.
INTERRUPTED = "interrupted: --resume continues it"


# ---------------------------------------------------------------------------- the study's storage
def optuna_storage(url: str) -> Any:
    """The Optuna storage at ``url``, created (with its tables) now, so a bad URL fails before the search.

    Raises
    ------
    ConfigError
        If ``url`` is not a database URL (``sqlite:///PATH``, ``postgresql://...``,
        ``mysql://...``), a sqlite file cannot be created there, or the database refuses it.
    """
    hint = "Use e.g. sqlite:///optuna.db (three slashes, then a path)"
    if not isinstance(url, str) or not STORAGE_URL.match(url):
        raise ConfigError(f"The '--optuna-storage' parameter must be a database URL such as sqlite:///PATH. Got {url!r} instead. {hint}.")
    if url.startswith("sqlite"):
        path = url.split(":///", 1)[1] if ":///" in url else ""
        if not path or path.startswith(":memory:"):
            raise ConfigError(f"The '--optuna-storage' parameter must name a sqlite file, sqlite:///PATH. Got {url!r} instead. {hint}.")
        if Path(path).is_dir():
            raise ConfigError(f"--optuna-storage {url}: {path} is a folder, not a database file. {hint}.")
        check_output(path, "--optuna-storage", folder=False, exists_ok=True)  # a study continues in its database
    try:
        return optuna.storages.RDBStorage(url)
    except Exception as exc:  # noqa: BLE001 - SQLAlchemy and drivers raise many kinds
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ConfigError(f"--optuna-storage {url} cannot be opened as an Optuna storage ({first}). {hint}.") from None


def public_url(url: str) -> str:
    """``url`` as ``experiment.json`` records it: a password in it is masked (``***``)."""
    from sqlalchemy.engine import make_url

    return make_url(url).render_as_string(hide_password=True)


def study_name(experiment_name: str, task: str) -> str:
    """The Optuna study of one task's search: ``<experiment name>/<task>``."""
    return f"{experiment_name}/{task}"


def check_study(url: str, name: str, *, new: bool) -> None:
    """Refuse, before Ray starts, a bad storage URL, or a study of this name in it for a new search."""
    names = optuna.study.get_all_study_names(optuna_storage(url))
    if new and name in names:
        raise SSOTError(f"--optuna-storage {url} already holds a study {name!r} (an earlier search of this name); "
                        "choose another --name or another --optuna-storage, or pass --resume to continue that search.")


class JournalCopy:
    """The journal of an experiment in object storage: a local file while the driver runs (Optuna's
    journal needs a file system), put whole into the experiment folder after each change
    (:meth:`push`). Only the driver writes the study."""

    def __init__(self, uri: str):
        self.uri, self.local = uri, Path(tempfile.mkdtemp(prefix="ssot-study-")) / STUDY_FILE
        data = storage.read_bytes(uri)
        self.local.write_bytes(data or b"")
        self.pushed = len(data or b"")

    def push(self) -> None:
        size = self.local.stat().st_size
        if size != self.pushed:
            storage.write_bytes(self.uri, self.local.read_bytes())
            self.pushed = size


def open_study(path: str, name: str, url: str | None, direction: str, metric: str) -> tuple[optuna.Study, Any, JournalCopy | None]:
    """The study of the experiment at ``path`` (created when new) and its storage: in ``url``
    (``--optuna-storage``), else in its :data:`STUDY_FILE` (a local copy of it for an experiment in
    object storage, returned too)."""
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend

    copy = None
    if url:
        backend: Any = optuna_storage(url)
    elif storage.is_uri(path):
        copy = JournalCopy(storage.join(path, STUDY_FILE))
        backend = JournalStorage(JournalFileBackend(str(copy.local)))
    else:
        Path(path).mkdir(parents=True, exist_ok=True)
        backend = JournalStorage(JournalFileBackend(str(mend(Path(path) / STUDY_FILE))))
    study = quietly(optuna.create_study, storage=backend, study_name=name, load_if_exists=True,
                    direction="maximize" if direction == "max" else "minimize")
    quietly(study.set_metric_names, [metric])
    return study, backend, copy


def mend(journal: Path) -> Path:
    """The journal file, its last line removed when it was cut short (a full disk during an append;
    Optuna skips such a line when it reads, but the next append would glue a line to it)."""
    if journal.is_file() and journal.stat().st_size:
        with journal.open("rb+") as f:
            f.seek(-1, 2)
            if f.read(1) != b"\n":
                f.seek(0)
                f.truncate(f.read().rfind(b"\n") + 1)
    return journal


def read_study(path: str, info: dict[str, Any], url: str | None = None) -> optuna.Study:
    """The study of the experiment at ``path`` whose ``experiment.json`` is ``info``: in ``url``, else
    in the database ``experiment.json`` names (its URL as recorded: a password in it is masked),
    else in the experiment folder."""
    return open_study(path, str(info["optuna_study"]), url or info.get("optuna_storage"), str(info.get("mode") or "max"),
                      str(info["metric"]))[0]


def quietly(call: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``call(*args, **kwargs)`` without Optuna's log lines and experimental-API warnings (a search
    prints its own lines)."""
    verbosity = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            return call(*args, **kwargs)
    finally:
        optuna.logging.set_verbosity(verbosity)


def identified(trial: Any) -> bool:
    """Whether an Optuna trial is a config of the search: its identity is written whole. A config
    asked from the sampler gets its user attributes one append at a time, its place
    (:data:`CONFIG_ATTR`) last; a driver killed between them leaves a trial without it, which
    :meth:`Record.repair` fails and whose place is asked again. (A config asked first, or again,
    gets them all at once.)"""
    return CONFIG_ATTR in trial.user_attrs and MEMBER_ATTR in trial.user_attrs


# ---------------------------------------------------------------------------- a unit's files
@dataclass
class Saved:
    """A unit's newest state: its epoch, the state's bytes, and its reports up to that epoch."""

    epoch: int
    state: bytes
    history: list[dict[str, Any]]


class UnitFiles:
    """The files of one unit under the experiment ``path`` (module docstring): written by its
    trainable (:meth:`write`), read by it when it continues (:meth:`latest`) and by the driver."""

    def __init__(self, path: str, unit: str):
        self.folder = storage.join(path, TRIALS_DIR, unit)

    def history(self) -> list[dict[str, Any]]:
        """Its reports, oldest first (none when it wrote none)."""
        text = storage.read_text(storage.join(self.folder, HISTORY_FILE))
        history = json.loads(text) if text else []
        if not isinstance(history, list):
            raise ValueError(f"{self.folder}/{HISTORY_FILE} is not a list of reports")
        return history

    def states(self) -> list[int]:
        """The epochs of its states, oldest first."""
        return sorted(int(m.group(1)) for name in storage.entries(self.folder) if (m := STATE_FILE.fullmatch(name)))

    def latest(self) -> Saved | None:
        """Its newest state with the reports it descends from; None without a state."""
        epochs = self.states()
        if not epochs:
            return None
        data = storage.read_bytes(self._state(epochs[-1]))
        if data is None:
            return None
        return Saved(epochs[-1], data, upto(self.history(), epochs[-1]))

    def reached(self) -> int:
        """The last epoch its files hold whole: its newest state's, or the one it ended at (0: none)."""
        end = storage.read_json(storage.join(self.folder, END_FILE)) or {}
        return max([0, *self.states(), int(end.get("epoch", 0))])

    def write(self, epoch: int, history: list[dict[str, Any]], state: bytes | None) -> None:
        """Record ``epoch``: the reports ``history`` (up to it), then the state after it, or (None)
        that nothing is left to train; older states are removed."""
        self.write_history(history)
        if state is None:
            storage.write_text(storage.join(self.folder, END_FILE), json.dumps({"epoch": epoch}))
            return
        storage.write_bytes(self._state(epoch), state)
        for old in self.states():
            if old < epoch:
                storage.remove(self._state(old))

    def write_history(self, history: list[dict[str, Any]]) -> None:
        storage.write_text(storage.join(self.folder, HISTORY_FILE), json.dumps(history))

    def drop(self, keep_last: bool = False) -> None:
        """Remove its states (all, or all but the newest)."""
        epochs = self.states()
        for epoch in epochs[:-1] if keep_last else epochs:
            storage.remove(self._state(epoch))

    def _state(self, epoch: int) -> str:
        return storage.join(self.folder, f"epoch-{epoch}.pt")


def upto(history: Iterable[dict[str, Any]], epoch: int) -> list[dict[str, Any]]:
    """The reports of ``history`` with only the entries of epochs up to ``epoch``."""
    out = []
    for report in history:
        kept = {m: e for m, e in member_results.entries(report).items() if e["epoch"] <= epoch}
        if kept:
            out.append({member_results.MEMBERS_KEY: kept})
    return out


# ---------------------------------------------------------------------------- the record
@dataclass
class Unit:
    """One Ray trial's configs: its id and its members' sampled values, in order."""

    id: str
    members: dict[str, dict[str, Any]] = field(default_factory=dict)


class Record:
    """The record of one search, opened by its driver (module docstring).

    Parameters
    ----------
    path : the experiment folder (local or a URI).
    info : its ``experiment.json``.
    space : the searched fields as Optuna distributions.
    sampler : the sampler of the ``k``-th config (seeded by ``k``: a resumed search samples as if
        it had never stopped, never a config again).
    points : configs asked first, in order (the default config, a replay's, a warm start's).
    url : ``--optuna-storage``, or None (the study in the experiment folder).
    keep_last : keep the newest state of every unit that ended.
    """

    def __init__(self, path: str, info: dict[str, Any], space: dict[str, Any], sampler: Callable[[int], Any],
                 points: list[dict[str, Any]], url: str | None = None, keep_last: bool = False):
        self.path, self.info, self.space, self.sampler, self.points = path, info, space, sampler, list(points)
        self.metric, self.direction = str(info["metric"]), str(info.get("mode") or "max")
        self.max_epochs, self.size = int(info["max_epochs"]), int(info.get("population") or 1)
        self.total = int(info["num_samples"]) * math.prod(len(s["values"]) for s in info["space"].values() if s["type"] == "grid")
        self.rungs = tuple(int(r) for r in info.get("rungs") or ()) if self.size == 1 else ()
        self.reduction_factor, self.keep_last = int(info.get("reduction_factor") or 3), keep_last
        self.study, self.backend, self.copy = open_study(path, str(info["optuna_study"]), url, self.direction, self.metric)
        self.handles: dict[str, Any] = {}  # member -> its Optuna trial asked by this driver
        self.pending: list[Unit] = []  # units to continue, proposed first
        self.histories: dict[str, list[dict[str, Any]]] = {}  # unit -> its reports (read once, then kept)
        self.errors: dict[str, str] = {}  # unit -> the error it ended with in this driver
        self.retries: dict[str, int] = {}
        self.warned = False
        configs = [int(t.user_attrs[CONFIG_ATTR]) for t in self.study.get_trials(deepcopy=False) if identified(t)]
        self.next_config = max(configs, default=-1) + 1
        units = [u for t in self.study.get_trials(deepcopy=False) if (u := str(t.user_attrs.get(UNIT_ATTR, ""))).startswith("p")]
        self.next_unit = max((int(u[1:]) for u in units), default=-1) + 1

    # ------------------------------------------------------------------ what is recorded
    def latest(self) -> dict[str, Any]:
        """Each member's latest attempt (a frozen Optuna trial), by member id: of the trials whose
        identity is whole (:func:`identified`)."""
        out: dict[str, Any] = {}
        for trial in self.study.get_trials(deepcopy=False):
            if identified(trial) and (trial.user_attrs[MEMBER_ATTR] not in out or trial.number > out[trial.user_attrs[MEMBER_ATTR]].number):
                out[trial.user_attrs[MEMBER_ATTR]] = trial
        return out

    def units(self) -> dict[str, list[str]]:
        """Each unit's members (sorted), by unit id."""
        out: dict[str, list[str]] = {}
        for member, trial in sorted(self.latest().items()):
            out.setdefault(str(trial.user_attrs[UNIT_ATTR]), []).append(member)
        return out

    def history(self, unit: str) -> list[dict[str, Any]]:
        if unit not in self.histories:
            self.histories[unit] = UnitFiles(self.path, unit).history()
        return self.histories[unit]

    def trials(self) -> list[TrialHistory]:
        """Every unit as :func:`tune.outputs.trial_frame` reads it: its members' entries of the
        epochs the study records for them, and how the study says they ended."""
        latest, out = self.latest(), []
        shared = {**self.info["base_config"], **{k: s["value"] for k, s in self.info["space"].items() if s["type"] == "fixed"}}
        for unit, names in self.units().items():
            steps = {m: max(latest[m].intermediate_values, default=-1) for m in names}
            reports = [{member_results.MEMBERS_KEY: kept} for report in self.history(unit)
                       if (kept := {m: e for m, e in member_results.entries(report).items() if m in steps and e["epoch"] <= steps[m]})]
            states = {latest[m].state for m in names}
            failed = [latest[m] for m in names if latest[m].state == TrialState.FAIL]
            error = next((str(t.user_attrs.get(REASON_ATTR)) for t in failed if t.user_attrs.get(STATUS_ATTR) == ERRORED), None)
            status = "ERROR" if error else "RUNNING" if TrialState.RUNNING in states or failed else "TERMINATED"
            config = {**shared, **member_results.proposal({m: latest[m].params for m in names})}
            out.append(TrialHistory(unit, config, reports, status, error, self.retries.get(unit, 0)))
        return out

    def frame(self) -> Any:
        """The rows of ``trials.csv`` now."""
        return trial_frame(self.trials(), self.info)

    def configs_ended(self) -> int:
        return sum(t.state in (TrialState.COMPLETE, TrialState.PRUNED) for t in self.latest().values())

    def finished(self) -> bool:
        """Whether every config was asked and ended (completed, stopped, diverged or errored)."""
        done = (TrialState.COMPLETE, TrialState.PRUNED)
        return self.next_config >= self.total and not self.pending and all(
            t.state in done or (t.state == TrialState.FAIL and t.user_attrs.get(STATUS_ATTR) == ERRORED) for t in self.latest().values())

    def units_left(self) -> int:
        """Ray trials this driver runs: the units to continue and the new ones."""
        return len(self.pending) + math.ceil(max(0, self.total - self.next_config) / self.size)

    # ------------------------------------------------------------------ repair
    def repair(self) -> list[str]:
        """Continue from the record a dead driver left (module docstring); one line per change."""
        lines = []
        for _ in self.study.get_trials(deepcopy=False, states=(TrialState.WAITING,)):  # a config queued, never asked
            handle = self.study.ask(self.space)
            queued = self.study.get_trials(deepcopy=False)[handle.number]
            if identified(queued):
                self.handles[queued.user_attrs[MEMBER_ATTR]] = handle
        for trial in self.study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
            member = trial.user_attrs.get(MEMBER_ATTR) if identified(trial) else None
            if member not in self.handles or self.handles[member].number != trial.number:  # its driver is gone
                self.study.tell(trial.number, state=TrialState.FAIL)
        cut: list[str] = []
        errored: list[str] = []
        for member, trial in self.latest().items():
            if trial.state == TrialState.FAIL:
                (errored if trial.user_attrs.get(STATUS_ATTR) == ERRORED else cut).append(member)
                attrs = {**trial.user_attrs, ATTEMPT_ATTR: int(trial.user_attrs.get(ATTEMPT_ATTR, 1)) + 1, STATUS_ATTR: RUNNING}
                attrs.pop(REASON_ATTR, None)
                self.study.add_trial(optuna.trial.create_trial(state=TrialState.WAITING, params=trial.params,
                                                               distributions=trial.distributions, user_attrs=attrs,
                                                               intermediate_values=dict(trial.intermediate_values)))
                self.handles[member] = self.study.ask(self.space)
        latest, continued = self.latest(), 0
        for unit, names in self.units().items():
            asked = [m for m in names if m in self.handles]
            if not asked:
                continue
            files = UnitFiles(self.path, unit)
            reached = max([files.reached(), *(max(latest[m].intermediate_values, default=0) for m in asked)])
            self.histories[unit] = upto(files.history(), reached)
            entries, known = member_results.history(self.histories[unit]), self._values(asked)
            for member in asked:
                for entry in entries.get(member, []):
                    self._record_epoch(member, entry, known[member])
                self._settle(member, entries.get(member, []))
            alive = [m for m in asked if m in self.handles]
            if alive:
                self.pending.append(Unit(unit, {m: dict(latest[m].params) for m in names}))
                continued += 1
        self.drop_ended()
        if cut or errored:
            why = [f"{len(cut)} config(s) cut off by the stop of the last driver"] * bool(cut) + [f"{len(errored)} errored"] * bool(errored)
            lines.append(f"{' and '.join(why)} continue from their last state ({continued} trial(s))")
        self.push()
        return lines

    def drop_ended(self) -> None:
        """Remove the states of every unit whose members all ended (a driver killed between an end and its removal)."""
        latest = self.latest()
        for unit, names in self.units().items():
            if all(latest[m].state.is_finished() and latest[m].state != TrialState.FAIL for m in names):
                files = UnitFiles(self.path, unit)
                if files.states()[: -1 if self.keep_last else None]:
                    files.drop(self.keep_last)

    # ------------------------------------------------------------------ asking
    def next(self) -> Unit | None:
        """The next unit to run: one to continue, else new configs (the first ``points``, then
        sampled); None when every config was asked."""
        if self.pending:
            return self.pending.pop(0)
        if self.next_config >= self.total:
            return None
        size = min(self.size, self.total - self.next_config)
        first, names = member_results.unit_ids(self.next_config, self.next_unit, size, self.size, self.total)
        unit = Unit(first)
        self.next_unit += self.size > 1
        for member in names:
            attrs = {MEMBER_ATTR: member, UNIT_ATTR: unit.id, ATTEMPT_ATTR: 1, CONFIG_ATTR: self.next_config}
            handle = self._ask(self.next_config, attrs)
            unit.members[member] = dict(handle.params)
            self.handles[member] = handle
            self.next_config += 1
        self.histories[unit.id] = []
        self.push()
        return unit

    def _ask(self, index: int, attrs: dict[str, Any]) -> Any:
        if index < len(self.points):
            self.study.enqueue_trial(self.points[index], user_attrs=attrs)
            return self.study.ask(self.space)
        study = optuna.load_study(study_name=self.study.study_name, storage=self.backend, sampler=quietly(self.sampler, index))
        handle = quietly(study.ask, self.space)
        for key, value in attrs.items():  # the config's place last: a trial without it is no config's (identified())
            handle.set_user_attr(key, value)
        return handle

    # ------------------------------------------------------------------ results and ends
    def observe(self, unit: str, result: dict[str, Any]) -> bool:
        """Record a unit's report: each member's epoch, and its end when its entry says it ended;
        returns whether ASHA stops the unit (a config per trial, at a rung). A report after a gap
        (Ray restarted the trial from a state whose report was lost with a node) first records
        the missing epochs from the unit's history."""
        entries = {m: e for m, e in member_results.entries(result).items() if m in self.handles}  # not an attempt that ended
        if not entries:
            return False
        known = self._values(entries)
        gap = any(set(range(1, e["epoch"])) - set(known[m]) for m, e in entries.items())
        if gap:
            self.histories[unit] = UnitFiles(self.path, unit).history()  # written by the trial before this report
        else:
            self.history(unit).append({member_results.MEMBERS_KEY: entries})
        by_member, stop = member_results.history(self.history(unit)), False
        for member, entry in entries.items():
            mine = [e for e in by_member.get(member, []) if e["epoch"] <= entry["epoch"]]
            for earlier in mine if gap else mine[-1:]:
                self._record_epoch(member, earlier, known[member])
            stop |= self._settle(member, mine)
        self.push()
        return stop

    def ended(self, unit: str, error: str | None) -> None:
        """A unit's Ray trial ended: with ``error``, its members still running fail (``--resume``
        runs them again); its states are removed once every member ended; the live files are rewritten."""
        names = self.units().get(unit, [])
        if error is not None:
            self.errors[unit] = error
            for member in names:
                if member in self.handles:
                    self._fail(member, ERRORED, error)
        elif all(m not in self.handles for m in names):
            UnitFiles(self.path, unit).drop(self.keep_last)
        self.push()
        self.write_live()

    def close(self) -> None:
        """The driver stops: the configs it still runs are failed, to be continued by ``--resume``."""
        for member in list(self.handles):
            self._fail(member, RUNNING, INTERRUPTED)
        self.push()

    def _record_epoch(self, member: str, entry: dict[str, Any], known: dict[int, float]) -> None:
        """The member's value at the entry's epoch, once (``known``: its values recorded so far; a
        non-finite value as the metric's worst)."""
        if entry["epoch"] not in known:
            value = finite(entry.get(self.metric))
            known[entry["epoch"]] = worst_value(self.metric) if value is None else value
            self.handles[member].report(known[entry["epoch"]], entry["epoch"])

    def _settle(self, member: str, entries: list[dict[str, Any]]) -> bool:
        """Tell the member's end when its last entry says it ended (diverged, stopped at its
        population's rung, the last epoch) or when ASHA stops it there; whether it stopped
        there by ASHA."""
        last = entries[-1] if entries else {}
        status, _ = member_results.member_status(entries, None, self.max_epochs, int(last.get("epoch", 0)) >= self.max_epochs)
        if status != RUNNING:
            self._tell(member, status, entries)
            return False
        if entries and self._asha_stops(member, int(last["epoch"])):
            self._tell(member, EARLY_STOPPED, entries)
            return True
        return False

    def _asha_stops(self, member: str, epoch: int) -> bool:
        if epoch not in self.rungs or epoch >= self.max_epochs:
            return False
        trials = self.study.get_trials(deepcopy=False, states=(TrialState.COMPLETE, TrialState.PRUNED, TrialState.RUNNING))
        values = [t.intermediate_values[epoch] for t in trials if epoch in t.intermediate_values]
        own = next(t for t in trials if t.number == self.handles[member].number)
        return not asha_continues(own.intermediate_values[epoch], values, self.reduction_factor, self.direction)

    def _tell(self, member: str, status: str, entries: list[dict[str, Any]]) -> None:
        handle, last = self.handles.pop(member), entries[-1] if entries else {}
        handle.set_user_attr(STATUS_ATTR, status)
        final = {name: value for name in dict.fromkeys((self.metric, *FINAL_METRICS)) if (value := finite(last.get(name))) is not None}
        if final:
            handle.set_user_attr(FINAL_ATTR, final)
        if status == EARLY_STOPPED:
            self.study.tell(handle.number, state=TrialState.PRUNED)
            return
        value = finite(last.get(self.metric)) if status == COMPLETED else None
        self.study.tell(handle.number, worst_value(self.metric) if value is None else value, state=TrialState.COMPLETE)
        assert status in (COMPLETED, DIVERGED)

    def _fail(self, member: str, status: str, reason: str) -> None:
        handle = self.handles.pop(member)
        handle.set_user_attr(STATUS_ATTR, status)
        handle.set_user_attr(REASON_ATTR, reason)
        self.study.tell(handle.number, state=TrialState.FAIL)

    def _values(self, members: Iterable[str]) -> dict[str, dict[int, float]]:
        """Each member's values recorded so far (its current attempt's intermediate values, a copy)."""
        trials = self.study.get_trials(deepcopy=False)
        return {m: dict(trials[self.handles[m].number].intermediate_values) for m in members}

    # ------------------------------------------------------------------ files
    def push(self) -> None:
        """Put the study into the experiment folder (object storage: its local copy)."""
        if self.copy is not None:
            self.copy.push()

    def write_live(self) -> None:
        """Rewrite ``trials.csv`` and ``best_config.json`` (the best so far) while ``experiment.json``
        says running; a failure is printed once and never stops the search."""
        try:
            frame = self.frame()
            best, _ = best_config(frame, self.info) if len(frame) else (None, None)
            texts = experiment_texts(self.info, frame, best.to_dict() if best else None)
            for name in (TRIALS_FILE, BEST_CONFIG_FILE):
                if name in texts:
                    storage.write_text(storage.join(self.path, name), texts[name])
        except Exception as exc:  # noqa: BLE001 - a live view must not end a search of hours
            if not self.warned:
                print(f"warning: live {TRIALS_FILE} not written ({type(exc).__name__}: {exc}); "
                      "it is written when the search ends", file=sys.stderr, flush=True)
            self.warned = True


# ---------------------------------------------------------------------------- the checks
def optuna_state(status: str) -> Any:
    """The Optuna state of an ended member of ``trials.csv``'s ``status`` (module docstring); None while it runs."""
    states = {COMPLETED: TrialState.COMPLETE, DIVERGED: TrialState.COMPLETE, EARLY_STOPPED: TrialState.PRUNED,
              ERRORED: TrialState.FAIL}
    return states.get(status)


def disagreements(study_trials: list[Any], frame: Any, metric: str) -> dict[str, str]:
    """Where a search's study (its trials) disagrees with its ``trials.csv`` (``frame``): a member
    id (or ``#<number>`` of an Optuna trial) -> the first difference found; empty when they agree.

    They agree when every member of ``trials.csv`` is the latest attempt of an Optuna trial of its
    member id with its config, the state of its last status (:func:`optuna_state`) and that
    status as a user attribute, its ``metric`` at every epoch as intermediate values and, unless
    it failed, its final value; every earlier attempt failed; and no trial is left running or
    waiting, or ended without a member id (a config asked by a driver killed at that moment is
    failed by the next one).
    """
    found: dict[str, str] = {}
    latest: dict[Any, Any] = {}
    for trial in study_trials:
        member = trial.user_attrs.get(MEMBER_ATTR) if identified(trial) else None
        if trial.state in (TrialState.RUNNING, TrialState.WAITING):
            found[f"#{trial.number}"] = f"left {trial.state.name} in the study"
        elif member is None and trial.state != TrialState.FAIL:
            found[f"#{trial.number}"] = f"{trial.state.name} without a config's identity"
        if member is not None:
            if member in latest and latest[member].state != TrialState.FAIL:
                found[member] = f"attempt #{latest[member].number} ended {latest[member].state.name} but was asked again"
            latest[member] = trial
    rows = {str(member): group.sort_values("epoch") for member, group in frame.groupby("trial_id")} if len(frame) else {}
    for member, trial in latest.items():
        if member not in rows and f"#{trial.number}" not in found:
            found[member] = "in the study but not in trials.csv"
    for member, mine in rows.items():
        trial, last = latest.get(member), mine.iloc[-1]
        if trial is None:
            found[member] = "in trials.csv but not in the study"
            continue
        epochs = mine.dropna(subset=["epoch"])
        values = {int(e): float(v) for e, v in zip(epochs["epoch"], epochs[metric]) if math.isfinite(float(v))}
        wanted = optuna_state(str(last["status"]))
        checks = [(name, not math.isclose(float(value), float(last[name]), rel_tol=1e-9)) for name, value in trial.params.items()]
        checks += [("state", wanted is None or trial.state != wanted),
                   ("epochs", sorted(trial.intermediate_values) != [int(e) for e in epochs["epoch"]]),
                   ("intermediate values", any(not math.isclose(trial.intermediate_values.get(e, math.nan), v, rel_tol=1e-9)
                                               for e, v in values.items())),
                   ("value", trial.state != TrialState.FAIL and last["status"] != DIVERGED
                    and not math.isclose(float(trial.value), float(last[metric]), rel_tol=1e-9)),
                   ("status", trial.user_attrs.get(STATUS_ATTR) != last["status"])]
        differ = [name for name, bad in checks if bad]
        if differ:
            found[member] = (f"{', '.join(differ)} differ (study: {trial.state.name}, status {trial.user_attrs.get(STATUS_ATTR)}; "
                             f"trials.csv: {last['status']} at epoch {last['epoch']})")
    return found
