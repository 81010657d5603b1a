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
  :class:`tune.live.DropEndedCheckpoints` deletes only the others.
"""
from __future__ import annotations

import fnmatch
import json
import pickletools
import re
from dataclasses import dataclass
from typing import Any

import pyarrow.fs

from ssot.errors import SSOTError

TUNER_FILE = "tuner.pkl"
#: The file of a checkpoint folder rebuilt for a trial that had ended (:func:`repair_checkpoints`).
ENDED_FILE = "ended.json"
#: A trial's state in its checkpoint folder: every member's (``tune/trial.py`` writes it).
STATE_FILE = "trial.pt"
STATE_PATTERN, SEARCHER_PATTERN = "experiment_state-*.json", "searcher-state-*.pkl"
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
    trials = []
    try:
        state = json.loads(_read(fs, state_file))
        for trial_json, metadata_json in state["trial_data"]:
            trial, metadata = json.loads(trial_json), json.loads(metadata_json)
            trials.append(SavedTrial(str(trial["trial_id"]), str(trial["status"]), str(trial["relative_logdir"]),
                                     trial["config"] if isinstance(trial.get("config"), dict) else {},
                                     metadata.get("last_result") or {}, _checkpoint_index(metadata)))
    except (ValueError, KeyError, TypeError, AttributeError) as exc:  # JSONDecodeError is a ValueError
        raise ValueError(f"{state_file.rsplit('/', 1)[-1]} is truncated or not Ray's ({type(exc).__name__}: "
                         f"{' '.join(str(exc).split())[:120]})") from None
    return trials


def check_resumable(fs: Any, path: str, shown: str, max_epochs: int, expected_trials: int) -> bool:
    """Whether the experiment at ``path`` has a Ray state to restore; refuse one that cannot be.

    No state at all (the driver stopped before Ray saved anything) is False: the search starts
    anew with the settings of ``experiment.json``. ``shown`` is the experiment's path as the user
    knows it; ``max_epochs`` and ``expected_trials`` come from ``experiment.json``.

    Raises
    ------
    CorruptStateError
        When ``tuner.pkl``, the newest experiment state or searcher state is missing while others
        exist, truncated or corrupt, or when the saved trials do not match ``experiment.json``
        (more trials than it asks for, or trials of another number of epochs).
    """
    names = set(_names(fs, path))
    states = fnmatch.filter(names, STATE_PATTERN)
    trial_folders = [n for n in names if n.startswith("trial_")]
    if TUNER_FILE not in names and not states and not trial_folders:
        return False

    def refused(why: str) -> CorruptStateError:
        return CorruptStateError(f"Ray's state of experiment {shown} cannot be resumed: {why}. Nothing was run; its results "
                                 "so far stay in trials.csv: start a new search with another --name.")

    try:
        if TUNER_FILE not in names:
            raise ValueError(f"{TUNER_FILE} is missing")
        for pickled in (f"{path}/{TUNER_FILE}", newest(fs, path, SEARCHER_PATTERN)):
            if pickled is not None:
                try:
                    _pickle_strings(_read(fs, pickled))
                except ValueError as exc:
                    raise ValueError(f"{pickled.rsplit('/', 1)[-1]} is truncated or not a pickle ({exc})") from None
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
