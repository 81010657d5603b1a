"""`tune/trial.py` (the trainable): task data reused between trials of one worker, safe loads."""
from __future__ import annotations

import io
from pathlib import Path

import pytest
import torch

from ssot.config import SSOTConfig
from ssot.trainer import Trainer

trainable = pytest.importorskip("tune.trial")


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


class _Planted:
    """Unpickling it creates the marker file: what a planted checkpoint or model could run."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


def _planted(marker) -> bytes:
    buffer = io.BytesIO()
    torch.save({"f": _Planted(marker), "source_only": {}}, buffer)
    return buffer.getvalue()


def test_a_planted_shared_pretrained_model_is_refused_before_ray_starts_and_never_unpickled(tmp_path):
    from ssot.errors import SSOTError
    from tune.experiment import run_search
    from tune.options import SearchOptions
    from tune.trial import pretrained_path

    marker = tmp_path / "code-ran"
    from tune.options import base_config

    options = SearchOptions(task="digits", num_samples=1, base={"epochs": 1, "pretrain_epochs": 1, "iters_per_epoch": 2},
                            storage_path=str(tmp_path / "runs"), name="exp", verbose=0)
    planted = Path(pretrained_path(str(tmp_path / "runs" / "exp" / "_pretrained"), base_config(options)))
    planted.parent.mkdir(parents=True)
    planted.write_bytes(_planted(marker))
    with pytest.raises(SSOTError, match=r"The shared pretrained model .*pretrained-\w+\.pt cannot be loaded safely .* delete it"):
        run_search(options, num_cpus=1)
    assert not marker.exists() and not (tmp_path / "runs" / "exp" / "digits").exists()


def test_checkpoints_load_without_unpickling_objects(tmp_path, quick_config):
    from ssot.errors import SSOTError
    from ssot.trainer import Trainer
    from tune.trial import load_state

    marker = tmp_path / "code-ran"
    with pytest.raises(SSOTError, match="the trial's checkpoint X cannot be loaded safely"):
        load_state(_planted(marker), "the trial's checkpoint X")
    assert not marker.exists()
    trainer = Trainer(quick_config(iters_per_epoch=2))
    trainer.pretrain()
    trainer.adapt_epoch()
    for state in (trainer.state_dict(), trainer.pretrained_state()):  # tensors and plain types only
        buffer = io.BytesIO()
        torch.save(state, buffer)
        assert load_state(buffer.getvalue(), "a state").keys() == state.keys()
