"""What a running search prints: a line per ended trial with the progress against ``--num-samples``.

:class:`TrialLines` is a Ray Tune callback; :func:`last_error_line` reads an errored trial's
traceback. The search's live files (``trials.csv`` and ``best_config.json``, the best trial *so
far*, rewritten atomically after each ended trial while ``experiment.json`` says ``running``) are
written by its record (:meth:`tune.record.Record.write_live`), and its Optuna study is the record
itself (:mod:`tune.record`: watch it with optuna-dashboard).
"""
from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

from ray import tune as ray_tune

from ssot.results import numbers, storage
from ssot.results.experiment import EXPERIMENT_FILE
from ssot.results.metrics import DEFAULT_METRIC
from ssot.results.metrics import metric as metric_spec
from tune import members
from tune.outputs import expected_configs


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


class TrialLines(ray_tune.Callback):
    """One printed line per ended trial: the progress against ``--num-samples`` (configs ended,
    elapsed time, an estimate of what is left), then the trial's lead member (module
    :mod:`tune.members`): its epoch, its value and its config (Ray's own tables are ``--verbose``).

    ``path`` is the experiment's folder: its ``experiment.json`` gives the configs asked for and
    the wall time of earlier runs (a resumed search counts on); ``ended`` counts the configs that
    ended, in this run and before (:meth:`tune.record.Record.configs_ended`)."""

    def __init__(self, path: str, ended: Callable[[], int]):
        self.path, self.ended = path, ended
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
        print(f"trial {trial.config.get('_unit', trial.trial_id)} failed ({_error_summary(trial)}); restart {trial.num_failures} of at most "
              f"{trial.max_failures}, from its last checkpoint", flush=True)

    def progress(self) -> str:
        """``[ended/asked configs, elapsed, left]``: configs that ended against the search's
        configs; what is left estimated from the time per config so far."""
        ended = self.ended()
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
        values = ", ".join(f"{m} {entry[m]:.4f}" for m in shown if numbers.finite(entry.get(m)) is not None) or "no result"
        who = f"trial {trial.config.get('_unit', trial.trial_id)}" + (f" ({len(listed)} configs, best {lead})" if len(listed) > 1 else "")
        flag = " DIVERGED" if entry.get("diverged") else suffix
        print(f"{self.progress()} {who}: epoch {entry.get('epoch', 0)}, {values}  "
              f"lambda_ot {config.get('lambda_ot', math.nan):.3g} lambda_ent {config.get('lambda_ent', math.nan):.3g} "
              f"eps {config.get('eps', math.nan):.3g} width {config.get('potential_width')}{flag}", flush=True)


def _clock(seconds: float) -> str:
    """``seconds`` as ``h:mm:ss`` (``m:ss`` under an hour)."""
    minutes, secs = divmod(int(round(seconds)), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def _error_summary(trial: Any) -> str:
    """The last line of a trial's error and where its full traceback is."""
    line, path = last_error_line(trial)
    return f"{line[:200] if line else 'see its log'} (traceback: {path})"
