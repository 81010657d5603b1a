"""Ray's saved state of a search, read without running code: checked before ``--resume``,
repaired for trials that ended, and the checkpoints it still needs.

Ray Tune saves an experiment's state in its folder: ``tuner.pkl`` (the Tuner, cloudpickled),
``experiment_state-<time>.json`` (the trials: a JSON text per trial, some fields cloudpickled as
hex), the searcher's ``searcher-state-<time>.pkl`` and ``search_gen_state-<time>.json``. On
``--resume`` Ray unpickles them (and each errored trial's ``error.pkl``): this module reads them
first, as JSON and as pickle *opcodes* (:mod:`pickletools`, which parses without executing), to

* refuse, in one line and before anything runs, a state that is missing, truncated or corrupt
  (a full disk, a killed copy), or whose trials do not match ``experiment.json``
  (:func:`check_resumable`);
* rebuild the checkpoint a trial would be restored from when it is gone, so that Ray does not
  error the trial for good (:func:`repair_checkpoints`);
* say which checkpoints the saved state still needs (:func:`saved_trials`), so that
  :class:`tune.live.DropEndedCheckpoints` deletes only the others;
* give a trial's reports that its saved state descends from (:func:`trial_history`, kept when its
  checkpoints are removed: :func:`keep_history`);
* keep a verified copy of each save (:class:`LastGood`, written by :class:`tune.live.KeepLastGood`)
  and put it back on ``--resume`` (:func:`restore_last_good`): Ray writes its state files in
  place, so a driver killed while they are copied leaves them truncated, or of two saves.

Ray 2.60 saves in two steps: it writes the save's files into the driver's staging folder (the
experiment state with ``open(..., "w")``, the searcher's pickles atomically), then copies that
folder to the experiment folder in a background thread (``pyarrow.fs.copy_files``, which truncates
each file it replaces). A driver killed during the copy leaves an experiment state cut short (a
search that can never be resumed) or a searcher state of another save than the trials'. The last
good copy is written from the staging folder before Ray starts its copy, so it always holds the
newest save, whole and of one save.
"""
from __future__ import annotations

import fnmatch
import hashlib
import json
import os
import pickletools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow.fs

from ssot.errors import SSOTError
from ssot.results import atomic, storage
from ssot.results.experiment import TRIALS_FILE

TUNER_FILE = "tuner.pkl"
#: The file of a checkpoint folder rebuilt for a trial that had ended (:func:`repair_checkpoints`).
ENDED_FILE = "ended.json"
#: A trial's state in its checkpoint folder: every member's (``tune/trial.py`` writes it).
STATE_FILE = "trial.pt"
#: A trial's reports that its checkpoint's state descends from, oldest first (JSON; ``tune/trial.py``
#: writes it in each checkpoint), also kept in the trial's folder once it ended
#: (:func:`keep_history`): ``trials.csv``'s rows of the trial (:func:`trial_history`). Ray's own
#: ``result.json`` is rewritten in place at each save of Ray's state (a driver killed then leaves it
#: cut short) and repeats epochs after a restart.
HISTORY_FILE = "history.json"
STATE_PATTERN, SEARCHER_PATTERN = "experiment_state-*.json", "searcher-state-*.pkl"
#: Ray's files of one save, one per kind and driver (``*`` is the driver's start time; Ray restores
#: the newest name of each kind): the trials (JSON), the searcher (:mod:`tune.searcher`), Ray's
#: wrapper of it (a grid's variant generator instead), the stateful callbacks' states (pickles).
SAVE_PATTERNS = (STATE_PATTERN, SEARCHER_PATTERN, "search_gen_state-*.json", "basic-variant-state-*.json",
                 "callback-states-*.pkl")
#: The experiment's folder of the last good copy of Ray's saved state (:class:`LastGood`), its
#: index (file name -> SHA-256 of the copy, itself named by its SHA-256), and where files that a
#: restore replaces are set aside.
LAST_GOOD_DIR, LAST_GOOD_INDEX, SET_ASIDE_DIR = ".ssot-state", "last-good.json", "set-aside"
TERMINATED, ERROR = "TERMINATED", "ERROR"
#: The folder of a trial's checkpoint (Ray's ``checkpoint_<index>``).
CHECKPOINT_DIR = re.compile(r"checkpoint_(\d+)")


