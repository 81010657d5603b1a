"""Live views of a running search: the tidy files after each ended trial, a progress line, and what Ray recorded.

``trials.csv`` and ``best_config.json`` (the best trial *so far*, under the best-trial rule of
:mod:`ssot.results.trials`) are rewritten atomically by :class:`LiveOutputs` each time a trial
ends, while ``experiment.json`` says ``running``: a search of hours can be read (``analysis/``,
``tune/confirm.py`` refuses it until it finishes) as it goes. The rows come from the trials'
results through :func:`tune.outputs.trial_frame`, the same code as the final files
(:func:`tune.outputs.write_outputs` of :func:`recorded`). A resumed search starts from what Ray
recorded of its earlier runs.

The other live view of a search, its Optuna study in a database, is :mod:`tune.optuna_study`.

The search's other callbacks live here too: :class:`TrialLines` (one printed line per ended or
restarted trial, with the progress against ``--num-samples``), :class:`DropEndedCheckpoints`
(checkpoints removed once Ray's saved state no longer needs them) and :class:`KeepLastGood` (a
verified copy of each save of Ray's state, :mod:`tune.state`).
"""
from __future__ import annotations

import logging
import math
import sys
import time
from typing import Any

import pandas as pd
from ray import tune as ray_tune

from ssot.results import storage
from ssot.results.experiment import BEST_CONFIG_FILE, EXPERIMENT_FILE, TRIALS_FILE, experiment_texts
from ssot.results.metrics import DEFAULT_METRIC
from ssot.results.metrics import metric as metric_spec
from tune import members
from tune.outputs import ENDED, TrialHistory, best_config, expected_configs, trial_frame


def recorded(path: str) -> list[TrialHistory]:
    """The trials Ray's saved state of the experiment at ``path`` holds, with the reports their
    saved state descends from (:func:`tune.state.trial_history`: the history in their latest
    checkpoint, or kept once they ended; else their ``result.json``, every driver's run) and how
    they ended; none when nothing ran."""
    from ray.tune import ExperimentAnalysis

    from tune import state

    quiet = logging.getLogger("ray.tune.analysis.experiment_analysis")
    level, quiet.level = quiet.level, logging.ERROR  # "Failed to fetch metrics": a trial with no result.json yet
    try:
        analysis = ExperimentAnalysis(path)
        frames = analysis.trial_dataframes
    except Exception:  # noqa: BLE001 - no state at all: nothing ran
        return []
    finally:
        quiet.setLevel(level)
    fs, folder = storage.filesystem(path)
    saved = {t.trial_id: t for t in state.saved_trials(fs, folder)}
    out = []
    for trial in analysis.trials:
        kept = state.trial_history(fs, folder, saved[trial.trial_id]) if trial.trial_id in saved else None
        frame = frames.get(trial.trial_id)
        results = kept if kept is not None else frame.to_dict("records") if frame is not None and len(frame) else []
        error = (last_error_line(trial)[0] or "errored (see the trial's error.txt)") if trial.status == "ERROR" else None
        out.append(TrialHistory(str(trial.trial_id), dict(trial.config), results, str(trial.status), error,
                                int(getattr(trial, "num_failures", 0) or 0)))
    return out


