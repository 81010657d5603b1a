"""The experiment trackers' Ray Tune callbacks (:func:`tracker_callbacks`): Ray's MLflow and W&B
callbacks extended to record how each trial ended, Ray's TensorBoard callback. :mod:`tune.trackers`
owns the trackers' names, packages, settings and checks, without Ray; this module imports Ray and
is imported when a search starts.
"""
from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from ray.air.integrations.mlflow import MLflowLoggerCallback
from ray.air.integrations.wandb import WandbLoggerCallback

from tune.members import member_status
from tune.record import study_name
from tune.trackers import STATUS_TAG, check_trackers, mlflow_uri, wandb_dir

__all__ = ["tracker_callbacks", "MLflowLogger", "OfflineWandbLogger"]


def tracker_callbacks(names: Sequence[str], name: str, task: str, max_epochs: int) -> list[Any]:
    """Ray Tune callbacks logging one task's search ``name`` to each tracker in ``names`` (checked first)."""
    names = list(dict.fromkeys(names))
    check_trackers(names)
    callbacks: list[Any] = []
    if "mlflow" in names:
        callbacks.append(MLflowLogger(max_epochs, tracking_uri=mlflow_uri(), experiment_name=study_name(name, task),
                                      tags={"task": task}))
    if "tensorboard" in names:
        from ray.tune.logger import TBXLoggerCallback

        callbacks.append(TBXLoggerCallback())
    if "wandb-offline" in names:
        callbacks.append(OfflineWandbLogger(max_epochs, project=name, group=task))
    return callbacks


def _ended(trial: Any, failed: bool, max_epochs: int) -> str:
    """The trial's status in ``trials.csv`` (:func:`tune.members.member_status`) from its last
    result's lead entry (its only member's, in a search of one config per trial)."""
    last = dict(trial.last_result or {})
    return member_status([last] if last else [], "failed" if failed else None, max_epochs, True)[0]


class MLflowLogger(MLflowLoggerCallback):
    """Ray's MLflow callback; each run also tagged with its trial id and, at the end, its status."""

    def __init__(self, max_epochs: int, **kwargs: Any):
        super().__init__(**kwargs)
        self.max_epochs = max_epochs

    def log_trial_start(self, trial: Any) -> None:
        self.tags = {**(self.tags or {}), "trial_id": trial.config.get("_unit", trial.trial_id)}  # its id in trials.csv
        super().log_trial_start(trial)

    def log_trial_end(self, trial: Any, failed: bool = False) -> None:
        from mlflow import MlflowClient

        MlflowClient(self.tracking_uri).set_tag(self._trial_runs[trial], STATUS_TAG, _ended(trial, failed, self.max_epochs))
        super().log_trial_end(trial, failed)


class OfflineWandbLogger(WandbLoggerCallback):
    """Ray's W&B callback in offline mode (no account, no network); the trial's status in its config."""

    def __init__(self, max_epochs: int, **kwargs: Any):
        super().__init__(mode="offline", dir=wandb_dir(), **kwargs)
        self.max_epochs = max_epochs

    def setup(self, *args: Any, **kwargs: Any) -> None:
        previous = os.environ.get("WANDB_MODE")
        os.environ["WANDB_MODE"] = "offline"  # Ray asks for an API key unless W&B is offline
        try:
            super().setup(*args, **kwargs)
        finally:
            if previous is None:
                os.environ.pop("WANDB_MODE")
            else:
                os.environ["WANDB_MODE"] = previous

    def log_trial_end(self, trial: Any, failed: bool = False) -> None:
        # a config update without metrics, the run's last entry (a trial that reported nothing gets its run here)
        self.log_trial_result(0, trial, {"config": {STATUS_TAG: _ended(trial, failed, self.max_epochs)}})
        super().log_trial_end(trial, failed)
