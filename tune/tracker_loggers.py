"""The experiment trackers' loggers: Ray Tune's MLflow and W&B callbacks, extended to record how
each trial ended (:mod:`tune.trackers` owns the trackers' names, settings and checks, and builds
these when a search starts: they import Ray).
"""
from __future__ import annotations

import os
from typing import Any

from ray.air.integrations.mlflow import MLflowLoggerCallback
from ray.air.integrations.wandb import WandbLoggerCallback

from tune.members import member_status
from tune.trackers import STATUS_TAG, wandb_dir

__all__ = ["MLflowLogger", "OfflineWandbLogger"]


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
        self.tags = {**(self.tags or {}), "trial_id": trial.trial_id}
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