class CorruptStateError(SSOTError):
    """Ray's saved state of an experiment cannot be resumed (one line: which file, why, what to do)."""


@dataclass(frozen=True)
class SavedTrial:
    """One trial as the saved state has it."""

    trial_id: str
    status: str
    folder: str  # the trial's folder in the experiment folder
    config: dict[str, Any]
    last_result: dict[str, Any]
    checkpoint: int | None  # index of the latest checkpoint it would restore from (None: none)


def _names(fs: Any, path: str) -> list[str]:
    return [i.base_name for i in fs.get_file_info(pyarrow.fs.FileSelector(path, allow_not_found=True))]


def _read(fs: Any, path: str) -> bytes:
    with fs.open_input_stream(path) as stream:
        return stream.read()


def newest(fs: Any, path: str, pattern: str = STATE_PATTERN) -> str | None:
    """The newest file of ``pattern`` in the experiment folder (the one Ray restores), or None."""
    matching = fnmatch.filter(_names(fs, path), pattern)
    return f"{path}/{max(matching)}" if matching else None


def _pickle_strings(data: bytes) -> list[str]:
    """The strings of a pickle, read from its opcodes (nothing executed). Raises ValueError
    when the pickle is truncated or malformed."""
    return [arg for _, arg, _ in pickletools.genops(data) if isinstance(arg, str)]


def _checkpoint_index(metadata: dict[str, Any]) -> int | None:
    """The latest checkpoint of a trial's run metadata: Ray restores the newest registered one,
    whose folder ``checkpoint_<index>`` has the highest index."""
    manager = metadata.get("checkpoint_manager")
    if not isinstance(manager, dict) or not isinstance(manager.get("value"), str):
        return None
    names = (s.rsplit("/", 1)[-1] for s in _pickle_strings(bytes.fromhex(manager["value"])))
    found = [int(m.group(1)) for name in names if (m := CHECKPOINT_DIR.fullmatch(name))]
    return max(found) if found else None


def saved_trials(fs: Any, path: str, state_file: str | None = None) -> list[SavedTrial]:
    """The trials of the newest saved experiment state (``state_file`` when given); none when
    there is no state.

    Raises
    ------
    ValueError
        When the state file is truncated or not Ray's (its message names the file).
    """
    state_file = state_file or newest(fs, path)
    if state_file is None:
        return []
    return _parsed(state_file.rsplit("/", 1)[-1], _read(fs, state_file))


def _parsed(name: str, data: bytes) -> list[SavedTrial]:
    """The trials of an experiment state file ``name`` of content ``data``; ValueError naming it
    when it is truncated or not Ray's."""
    trials = []
    try:
        state = json.loads(data)
        for trial_json, metadata_json in state["trial_data"]:
            trial, metadata = json.loads(trial_json), json.loads(metadata_json)
            trials.append(SavedTrial(str(trial["trial_id"]), str(trial["status"]), str(trial["relative_logdir"]),
                                     trial["config"] if isinstance(trial.get("config"), dict) else {},
                                     metadata.get("last_result") or {}, _checkpoint_index(metadata)))
    except (ValueError, KeyError, TypeError, AttributeError) as exc:  # JSONDecodeError is a ValueError
        raise ValueError(f"{name} is truncated or not Ray's ({type(exc).__name__}: {' '.join(str(exc).split())[:120]})") from None
    return trials


def check_file(name: str, data: bytes) -> None:
    """Raise ValueError (naming the file) unless ``data`` is a whole file ``name`` of Ray's saved
    state: an experiment state's JSON and its trials, or a pickle's opcodes to its end (nothing is
    unpickled)."""
    if fnmatch.fnmatch(name, STATE_PATTERN):
        _parsed(name, data)
        return
    try:
        _pickle_strings(data)
    except ValueError as exc:
        raise ValueError(f"{name} is truncated or not a pickle ({exc})") from None


