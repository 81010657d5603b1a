"""The alternating SSOT loop on the embedded digits task (CPU, seconds)."""
from __future__ import annotations

import pytest
import torch

from ssot import SSOTConfig, Trainer, method, run
from ssot.data.digits import TARGET_CLASSES, build_digits_task
from ssot.data.features import save_feature_cache
from ssot.errors import ConfigError
from ssot.models import find_resnet50_weights
from ssot.trainer import CHECK_EVERY, dataset_labels
from tests.fixtures import step_reference


def _params(module: torch.nn.Module) -> list[torch.Tensor]:
    return [p.detach().clone() for p in module.parameters()]


def _same(a: list[torch.Tensor], b: list[torch.Tensor]) -> bool:
    return all(torch.equal(x, y) for x, y in zip(a, b))


def _batch(task, n=32):
    xs = torch.stack([task.source[i][0] for i in range(n)])
    ys = torch.tensor([task.source[i][1] for i in range(n)])
    xt = torch.stack([task.target[i][0] for i in range(n)])
    return xs, ys, xt


def test_digits_task_is_partial_deterministic_and_shifted(digits_task):
    again = build_digits_task()
    assert torch.equal(digits_task.target.tensors[0], again.target.tensors[0])
    assert sorted(set(dataset_labels(digits_task.source).tolist())) == list(range(10))
    assert sorted(set(dataset_labels(digits_task.target).tolist())) == TARGET_CLASSES
    assert digits_task.outlier_classes == [5, 6, 7, 8, 9]
    assert digits_task.input_shape == (1, 16, 16)


def test_the_shift_costs_source_only_accuracy(digits_task):
    trainer = Trainer(SSOTConfig.for_task("digits"), digits_task)
    shifted = trainer.pretrain()["target_acc"]
    probs, labels = trainer.predict(build_digits_task(shifted=False).target_eval)
    in_domain = (probs.argmax(1) == labels).float().mean().item()
    assert in_domain > 0.9 and shifted < in_domain - 0.15


def test_g_step_leaves_f_and_eta_unchanged_and_feature_step_leaves_g_unchanged(digits_task):
    trainer = Trainer(SSOTConfig.for_task("digits"), digits_task)
    batch = trainer.forward_batch(*_batch(digits_task))
    f0, eta0, g0 = _params(trainer.f), _params(trainer.eta), _params(trainer.g)
    trainer.g_step(batch)
    assert _same(f0, _params(trainer.f)) and _same(eta0, _params(trainer.eta))
    assert not _same(g0, _params(trainer.g))
    g1 = _params(trainer.g)
    trainer.feature_step(batch)
    assert _same(g1, _params(trainer.g))
    assert not _same(f0, _params(trainer.f)) and not _same(eta0, _params(trainer.eta))


def test_g_step_increases_the_semi_dual_on_a_fixed_batch(digits_task):
    trainer = Trainer(SSOTConfig.for_task("digits", lr_g=1e-2), digits_task)
    with torch.no_grad():
        batch = trainer.forward_batch(*_batch(digits_task))
    values = [trainer.g_step(batch) for _ in range(30)]
    assert values[-1] > values[0]


def test_feature_step_gets_mask_gradients_only_when_asked(digits_task):
    for mask_grad in (True, False):
        trainer = Trainer(SSOTConfig.for_task("digits", mask_grad=mask_grad, lambda_ent=0.0), digits_task)
        batch = trainer.forward_batch(*_batch(digits_task))
        seen = []
        batch.pt.register_hook(seen.append)
        trainer.feature_step(batch)
        # with lambda_ent = 0 the target predictions receive gradient only through the mask
        assert (seen[0].abs().sum() > 0).item() == mask_grad


def test_ssot_default_config_beats_source_only_and_filters_outliers(digits_task):
    record = run(SSOTConfig.for_task("digits", seed=0), task=digits_task)
    assert record["status"] == "completed" and len(record["epochs"]) == 15
    final = record["epochs"][-1]
    assert final["target_acc"] > record["source_only_target_acc"] + 0.05
    assert final["outlier_mass"] < record["source_outlier_share"]
    assert final["outlier_mass"] < 0.1
    expected = {"epoch", "target_acc", "source_acc", "loss_total", "loss_ce", "loss_ot", "loss_ent", "ot_value",
                "outlier_mass", "n_pred_classes", "class_weights", "per_class_acc", "time_s"}
    assert expected <= set(final)
    assert set(final["per_class_acc"]) == {str(k) for k in TARGET_CLASSES}
    assert len(final["class_weights"]) == 10


