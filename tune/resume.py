"""What ``--resume`` checks before anything runs, and what exists in an experiment folder.

A search continues exactly the experiment it started: :func:`check_same_settings` refuses flags
that ask for another one; :func:`resumed` reads ``experiment.json`` (what continues from there is
the record's: :meth:`tune.record.Record.repair`). :func:`recorded` tells an experiment from a
folder that holds nothing of one (a driver killed in its first seconds leaves only its lock: that
name is free again).
"""
from __future__ import annotations

import json
from typing import Any

from ssot.config import RUNTIME_FIELDS
from ssot.errors import SSOTError
from ssot.results import storage
from ssot.results.experiment import EXPERIMENT_FILE, FINISHED
from ssot.results.lock import LOCK_FILE
from ssot.results.trials import ERRORED
from tune.members import TRIAL_FORMAT
from tune.outputs import SearchOutcome, collect

#: The settings of experiment.json that a resumed search keeps, with the flags that set them.
RESUMED_SETTINGS = {"max_epochs": "--epochs", "num_samples": "--num-samples", "search": "--search", "metric": "--metric",
                    "space": "the space (--lambda-ot-range, --widths, ...)", "early_stop": "--no-early-stop",
                    "grace_period": "--grace-period", "reduction_factor": "--reduction-factor", "population": "--population"}


def recorded(path: str) -> bool:
    """Whether the folder ``path`` holds an experiment: it exists and holds anything but a search
    lock (an empty folder made by the user counts, so it is never taken over silently; a folder
    holding only the lock of a driver killed before it wrote ``experiment.json`` does not)."""
    if not storage.exists(path):
        return False
    return set(storage.entries(path)) != {LOCK_FILE}


def check_same_settings(recorded: dict[str, Any], wanted: dict[str, Any], path: str) -> None:
    """Refuse a ``--resume`` whose flags ask for another experiment than the one recorded in
    ``experiment.json`` (the record continues the recorded one and would ignore them silently).

    Runtime fields (:data:`ssot.config.RUNTIME_FIELDS`: device, data root, loader workers...) may
    differ; settings that an older ``experiment.json`` lacks are not compared.
    """
    differ = [f"{flag} {_shown(wanted[key])} (the experiment's: {_shown(recorded[key])})"
              for key, flag in RESUMED_SETTINGS.items() if key in recorded and recorded[key] != _json(wanted[key])]
    sources, asked = ([s["path"] for s in info.get("warm_start") or []] for info in (recorded, wanted))
    if sources != asked:
        differ.append(f"--warm-start {' '.join(asked) or '(none)'} (the experiment's: {' '.join(sources) or 'none'})")
    old, new = recorded.get("base_config") or {}, wanted["base_config"]
    differ += [f"config field {k} {_shown(new[k])} (the experiment's: {_shown(old[k])})" for k in new
               if k in old and k not in RUNTIME_FIELDS and k != "epochs" and old[k] != _json(new[k])]
    if differ:
        raise SSOTError(f"--resume continues experiment {path} as it was started, but this command asks for "
                        f"{'; '.join(differ)}. Rerun with the flags it was started with (its experiment.json), or start "
                        "a new search with another --name.")


def _json(value: Any) -> Any:
    return json.loads(json.dumps(value))


def _shown(value: Any) -> str:
    return json.dumps(value) if isinstance(value, (dict, list)) else str(value)


def resumed(path: str, wanted: dict[str, Any]) -> dict[str, Any] | SearchOutcome:
    """The checks of ``--resume``, before Ray starts: ``experiment.json`` readable, the same settings
    (:func:`check_same_settings`), a search of this version. Returns the recorded
    ``experiment.json``, or the outcome of a finished search."""
    info = storage.read_json(storage.join(path, EXPERIMENT_FILE))
    if info is None:
        raise SSOTError(f"--resume: {storage.join(path, EXPERIMENT_FILE)} is missing or not valid JSON, so the experiment "
                        "cannot be resumed; start a new search with another --name.")
    check_same_settings(info, wanted, path)
    if info.get("status") == FINISHED:
        done = collect(path)  # older experiments were marked finished with errored trials in them
        if done.trials.empty or not (done.trials["status"] == ERRORED).any():
            print(f"{info['task']}: experiment {path} already finished; nothing to resume.")
            return done
    if info.get("trial_format") != TRIAL_FORMAT:
        raise SSOTError(f"--resume: experiment {path} was started by an earlier version of the search, whose record is "
                        "Ray's saved state, so it cannot be continued; its results so far stay in trials.csv. Start a new "
                        "search with another --name.")
    return info