def check_resumable(fs: Any, path: str, shown: str, max_epochs: int, expected_trials: int) -> bool:
    """Whether the experiment at ``path`` has a Ray state to restore; refuse one that cannot be.

    No saved experiment state and no ``trials.csv`` (the driver stopped before Ray saved anything,
    perhaps while Ray wrote ``tuner.pkl``) is False: the search starts anew with the settings of
    ``experiment.json`` (its trials before the first save, if any, run again as new ones).
    ``shown`` is the experiment's path as the user knows it; ``max_epochs`` and
    ``expected_trials`` come from ``experiment.json``.

    Raises
    ------
    CorruptStateError
        When ``tuner.pkl`` or the newest experiment state is missing while results exist, when one
        of them or the newest file of another kind of :data:`SAVE_PATTERNS` is truncated or
        corrupt, or when the saved trials do not match ``experiment.json``
        (more trials than it asks for, or trials of another number of epochs).
    """
    names = set(_names(fs, path))
    states = fnmatch.filter(names, STATE_PATTERN)
    if not states and TRIALS_FILE not in names:
        return False

    kept = "trials.csv" if TRIALS_FILE in names else "its trial folders (no trials.csv was written)"

    def refused(why: str) -> CorruptStateError:
        return CorruptStateError(f"Ray's state of experiment {shown} cannot be resumed: {why}. Nothing was run; its results "
                                 f"so far stay in {kept}: start a new search with another --name.")

    try:
        if TUNER_FILE not in names:
            raise ValueError(f"{TUNER_FILE} is missing")
        check_file(TUNER_FILE, _read(fs, f"{path}/{TUNER_FILE}"))
        for pattern in SAVE_PATTERNS[1:]:
            found = newest(fs, path, pattern)
            if found is not None:
                check_file(found.rsplit("/", 1)[-1], _read(fs, found))
        if not states:
            raise ValueError("no experiment_state-*.json")
        trials = saved_trials(fs, path)
    except (ValueError, OSError) as exc:
        raise refused(f"{exc} (a full disk, or a copy cut short?)") from None
    other = sorted({int(t.config["epochs"]) for t in trials if isinstance(t.config.get("epochs"), int)} - {max_epochs})
    if len(trials) > expected_trials or other:
        found = f"{len(trials)} trials" + (f" of {', '.join(map(str, other))} epochs" if other else "")
        raise refused(f"it holds {found} but experiment.json asks for {expected_trials} trials of {max_epochs} epochs")
    return True


def read_history(data: bytes) -> list[dict[str, Any]]:
    """A trial's reports from the content of a :data:`HISTORY_FILE`; ValueError when it is not one."""
    history = json.loads(data)
    if not isinstance(history, list) or not all(isinstance(r, dict) for r in history):
        raise ValueError(f"{HISTORY_FILE} is not a list of reports")
    return history


def trial_history(fs: Any, path: str, trial: SavedTrial) -> list[dict[str, Any]] | None:
    """The reports of ``trial`` (of the experiment folder ``path``) that its saved state descends
    from: the :data:`HISTORY_FILE` of its latest checkpoint, or the one kept in its folder once it
    ended (:func:`keep_history`); None when there is none (a trial without checkpoint, or of an
    earlier version: its ``result.json`` is what is left)."""
    candidates = [f"{path}/{trial.folder}/{HISTORY_FILE}"] if trial.status == TERMINATED else []
    if trial.checkpoint is not None:
        candidates.append(f"{path}/{trial.folder}/checkpoint_{trial.checkpoint:06d}/{HISTORY_FILE}")
    for candidate in candidates:
        try:
            return read_history(_read(fs, candidate))
        except (OSError, ValueError):  # missing (FileNotFoundError is an OSError), or not whole
            continue
    return None


def keep_history(fs: Any, path: str, trial: SavedTrial) -> bool:
    """Copy the :data:`HISTORY_FILE` of a finished ``trial``'s latest checkpoint into its folder (its
    checkpoints may then be removed): whether it is there now, or there is none to keep."""
    kept = f"{path}/{trial.folder}/{HISTORY_FILE}"
    if trial.checkpoint is None or fs.get_file_info(kept).type == pyarrow.fs.FileType.File:
        return True
    try:
        data = _read(fs, f"{path}/{trial.folder}/checkpoint_{trial.checkpoint:06d}/{HISTORY_FILE}")
        read_history(data)
    except FileNotFoundError:
        return True  # a checkpoint of an earlier version: no history to keep
    except (OSError, ValueError):
        return False
    atomic.write_whole(fs, kept, data)
    return True


