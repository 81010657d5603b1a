"""`tune/trainable.py`: task data reused between trials of one worker."""
from __future__ import annotations

import pytest
import torch

from ssot.config import SSOTConfig
from ssot.trainer import Trainer

trainable = pytest.importorskip("tune.trainable")


def test_task_data_is_reused_only_for_the_same_data_fields():
    a = SSOTConfig.for_task("digits", lambda_ot=0.1, seed=1)
    b = a.replace(lambda_ot=5.0, seed=2)  # another trial of the same search
    task = trainable.task_of(a)
    assert trainable.task_of(b) is task
    other = trainable.task_of(a.replace(features_path=None, image_size=200))  # a data field differs
    assert other is not task


def test_a_trial_on_reused_task_data_starts_exactly_like_a_fresh_one():
    cfg = SSOTConfig.for_task("digits", seed=3)
    task = trainable.task_of(cfg)
    fresh = Trainer(cfg)
    rng_fresh = torch.get_rng_state()
    reused = Trainer(cfg, task)
    assert torch.equal(torch.get_rng_state(), rng_fresh)  # the training that follows draws the same numbers
    for x, y in zip(fresh.f.state_dict().values(), reused.f.state_dict().values()):
        assert torch.equal(x, y)
    assert torch.equal(fresh.g.net[0].weight, reused.g.net[0].weight)
