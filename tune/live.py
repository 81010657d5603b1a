"""Live views of a running search: the tidy files after each finished trial.

``trials.csv`` and ``best_config.json`` (the best trial *so far*, under the best-trial rule of
:mod:`ssot.results.trials`) are rewritten atomically by :class:`LiveOutputs` each time a trial ends, while
``experiment.json`` says ``running``: a search of hours can be read (``analysis/``,
``tune/confirm.py`` refuses it until it finishes) as it goes. The final files are written when
the search ends (:func:`tune.outputs.write_outputs`).

The other live view of a search, its Optuna study in a database, is :mod:`tune.study`.

The search's other callbacks live here too: :class:`TrialLines` (one printed line per ended or
restarted trial) and :class:`DropEndedCheckpoints` (checkpoints removed once Ray's saved state no
longer needs them).
"""
from __future__ import annotations

import math
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pandas as pd
from ray import tune as ray_tune

from ssot.results import storage
from ssot.results.experiment import BEST_CONFIG_FILE, TRIALS_FILE, experiment_texts
from ssot.results.trials import COMPLETED, RUNNING
from tune import members
from tune.outputs import best_config, collect, trial_frame

class LiveOutputs(ray_tune.Callback):
    """Rewrite ``trials.csv`` and ``best_config.json`` atomically after each finished trial.

    Finished trials carry their final status; trials still running carry ``running`` and the
    epochs they reported. On a resumed search the rows of ``trials.csv`` written before are kept
    for the trials that report nothing new, and a trial resumed from its checkpoint keeps its
    earlier epochs.
    """

    def __init__(self, path: str, info: dict[str, Any]):
        self.path, self.info = path, info
        self.history: dict[str, list[dict[str, Any]]] = {}
        self.configs: dict[str, dict[str, Any]] = {}
        self.ended: dict[str, str | None] = {}  # trial id -> its error text (None: no error)
        self.previous: pd.DataFrame | None = None
        self.failed = False

    def setup(self, **info: Any) -> None:
        done = collect(self.path).trials if storage.exists(storage.join(self.path, TRIALS_FILE)) else None
        self.previous = done if done is not None and len(done) else None

    def on_trial_result(self, iteration: int, trials: list, trial: Any, result: dict, **info: Any) -> None:
        self.configs[trial.trial_id] = dict(trial.config)
        self.history.setdefault(trial.trial_id, []).append({k: v for k, v in result.items() if k != "config"})

    def on_trial_complete(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        self.configs[trial.trial_id], self.ended[trial.trial_id] = dict(trial.config), None
        self.write()

    def on_trial_error(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        self.configs[trial.trial_id] = dict(trial.config)
        self.ended[trial.trial_id] = last_error_line(trial)[0] or "errored (see the trial's error.txt)"
        self.write()

    def frame(self) -> pd.DataFrame:
        """The rows known now: :func:`tune.outputs.trial_frame` of ended trials (final status)
        and of running ones (status ``running``), merged with the rows written before."""
        def results(ended: bool) -> list[SimpleNamespace]:
            ids = [t for t in dict.fromkeys([*self.history, *self.ended]) if (t in self.ended) == ended]
            return [SimpleNamespace(config=self.configs.get(t), metrics={"trial_id": t}, path=t, error=self.ended.get(t),
                                    metrics_dataframe=pd.DataFrame(self.history.get(t, []))) for t in ids]

        parts = [trial_frame(results(ended), self.info, finished=ended) for ended in (True, False)]
        running = parts[1]["status"] == COMPLETED  # at the last epoch, but not ended yet
        parts[1].loc[running, "status"] = RUNNING
        new = pd.concat([p for p in parts if len(p)], ignore_index=True) if any(len(p) for p in parts) else parts[0]
        return _merge(self.previous, new)

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
    """The last line of an errored trial's traceback (None when unreadable) and the file's path."""
    path = trial.error_file or (f"{trial.local_path}/error.txt" if trial.local_path else None)
    try:
        lines = [line.strip() for line in Path(path).read_text().splitlines() if line.strip()] if path else []
    except OSError:
        lines = []
    return (lines[-1][:300] if lines else None), path


def _merge(previous: pd.DataFrame | None, new: pd.DataFrame) -> pd.DataFrame:
    """``new`` plus the rows of ``previous`` that it does not replace (see :class:`LiveOutputs`)."""
    if previous is None or not len(previous):
        return new
    if not len(new):
        return previous
    previous = previous.reindex(columns=new.columns)
    old = previous[~previous["trial_id"].isin(new["trial_id"])]
    cont = previous[previous["trial_id"].isin(new["trial_id"])]
    first = new.groupby("trial_id")["epoch"].min().fillna(math.inf)  # no epoch now (a trial restored at its end): keep all
    cont = cont[cont["epoch"] < cont["trial_id"].map(first)]
    last = new.groupby("trial_id").tail(1).set_index("trial_id")
    cont = cont.assign(status=cont["trial_id"].map(last["status"]), reason=cont["trial_id"].map(last["reason"]))
    merged = pd.concat([p for p in (old, cont, new) if len(p)], ignore_index=True)
    return merged.sort_values(["trial_id", "epoch"], kind="stable").reset_index(drop=True)


# ---------------------------------------------------------------------------- printed lines, checkpoints
class TrialLines(ray_tune.Callback):
    """One printed line per finished trial (Ray's own tables are ``--verbose 2``)."""

    def on_trial_complete(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        self._line(trials, trial, "")

    def on_trial_error(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        self._line(trials, trial, f" ERRORED: {_error_summary(trial)}")

    def on_trial_recover(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        print(f"trial {trial.trial_id} failed ({_error_summary(trial)}); restart {trial.num_failures} of at most "
              f"{trial.max_failures}, from its last checkpoint", flush=True)

    @staticmethod
    def _line(trials: list, trial: Any, suffix: str) -> None:
        done = sum(t.status in ("TERMINATED", "ERROR") for t in trials) + 1
        r, c = trial.last_result or {}, trial.config
        if members.is_population(c):
            entries = members.decode(r.get(members.MEMBERS_COLUMN))
            best = members.best_value(entries, "target_acc", "max", float("nan"))
            print(f"[{min(done, len(trials))}/{len(trials)}] population {trial.trial_id} ({len(c[members.MEMBERS_KEY])} members): "
                  f"epoch {r.get('epoch', 0)}, best target_acc {best:.4f} of the {len(entries)} member(s) that ran it{suffix}", flush=True)
            return
        acc = f"target_acc {r['target_acc']:.4f}" if "target_acc" in r else "no result"
        flag = " DIVERGED" if r.get("diverged") else suffix
        print(f"[{min(done, len(trials))}/{len(trials)}] trial {trial.trial_id}: epoch {r.get('epoch', 0)}, {acc}  "
              f"lambda_ot {c.get('lambda_ot', float('nan')):.3g} lambda_ent {c.get('lambda_ent', float('nan')):.3g} "
              f"eps {c.get('eps', float('nan')):.3g} width {c.get('potential_width')}{flag}", flush=True)


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
    finished trial from a checkpoint that was gone: the trial errored for good. Errored trials keep
    their latest checkpoint (``--resume`` continues them). Checked at most every :attr:`PERIOD_S`
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
                    below = math.inf  # a finished trial is never restored
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