def test_resuming_from_a_checkpoint_repeats_the_uninterrupted_run(digits_task):
    cfg = SSOTConfig.for_task("digits", epochs=3, pretrain_epochs=1, iters_per_epoch=5)
    full = Trainer(cfg, digits_task).fit()
    first = Trainer(cfg.replace(epochs=2), digits_task)
    first.fit()
    state = first.state_dict()
    resumed = Trainer(cfg, digits_task)
    resumed.load_state_dict(state)
    resumed.record["config"] = cfg.to_dict()
    record = resumed.fit()
    assert [e["epoch"] for e in record["epochs"]] == [1, 2, 3]
    for a, b in zip(full["epochs"], record["epochs"]):
        assert a["target_acc"] == b["target_acc"]
        assert a["loss_total"] == pytest.approx(b["loss_total"], rel=1e-6)
        assert a["dev"] == b["dev"]  # epoch 3's DEV warm-started from epoch 2's classifiers, saved in the checkpoint


def test_dev_every_records_dev_on_its_epochs_only_and_changes_nothing_else(digits_task):
    cfg = SSOTConfig.for_task("digits", epochs=5, pretrain_epochs=1, iters_per_epoch=4)
    every = Trainer(cfg, digits_task).fit()
    sparse = Trainer(cfg.replace(dev_every=2), digits_task).fit()
    assert [e["dev"] is not None for e in sparse["epochs"]] == [False, True, False, True, True]  # epochs 2, 4 and the last
    assert sparse["source_only"]["dev"] == every["source_only"]["dev"]  # the source-only evaluation computes it
    for a, b in zip(every["epochs"], sparse["epochs"]):
        assert {k: v for k, v in a.items() if k not in ("dev", "time_s")} == {k: v for k, v in b.items() if k not in ("dev", "time_s")}
        if b["dev"] is not None:  # from the classifiers of two epochs before, or cold: the same optimum
            assert b["dev"] == pytest.approx(a["dev"], rel=1e-5)
    assert sparse["target_pred"] == every["target_pred"]
    # a resumed run carries the classifiers over the epochs without DEV as an uninterrupted one does
    first = Trainer(cfg.replace(dev_every=2, epochs=2), digits_task)  # DEV at its last epoch, 2, as in the whole run
    first.fit()
    resumed = Trainer(cfg.replace(dev_every=2), digits_task)
    resumed.load_state_dict(first.state_dict())
    resumed.record["config"] = cfg.replace(dev_every=2).to_dict()
    assert [e["dev"] for e in resumed.fit()["epochs"]] == [e["dev"] for e in sparse["epochs"]]


def test_the_progress_bar_does_not_change_the_run(quick_config, digits_task):
    cfg = quick_config(iters_per_epoch=5)
    quiet = Trainer(cfg, digits_task, progress=False).fit()
    shown = Trainer(cfg, digits_task, progress=True).fit()
    assert quiet["source_only_target_acc"] == shown["source_only_target_acc"]
    assert quiet["epochs"][0]["loss_total"] == shown["epochs"][0]["loss_total"]


def test_divergence_is_recorded_with_its_reason(digits_task):
    record = run(SSOTConfig.for_task("digits", epochs=2, pretrain_epochs=1, lr=1e30), task=digits_task)
    assert record["status"] == "diverged"
    assert "non-finite" in record["reason"] and "epoch 1" in record["reason"]


@pytest.mark.parametrize("name", list(step_reference.RUNS))
def test_the_step_gives_the_numbers_of_the_step_that_read_every_loss_on_the_host(name, monkeypatch):
    """Per-epoch losses, OT value and accuracies of short digits runs, one per OT solver, against
    the same run with the step and epoch loop of before (ad4ae82: the mask computed twice, every
    loss read and checked on the host each iteration, Python sums; tests/fixtures/step_reference.py),
    both trained here, on this CPU: the same float32 operations in the same order on both sides, so
    the numbers are equal, not close (a reference recorded on another CPU differed by up to 8.5e-6)."""
    got = step_reference.run_values(name)
    monkeypatch.setattr(method, "train_epoch", step_reference.old_train_epoch)
    before = step_reference.run_values(name)
    assert len(got) == len(before) == 3
    assert got == before
def test_a_divergence_is_caught_at_the_next_check_naming_its_window(digits_task, monkeypatch):
    trainer = Trainer(SSOTConfig.for_task("digits", epochs=2, pretrain_epochs=1, iters_per_epoch=60, lr=1e30), digits_task)
    steps = []
    step = method.step  # the one step (ssot/method.py), which the epoch loop calls
    monkeypatch.setattr(method, "step", lambda *args: steps.append(1) or step(*args))
    record = trainer.fit()
    assert record["status"] == "diverged" and record["epochs"] == []
    assert record["reason"].startswith("non-finite loss_total (nan) at epoch 1, within iterations 1-25")
    assert len(steps) == CHECK_EVERY == 25  # stopped at the first check, not at the end of the 60 iterations


def test_a_divergence_in_pretraining_names_its_epoch_and_window(digits_task):
    trainer = Trainer(SSOTConfig.for_task("digits", epochs=1, pretrain_epochs=2, lr_pretrain=1e30), digits_task)
    n = trainer.batches.per_pass(trainer.source_train)
    record = trainer.fit()
    assert record["status"] == "diverged" and record["source_only"] is None
    assert record["reason"].startswith("non-finite pretraining loss") and "pretraining epoch 1" in record["reason"]
    assert f"within iterations 1-{min(n, CHECK_EVERY)}" in record["reason"]