def repair_checkpoints(fs: Any, path: str, statuses: dict[str, str], max_epochs: int) -> list[str]:
    """Rebuild the checkpoint that the saved state would restore a trial from, when it is gone.

    Ray restores a trial that the saved state holds as running, pending, paused or errored from
    its latest checkpoint, and errors it for good when that checkpoint is gone ("Could not recover
    from checkpoint as it does not exist on storage anymore": it was removed after the trial
    ended but before its end was saved, by this project's earlier versions or by Ray's own
    ``num_to_keep``). For such a trial the missing folder is made again:

    * a trial that had ended (``trials.csv`` gives it a final status in ``statuses``, or its last
      saved result is the last epoch or a divergence) gets a folder holding only
      :data:`ENDED_FILE`: the trainable then returns at once and Ray records the trial as
      finished, with its results so far (the searcher is told, as for any finished trial);
    * another trial gets a copy of its newest complete checkpoint (holding :data:`STATE_FILE`),
      from which it continues.

    Returns one line per trial repaired (``<trial id>: how``). Checkpoint folders are only added,
    never removed or changed.
    """
    final = {"completed", "early-stopped", "diverged"}
    repaired = []
    for trial in saved_trials(fs, path):
        if trial.status == TERMINATED or trial.checkpoint is None:
            continue
        folder = f"{path}/{trial.folder}"
        wanted = f"{folder}/checkpoint_{trial.checkpoint:06d}"
        if fs.get_file_info(wanted).type != pyarrow.fs.FileType.NotFound:
            continue
        last = trial.last_result
        reached = isinstance(last.get("epoch"), (int, float)) and last["epoch"] >= max_epochs
        if statuses.get(trial.trial_id) in final or reached or bool(last.get("diverged")):
            fs.create_dir(wanted, recursive=True)
            with fs.open_output_stream(f"{wanted}/{ENDED_FILE}") as out:
                out.write(json.dumps({"trial_id": trial.trial_id, "last_result": last}, default=str).encode())
            repaired.append(f"{trial.trial_id}: it had ended (its checkpoint was removed)")
            continue
        complete = sorted((int(m.group(1)), name) for name in _names(fs, folder) if (m := CHECKPOINT_DIR.fullmatch(name))
                          and fs.get_file_info(f"{folder}/{name}/{STATE_FILE}").type == pyarrow.fs.FileType.File)
        if complete:
            index, name = complete[-1]
            fs.create_dir(wanted, recursive=True)  # copy_files writes into an existing folder only
            pyarrow.fs.copy_files(f"{folder}/{name}", wanted, source_filesystem=fs, destination_filesystem=fs)
            repaired.append(f"{trial.trial_id}: continues from its checkpoint of epoch-index {index}")
    return repaired


# ---------------------------------------------------------------------------- the last good copy
def save_files(staging: str) -> dict[str, bytes]:
    """The files of Ray's newest save in its local staging folder ``staging``: the newest name of
    each kind (:data:`SAVE_PATTERNS`), what Ray would restore from that folder."""
    names = os.listdir(staging)
    newest_names = [max(found) for pattern in SAVE_PATTERNS if (found := fnmatch.filter(names, pattern))]
    return {name: Path(staging, name).read_bytes() for name in newest_names}


