"""Live views of a running search: the tidy files after each finished trial.

``trials.csv`` and ``best_config.json`` (the best trial *so far*, under the best-trial rule of
:mod:`ssot.results.trials`) are rewritten atomically by :class:`LiveOutputs` each time a trial ends, while
``experiment.json`` says ``running``: a search of hours can be read (``analysis/``,
``tune/confirm.py`` refuses it until it finishes) as it goes. The final files are written when
the search ends (:func:`tune.outputs.write_outputs`).

The other live view of a search, its Optuna study in a database, is :mod:`tune.study`.

The search's other callbacks live here too: :class:`TrialLines` (one printed line per ended or
restarted trial) and :class:`DropEndedCheckpoints` (checkpoints of ended trials removed).
"""
from __future__ import annotations

import sys
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
                    storage.write_text_atomic(storage.join(self.path, name), texts[name])
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
    first = new.groupby("trial_id")["epoch"].min()
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
    """Remove the checkpoints of a trial that ended (completed, early-stopped, diverged): only
    running (and errored, which ``--resume`` continues) trials keep theirs, so a search holds
    about one checkpoint per slot instead of one per trial. Local, shared or object storage."""

    def on_trial_complete(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        import pyarrow.fs

        try:
            fs, folder = trial.storage.storage_filesystem, trial.storage.trial_fs_path
            for entry in fs.get_file_info(pyarrow.fs.FileSelector(folder, allow_not_found=True)):
                if entry.type == pyarrow.fs.FileType.Directory and entry.base_name.startswith("checkpoint_"):
                    fs.delete_dir(entry.path)
        except (OSError, AttributeError):  # best effort: a checkpoint left behind costs only space
            pass


def _error_summary(trial: Any) -> str:
    """The last line of a trial's error and where its full traceback is."""
    line, path = last_error_line(trial)
    return f"{line[:200] if line else 'see its log'} (traceback: {path})"