@pytest.mark.parametrize("changes", [
    {"use_class_weights": False}, {"use_mask": False}, {"lambda_ent": 0.0}, {"eps": 0.0},
    {"g_steps": 3}, {"pt_refresh": 2}, {"precision": "bf16"}, {"mask_scale": 32.0},
])
def test_ablations_and_options_run(quick_config, digits_task, changes):
    cfg = quick_config(iters_per_epoch=4, **changes)
    record = run(cfg, task=digits_task)
    assert record["status"] == "completed"
    if changes.get("use_class_weights") is False:
        assert record["epochs"][-1]["class_weights"] == [1.0] * 10


def test_training_on_a_feature_cache(tmp_path, digits_task):
    xs, ys = digits_task.source.tensors
    xt, yt = digits_task.target.tensors
    path = tmp_path / "digits_features.pt"
    save_feature_cache(path, "digits", digits_task.class_names, digits_task.target_classes, (xs.flatten(1), ys), (xt.flatten(1), yt))
    cfg = SSOTConfig.for_task("digits", backbone="features", features_path=str(path), bottleneck_dims=(64,),
                              epochs=2, pretrain_epochs=2)
    record = run(cfg)
    assert record["status"] == "completed" and record["task"]["num_classes"] == 10
    with pytest.raises(ConfigError, match="features_path"):
        SSOTConfig.for_task("digits", features_path=str(path))


def test_resnet50_step_on_cpu_with_small_images():
    pytest.importorskip("torchvision")
    from torch.utils.data import TensorDataset

    from ssot.data.base import TaskData

    torch.manual_seed(0)
    x, y = torch.randn(8, 3, 32, 32), torch.tensor([0, 1, 2, 3, 0, 1, 2, 3])
    ds = TensorDataset(x, y)
    task = TaskData("A2W", ds, ds, ds, ds, ["a", "b", "c", "d"], [0, 1], (3, 32, 32))
    cfg = SSOTConfig.for_task("A2W", pretrained=False, batch_size=4, num_workers=0, device="cpu")
    trainer = Trainer(cfg, task)
    assert trainer.f.out_dim == 512 and trainer.g.net[0].out_features == 256
    losses = trainer.step(x[:4], y[:4], x[4:])
    assert all(v.dim() == 0 and torch.isfinite(v) for v in losses.values())


def test_missing_pretrained_weights_name_the_file_and_url(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCH_HOME", str(tmp_path))
    with pytest.raises(ConfigError, match="resnet50-11ad3fa6.pth.*download.pytorch.org") as info:
        find_resnet50_weights(None)
    assert "\n" not in str(info.value)
    with pytest.raises(ConfigError, match="does not exist"):
        find_resnet50_weights(str(tmp_path / "nope.pth"))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_resnet50_bf16_step_on_gpu():
    from torch.utils.data import TensorDataset

    from ssot.data.base import TaskData

    x, y = torch.randn(64, 3, 224, 224), torch.arange(64) % 12
    ds = TensorDataset(x, y)
    task = TaskData("P2I", ds, ds, ds, ds, [str(k) for k in range(12)], list(range(6)), (3, 224, 224))
    cfg = SSOTConfig.for_task("P2I", pretrained=False, precision="bf16", device="cuda", num_workers=0)
    trainer = Trainer(cfg, task)
    assert trainer.f.backbone.conv1.weight.is_contiguous(memory_format=torch.channels_last)
    losses = trainer.step(x[:32].cuda(), y[:32].cuda(), x[32:].cuda())
    assert all(v.is_cuda and v.dim() == 0 and torch.isfinite(v) for v in losses.values())
    xs, _ = next(trainer.batches.train(trainer.source_train, 0))
    assert xs.is_contiguous(memory_format=torch.channels_last)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_compiled_resnet50_step_on_gpu_gives_the_losses_of_the_eager_one():
    from torch.utils.data import TensorDataset

    from ssot.data.base import TaskData

    x, y = torch.randn(16, 3, 64, 64), torch.arange(16) % 12
    ds = TensorDataset(x, y)
    task = TaskData("P2I", ds, ds, ds, ds, [str(k) for k in range(12)], list(range(6)), (3, 64, 64))
    losses = {}
    for compiled in (False, True):
        torch.manual_seed(0)
        cfg = SSOTConfig.for_task("P2I", pretrained=False, device="cuda", num_workers=0, batch_size=8, compile=compiled,
                                  image_size=64, resize_size=64)
        trainer = Trainer(cfg, task)
        losses[compiled] = trainer.step(x[:8].cuda(), y[:8].cuda(), x[8:].cuda())
    for k, v in losses[False].items():
        assert float(losses[True][k]) == pytest.approx(float(v), rel=1e-2, abs=1e-3)