class LiveOutputs(ray_tune.Callback):
    """Rewrite ``trials.csv`` and ``best_config.json`` atomically after each ended trial.

    Ended trials carry their final status; trials still running carry ``running`` and the epochs
    they reported. A resumed search starts from the trials Ray restored, with everything they
    reported before (:func:`recorded`), so trials that report nothing new keep their rows and a
    trial resumed from its checkpoint keeps its earlier epochs.
    """

    def __init__(self, path: str, info: dict[str, Any]):
        self.path, self.info = path, info
        self.trials: dict[str, TrialHistory] = {}
        self.failed = False

    def setup(self, stop: Any = None, num_samples: int | None = None, total_num_samples: int | None = None,
              **info: Any) -> None:
        self.trials = {t.trial_id: t for t in recorded(self.path)}

    def _trial(self, trial: Any) -> TrialHistory:
        known = self.trials.get(trial.trial_id)
        if known is None:
            known = self.trials[trial.trial_id] = TrialHistory(str(trial.trial_id), dict(trial.config))
        return known

    def on_trial_result(self, iteration: int, trials: list, trial: Any, result: dict, **info: Any) -> None:
        known = self._trial(trial)
        known.status = "RUNNING"
        known.results.append({k: v for k, v in result.items() if k != "config"})

    def on_trial_complete(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        known = self._trial(trial)
        known.status, known.error = "TERMINATED", None
        self.write()

    def on_trial_error(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        known = self._trial(trial)
        known.status, known.error = "ERROR", last_error_line(trial)[0] or "errored (see the trial's error.txt)"
        self.write()

    def frame(self) -> pd.DataFrame:
        """The rows known now (:func:`tune.outputs.trial_frame`)."""
        return trial_frame(self.trials.values(), self.info)

    def write(self) -> None:
        """Write the files; a failure (e.g. a storage that is briefly unreachable) is printed
        once and never stops the search (its files are written again when it ends)."""
        try:
            frame = self.frame()
            best, _ = best_config(frame, self.info) if len(frame) else (None, None)
            texts = experiment_texts(self.info, frame, best.to_dict() if best else None)
            for name in (TRIALS_FILE, BEST_CONFIG_FILE):  # experiment.json stays 'running'
                if name in texts:
                    storage.write_text(storage.join(self.path, name), texts[name])
        except Exception as exc:  # noqa: BLE001 - a live view must not end a search of hours
            if not self.failed:
                print(f"warning: live {TRIALS_FILE} not written ({type(exc).__name__}: {exc}); "
                      "it is written when the search ends", file=sys.stderr, flush=True)
            self.failed = True


def last_error_line(trial: Any) -> tuple[str | None, str | None]:
    """The last line of an errored trial's traceback (None when unreadable) and the file's path:
    its ``error_file``, else ``error.txt`` in its folder (on the storage, for a trial of an
    earlier driver)."""
    candidates = [trial.error_file, f"{trial.local_path}/error.txt" if getattr(trial, "local_path", None) else None,
                  f"{trial.path}/error.txt" if getattr(trial, "path", None) else None]
    for path in [c for c in candidates if c]:
        try:
            text = storage.read_text(path)
        except (OSError, ValueError):
            continue
        if text is None:
            continue
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        return (lines[-1][:300] if lines else None), path
    return None, next((c for c in candidates if c), None)


# ---------------------------------------------------------------------------- printed lines, checkpoints
class TrialLines(ray_tune.Callback):
    """One printed line per ended trial: the progress against ``--num-samples`` (configs ended,
    elapsed time, an estimate of what is left), then the trial's lead member (module
    :mod:`tune.members`): its epoch, its value and its config (Ray's own tables are ``--verbose``).

    ``path`` is the experiment's folder: its ``experiment.json`` gives the configs asked for and
    the wall time of earlier runs (a resumed search counts on)."""

    def __init__(self, path: str):
        self.path = path
        self.total, self.metric, self.earlier, self.started = 0, DEFAULT_METRIC, 0.0, time.monotonic()

    def setup(self, stop: Any = None, num_samples: int | None = None, total_num_samples: int | None = None,
              **info: Any) -> None:
        meta = storage.read_json(storage.join(self.path, EXPERIMENT_FILE)) or {}
        self.total = expected_configs(meta) if meta else 0
        self.metric = str(meta.get("metric") or DEFAULT_METRIC)
        self.earlier, self.started = float(meta.get("elapsed_s") or 0.0), time.monotonic()

    def on_trial_complete(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        self._line(trials, trial, "")

    def on_trial_error(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        self._line(trials, trial, f" ERRORED: {_error_summary(trial)}")

    def on_trial_recover(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        print(f"trial {trial.trial_id} failed ({_error_summary(trial)}); restart {trial.num_failures} of at most "
              f"{trial.max_failures}, from its last checkpoint", flush=True)

    def progress(self, trials: list, trial: Any) -> str:
        """``[ended/asked configs, elapsed, left]``: configs of ended trials (``trial`` included)
        against the search's configs; what is left estimated from the time per config so far."""
        def configs(t: Any) -> int:
            return len(members.members_of(t.config, t.trial_id))

        ended = sum(configs(t) for t in trials if t.status in ENDED and t is not trial) + configs(trial)
        total = max(self.total, ended)
        elapsed = self.earlier + time.monotonic() - self.started
        left = f", ~{_clock(elapsed / ended * (total - ended))} left" if 0 < ended < total else ""
        return f"[{ended}/{total} configs, {_clock(elapsed)} elapsed{left}]"

    def _line(self, trials: list, trial: Any, suffix: str) -> None:
        result, listed = trial.last_result or {}, members.members_of(trial.config, trial.trial_id)
        entries = members.entries(result)
        found = members.lead(entries, self.metric, metric_spec(self.metric).direction or "max") if entries else None
        lead = found if found is not None else next(iter(listed))
        entry, config = entries.get(lead, {}), listed.get(lead, {})
        shown = dict.fromkeys((self.metric, "target_acc"))
        values = ", ".join(f"{m} {entry[m]:.4f}" for m in shown if members.finite(entry.get(m)) is not None) or "no result"
        who = f"trial {trial.trial_id}" + (f" ({len(listed)} configs, best {lead})" if len(listed) > 1 else "")
        flag = " DIVERGED" if entry.get("diverged") else suffix
        print(f"{self.progress(trials, trial)} {who}: epoch {entry.get('epoch', 0)}, {values}  "
              f"lambda_ot {config.get('lambda_ot', math.nan):.3g} lambda_ent {config.get('lambda_ent', math.nan):.3g} "
              f"eps {config.get('eps', math.nan):.3g} width {config.get('potential_width')}{flag}", flush=True)


def _clock(seconds: float) -> str:
    """``seconds`` as ``h:mm:ss`` (``m:ss`` under an hour)."""
    minutes, secs = divmod(int(round(seconds)), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


class DropEndedCheckpoints(ray_tune.Callback):
    """Remove the checkpoints that Ray's *saved* experiment state no longer needs, so that a search
    holds about one checkpoint per running trial instead of one per epoch and trial (local, shared
    or object storage).

    A checkpoint is removed only once the state saved in the experiment folder (what ``--resume``
    restores, :mod:`tune.state`) no longer refers to it: the checkpoints older than the one the
    saved state would restore a trial from, all of a trial the saved state records as finished
    (``TERMINATED``; its last one is kept with ``keep_last``), and those of a trial folder that
    neither the saved state nor the running search knows (a driver killed before it saved that
    trial: ``--resume`` runs it again). Removing them when a trial
    ends, before its end is saved, left a driver killed in between with a state that restored a
    finished trial from a checkpoint that was gone: the trial errored for good. Before a finished
    trial's checkpoints are removed, the history of its latest one is kept in its folder
    (:func:`tune.state.keep_history`: its rows of ``trials.csv``). Errored trials keep their latest
    checkpoint (``--resume`` continues them). Checked at most every :attr:`PERIOD_S`
    seconds, and once more when the search ends.
    """

    PERIOD_S = 30.0

    def __init__(self, keep_last: bool = False):
        self.keep_last = keep_last

    def on_step_end(self, iteration: int, trials: list, **info: Any) -> None:
        now = time.monotonic()
        if now - self.__dict__.get("_checked", float("-inf")) >= self.PERIOD_S:
            self._checked = now
            self.drop(trials)

    def on_experiment_end(self, trials: list, **info: Any) -> None:
        self.drop(trials)

    def drop(self, trials: list) -> None:
        """Remove the checkpoints of ``trials`` that the newest saved state does not need (best
        effort: in doubt, nothing is removed)."""
        import pyarrow.fs

        from tune import state

        done: dict[str, float] = self.__dict__.setdefault("_done", {})  # trial folder -> checkpoints below this index are gone
        try:
            fs, folder = trials[0].storage.storage_filesystem, trials[0].storage.experiment_fs_path
            saved = {t.folder: t for t in state.saved_trials(fs, folder)}
            live = {t.storage.trial_dir_name for t in trials}
            for entry in fs.get_file_info(pyarrow.fs.FileSelector(folder, allow_not_found=True)):
                kept = saved.get(entry.base_name)
                if kept is None:  # a trial of a driver killed before it saved its state: re-run, never restored
                    below = math.inf if entry.base_name.startswith("trial_") and entry.base_name not in live else 0
                elif kept.status == state.TERMINATED and not getattr(self, "keep_last", False):
                    # a finished trial is never restored; its history is kept in its folder first
                    below = math.inf if state.keep_history(fs, folder, kept) else 0
                else:  # never the one it would be restored from, nor newer ones
                    below = kept.checkpoint if kept.checkpoint is not None else 0
                if entry.type != pyarrow.fs.FileType.Directory or below <= done.get(entry.base_name, 0):
                    continue
                for inner in fs.get_file_info(pyarrow.fs.FileSelector(entry.path, allow_not_found=True)):
                    found = state.CHECKPOINT_DIR.fullmatch(inner.base_name)
                    if inner.type == pyarrow.fs.FileType.Directory and found and int(found.group(1)) < below:
                        fs.delete_dir(inner.path)
                done[entry.base_name] = below
        except (OSError, ValueError, AttributeError, IndexError):  # a checkpoint left behind costs only space
            pass


def _error_summary(trial: Any) -> str:
    """The last line of a trial's error and where its full traceback is."""
    line, path = last_error_line(trial)
    return f"{line[:200] if line else 'see its log'} (traceback: {path})"


class KeepLastGood(ray_tune.Callback):
    """Keep a verified copy of each save of Ray's experiment state in the experiment folder
    ``path`` (:class:`tune.state.LastGood`), so that a driver killed while Ray copies its state
    files leaves a search that ``--resume`` continues (:func:`tune.state.restore_last_good`).

    Ray gives a callback no hook after a save, but asks every callback for its state
    (:meth:`get_state`) while it saves, after the save's files are written into the driver's
    staging folder and before its background copy to the experiment folder starts: the copy is
    taken then, from that folder, which the trials name. It returns no state (Ray writes no
    callback file for it). The trials are Ray's own list, handed to :meth:`on_step_begin`, which
    holds the trials of a save made later in the step. A save before any step (a resumed driver
    whose every trial had ended saves once, at its end, without a step) or without trials is not
    kept: it holds what the copy holds, or nothing to restore. A copy that fails is named once on
    stderr; when the save could not be checked or read, the index is removed and ``--resume``
    reads Ray's own files; when the storage failed (an ``OSError``: a full disk, a read-only
    mount), which cuts Ray's own copy of that save short too, the previous copy stays.
    """

    def __init__(self, path: str):
        self.path = path

    def __getstate__(self) -> dict[str, Any]:
        return {"path": self.path}  # what a driver learns while it runs is not pickled with the Tuner

    def on_step_begin(self, iteration: int, trials: list, **info: Any) -> None:
        self._trials = trials

    def get_state(self) -> dict | None:
        from tune import state

        trials = self.__dict__.get("_trials") or []
        if not trials:
            return None
        keeper = self.__dict__.setdefault("_keeper", state.LastGood(self.path))
        try:
            keeper.keep(state.save_files(trials[0].storage.experiment_driver_staging_path))
        except (OSError, ValueError, AttributeError) as exc:
            if not isinstance(exc, OSError):
                # this save could not be checked or read, but Ray's own files of it may be whole
                # and newer than the copy: --resume reads them. A storage that fails (a full disk,
                # a read-only mount) fails Ray's own copy of the save too: the previous copy stays
                # the one --resume restores.
                keeper.forget()
            if not self.__dict__.get("_warned"):
                print(f"warning: the last good copy of Ray's saved state was not written ({type(exc).__name__}: "
                      f"{' '.join(str(exc).split())[:200]}); a driver killed while Ray writes its state may leave a "
                      "search that cannot be resumed", file=sys.stderr, flush=True)
            self._warned = True
        return None
