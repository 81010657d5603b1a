"""The Optuna study of a search, kept in a database so it can be watched live.

``--optuna-storage sqlite:///PATH`` keeps a copy of the searcher's Optuna study
(:mod:`tune.searcher`) in a database (:func:`optuna_storage`, :class:`StudyMirror`), so that
``optuna-dashboard sqlite:///PATH`` shows the search as it goes; the study's name is
``<experiment name>/<task>`` (:func:`study_name`), its objective is named after the search's
metric, and each Optuna trial carries its ids (:data:`MEMBER_ATTR`, :data:`RAY_TRIAL_ATTR`,
:data:`ATTEMPT_ATTR`) and, once ended, its status and final metrics as user attributes.
``experiment.json`` records the URL without its password (:func:`public_url`).
"""
from __future__ import annotations

import re
import sys
import warnings
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import optuna

from ssot.errors import ConfigError, SSOTError
from ssot.results.outputs import check_output

__all__ = ["STORAGE_URL", "MEMBER_ATTR", "RAY_TRIAL_ATTR", "ATTEMPT_ATTR", "optuna_storage", "public_url", "study_name",
           "check_study", "StudyMirror", "quietly"]

#: Database URLs an Optuna study can be stored at (SQLAlchemy's form ``dialect[+driver]://...``).
STORAGE_URL = re.compile(r"^(sqlite|postgresql|mysql)(\+\w+)?://")
#: User attributes of every Optuna trial of a search: its member id (its ``trial_id`` in
#: ``trials.csv``), its Ray trial's id, and its attempt (1, then 2... when ``--resume`` reruns a
#: trial that errored).
MEMBER_ATTR, RAY_TRIAL_ATTR, ATTEMPT_ATTR = "member_id", "ray_trial_id", "attempt"
#: The user attribute of an Optuna trial a killed driver had asked for and that Ray never saved.
ORPHAN_ATTR = "failed_because"


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


class StudyMirror:
    """The copy of a searcher's study in a database (``--optuna-storage``).

    Written from Optuna trials of the searcher's in-memory study (:meth:`flush`): a trial new to
    the database is added as it is; a running one gets the intermediate values, user attributes
    and end it lacks. Trials are matched by their member id and attempt (user attributes), so
    writing the same trial twice changes nothing, and a trial the database holds as ended is
    left as it is. :meth:`sync` brings the whole database to a study (a resumed search). The
    connection is not pickled (Ray pickles the searcher that holds the mirror).
    """

    def __init__(self, url: str, name: str, direction: str, metric: str):
        self.url, self.name, self.direction, self.metric = url, name, direction, metric
        self._study: Any = None
        self._warned = False
        self._unwritten: list[Any] = []  # trials of a flush the database refused, written with the next one

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_study": None}

    def study(self) -> Any:
        """The database's study (created on first use, its objective named after the metric)."""
        if self._study is None:
            self._study = quietly(optuna.create_study, storage=optuna_storage(self.url), study_name=self.name,
                                  direction="maximize" if self.direction == "max" else "minimize", load_if_exists=True)
            quietly(self._study.set_metric_names, [self.metric])
        return self._study

    def flush(self, trials: Iterable[Any]) -> bool:
        """Write the Optuna ``trials`` (frozen, of the searcher's study) to the database. Returns
        whether it was written; a database that fails is named once on stderr, and the trials are
        written again with the next flush."""
        waiting = optuna.trial.TrialState.WAITING  # a config queued to be asked is no trial of the search yet
        trials = list({_key(t): t for t in [*self._unwritten, *trials] if t.state != waiting}.values())  # each one's latest state
        if not trials:
            return True
        try:
            db = self.study()
            index = {_key(t): t for t in db.get_trials(deepcopy=False)}
            for trial in trials:
                self._write(db, index.get(_key(trial)), trial)
        except Exception as exc:  # noqa: BLE001 - a watched copy must not end a search of hours
            if not self._warned:
                print(f"warning: the Optuna study {self.name!r} in --optuna-storage {public_url(self.url)} was not "
                      f"updated ({type(exc).__name__}: {' '.join(str(exc).split())[:200]}); it is written again at "
                      "the next save", file=sys.stderr, flush=True)
            self._warned, self._unwritten = True, trials
            return False
        self._unwritten = []
        return True

    def sync(self, trials: Iterable[Any]) -> list[dict[str, Any]]:
        """Bring the database to the study of ``trials`` (a resumed search's, as Ray saved it): each
        written (:meth:`flush`); a trial the database holds as running or waiting that the study
        does not know (a killed driver asked for it after Ray's last save, so it never ran for
        ``--resume``) is failed there. Returns those trials' configs, to be asked again."""
        trials = [t for t in trials if t.state != optuna.trial.TrialState.WAITING]
        if not self.flush(trials):
            return []
        known = {_key(t) for t in trials}
        orphans = []
        db = self.study()
        for stale in db.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING, optuna.trial.TrialState.WAITING)):
            if _key(stale) in known:
                continue
            optuna.trial.Trial(db, stale._trial_id).set_user_attr(
                ORPHAN_ATTR, "asked by a search driver that was killed before Ray saved its trial; its config is asked again")
            db.tell(stale.number, state=optuna.trial.TrialState.FAIL)
            if stale.params:
                orphans.append(dict(stale.params))
        return orphans

    @staticmethod
    def _write(db: Any, stored: Any, trial: Any) -> None:
        if stored is None:
            db.add_trial(trial)
            return
        if stored.state.is_finished():
            return
        handle = optuna.trial.Trial(db, stored._trial_id)
        for step, value in sorted(trial.intermediate_values.items()):
            if step not in stored.intermediate_values:
                handle.report(value, step)
        for key, value in trial.user_attrs.items():
            if stored.user_attrs.get(key) != value:
                handle.set_user_attr(key, value)
        if trial.state.is_finished():
            db.tell(stored.number, trial.values if trial.state == optuna.trial.TrialState.COMPLETE else None, state=trial.state)


def quietly(call: Any, *args: Any, **kwargs: Any) -> Any:
    """``call(*args, **kwargs)`` without Optuna's log lines and experimental-API warnings (a
    search prints its own lines)."""
    verbosity = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            return call(*args, **kwargs)
    finally:
        optuna.logging.set_verbosity(verbosity)


def _key(trial: Any) -> tuple[Any, Any]:
    """A trial's identity across the searcher's study and the database: its member id and attempt."""
    return trial.user_attrs.get(MEMBER_ATTR), trial.user_attrs.get(ATTEMPT_ATTR, 1)
