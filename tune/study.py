"""The Optuna study of a search, kept in a database so it can be watched live.

``--optuna-storage sqlite:///PATH`` keeps the TPE/random searcher's Optuna study in a database
(:func:`optuna_storage`), so that ``optuna-dashboard sqlite:///PATH`` shows the search live; the
study's name is ``<experiment name>/<task>`` (:func:`study_name`); ``experiment.json`` records the
URL without its password (:func:`public_url`).
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import optuna
from ray.tune.search.optuna import OptunaSearch

from ssot.cli import check_output
from ssot.errors import ConfigError, SSOTError

__all__ = ["STORAGE_URL", "optuna_storage", "public_url", "study_name", "check_study", "StoredOptunaSearch"]

#: Database URLs an Optuna study can be stored at (SQLAlchemy's form ``dialect[+driver]://...``).
STORAGE_URL = re.compile(r"^(sqlite|postgresql|mysql)(\+\w+)?://")


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



class StoredOptunaSearch(OptunaSearch):
    """Ray's ``OptunaSearch`` for a study kept in a database, which a resumed search may find
    ahead of the searcher's saved state.

    A driver killed after a trial ended, but before Ray saved its state, left the trial finished
    in the database and running in the searcher's state; the resumed search restores the trial
    from its checkpoint, and its replayed results would update a finished Optuna trial
    (``UpdateFinishedTrialError``, which ended the search). The database already holds that
    trial's final value: such results are skipped (Ray's own ``on_trial_complete`` already logs
    and skips such a completion).
    """

    def on_trial_result(self, trial_id: str, result: dict) -> None:
        try:
            super().on_trial_result(trial_id, result)
        except optuna.exceptions.UpdateFinishedTrialError:
            self._completed_trials.add(trial_id)