class LastGood:
    """The last good copy of Ray's saved state of the experiment at ``path`` (a local folder or a
    URI), in its folder :data:`LAST_GOOD_DIR`.

    :meth:`keep` stores the files of one save, each checked whole (:func:`check_file`) and stored
    under its SHA-256, then the index that names them (written last, atomically: a driver killed
    at any moment leaves the previous index and its copies, or the new one with its copies), then
    removes the copies no index names. :func:`restore_last_good` puts them back.
    """

    def __init__(self, path: str):
        self.path, self.folder = path, storage.join(path, LAST_GOOD_DIR)
        self.index: dict[str, str] | None = None  # the index written last (None: none by this driver)
        self.stored: set[str] | None = None  # the copies in the folder (None: not listed yet)

    def keep(self, files: dict[str, bytes]) -> None:
        """Store the save ``files`` (name -> content) as the last good copy.

        Raises
        ------
        ValueError
            When a file is not whole (nothing is stored then).
        OSError
            When the storage cannot be written.
        """
        for name, data in files.items():
            check_file(name, data)
        index = {name: hashlib.sha256(data).hexdigest() for name, data in files.items()}
        if not files or index == self.index:
            return
        stored = self.stored if self.stored is not None else {n for n in storage.entries(self.folder) if _is_digest(n)}
        for name, data in files.items():
            if index[name] not in stored:
                storage.write_bytes(storage.join(self.folder, index[name]), data)
                stored.add(index[name])
        storage.write_text(storage.join(self.folder, LAST_GOOD_INDEX), json.dumps({"files": index}, indent=1) + "\n")
        for old in stored - set(index.values()):
            storage.remove(storage.join(self.folder, old))
        self.index, self.stored = index, set(index.values())

    def forget(self) -> None:
        """Remove the index (best effort): after a save that could not be kept, Ray's own files of
        that save are newer than the copy, and ``--resume`` must read them instead."""
        self.index = None
        try:
            storage.remove(storage.join(self.folder, LAST_GOOD_INDEX))
        except OSError:
            pass


def _is_digest(name: str) -> bool:
    return re.fullmatch(r"[0-9a-f]{64}", name) is not None


def restore_last_good(path: str) -> list[str]:
    """Put the last good copy of Ray's saved state (:class:`LastGood`) back into the experiment
    folder ``path`` before ``--resume`` reads it; one line per file changed.

    Each file of the copy whose content in the folder differs (truncated by a driver killed while
    Ray copied it, of an older save, or missing) is written back whole; a file of the same kind with
    a newer name (a save of which no copy was kept: a driver that ran no step of Ray's loop, since
    every trial of the state it restored had ended, and was killed during its final outputs; its
    save holds the trials of the copy) is moved into :data:`SET_ASIDE_DIR`, so that Ray restores
    the copy. Nothing changes when the experiment has no
    copy (started by an earlier version) or when a copy does not match its SHA-256 (a line says so:
    the folder's own files are then checked as they are).
    """
    index = storage.read_json(storage.join(path, LAST_GOOD_DIR, LAST_GOOD_INDEX))
    files = index.get("files") if index else None
    if not isinstance(files, dict) or not files:
        return []
    copies = {}
    for name, digest in files.items():
        data = storage.read_bytes(storage.join(path, LAST_GOOD_DIR, str(digest))) if _is_digest(str(digest)) else None
        if data is None or hashlib.sha256(data).hexdigest() != digest or "/" in name:
            return [f"the last good copy of Ray's saved state ({LAST_GOOD_DIR}/) is damaged at {name}: not used"]
        copies[name] = data
    lines, present = [], storage.entries(path)
    for name, data in copies.items():
        kind = next((p for p in SAVE_PATTERNS if fnmatch.fnmatch(name, p)), name)
        for newer in sorted(n for n in fnmatch.filter(present, kind) if n > name):
            aside = storage.join(path, LAST_GOOD_DIR, SET_ASIDE_DIR, newer)
            storage.write_bytes(aside, storage.read_bytes(storage.join(path, newer)) or b"")
            storage.remove(storage.join(path, newer))
            lines.append(f"{newer} is newer than the last good copy of Ray's saved state (a save without a copy: cut "
                         f"short, or of a driver that ran no step): set aside in {LAST_GOOD_DIR}/{SET_ASIDE_DIR}/")
        if storage.read_bytes(storage.join(path, name)) != data:
            storage.write_bytes(storage.join(path, name), data)
            lines.append(f"{name} restored from the last good copy of Ray's saved state (cut short or older: a driver "
                         "killed, or a storage that failed, while Ray wrote it)")
    return lines
