"""`python -m ssot.features`: a cache of a frozen backbone, and runs on it."""
from __future__ import annotations

import json

import pytest
import torch

from ssot.config import SSOTConfig
from ssot.data.benchmarks import build_benchmark_task
from ssot.data.features import FeatureViews, load_feature_task, read_feature_cache
from ssot.errors import DataError
from ssot.features import main, weights_checksum
from ssot.models import build_backbone
from ssot.trainer import Trainer
from tests.fixtures.images import make_office31

SMALL = ["--no-pretrained", "--image-size", "32", "--resize-size", "36", "--device", "cpu", "--eval-batch-size", "16",
         "--num-workers", "0", "--quiet"]


@pytest.fixture(scope="module")
def a2w_cache(tmp_path_factory):
    """A cache of the untrained (seeded) ResNet-50 of A2W, two augmented views."""
    tmp = tmp_path_factory.mktemp("features")
    root = make_office31(tmp / "data", per_class=1)
    out = tmp / "a2w.pt"
    assert main(["--task", "A2W", "--data-root", str(root), *SMALL, "--views", "2", "--encoder", "untrained", "--out", str(out)]) == 0
    return root, out


@pytest.fixture(scope="module")
def digits_cache(tmp_path_factory):
    """A cache of the source-pretrained digits CNN (the default encoder), one pretraining epoch."""
    out = tmp_path_factory.mktemp("digits-features") / "digits.pt"
    assert main(["--task", "digits", "--pretrain-epochs", "1", "--device", "cpu", "--quiet", "--out", str(out)]) == 0
    return out


def test_cache_holds_the_frozen_backbones_eval_features_and_its_provenance(a2w_cache):
    root, out = a2w_cache
    blob = read_feature_cache(out)
    assert blob["format"] == 2 and blob["task"] == "A2W" and blob["backbone"] == "resnet50" and blob["encoder"] == "untrained"
    assert blob["transform"]["image_size"] == 32 and blob["transform"]["views"] == 2
    # an image task encodes its decoded-image cache by default (prepared on first use under the data root)
    assert "A2W-36.ssotimg" in blob["transform"]["eval"] and (root / "decoded" / "A2W-36.ssotimg").is_file()
    assert "centre crop 32" in blob["transform"]["eval"] and "random resized crop + flip" in blob["transform"]["train"]
    assert blob["source"]["features"].shape == (31, 2048) and blob["target"]["features"].shape == (10, 2048)
    assert blob["source_views"].shape == (2, 31, 2048) and blob["target_views"].shape == (2, 10, 2048)
    # reference: the same seeded backbone run by hand, in float64, on the JPEG path's eval transform (for
    # these square images the cache's square resize and the JPEG path's resize of the shorter side agree)
    cfg = SSOTConfig.for_task("A2W", pretrained=False, image_size=32, resize_size=36, data_root=str(root))
    torch.manual_seed(cfg.seed)
    net, _ = build_backbone(cfg)
    assert weights_checksum(net) == blob["weights_sha256"]
    net = net.double().eval()
    task = build_benchmark_task("A2W", root, image_size=32, resize_size=36)
    x = torch.stack([task.target_eval[i][0] for i in range(3)]).double()
    with torch.no_grad():
        ref = net(x).float()
    torch.testing.assert_close(blob["target"]["features"][:3], ref, rtol=1e-4, atol=1e-4)
    assert blob["target"]["labels"].tolist() == task.target_eval.targets
    # augmented views differ from the eval view (random crops), but have the same labels
    assert not torch.allclose(blob["source_views"][0], blob["source"]["features"])


def test_default_cache_encodes_with_the_source_pretrained_backbone_of_the_search(digits_cache):
    """The default encoder is the backbone after Trainer.pretrain of the same config and seed: the
    source-only model every trial of a search shares."""
    blob = read_feature_cache(digits_cache)
    cfg = SSOTConfig.for_task("digits", pretrain_epochs=1, device="cpu")
    trainer = Trainer(cfg)
    trainer.pretrain()
    assert blob["encoder"] == "pretrained" and blob["seed"] == 0 and blob["backbone"] == "digits_cnn"
    assert blob["pretrain_key"] == {k: getattr(cfg, k) for k in Trainer.PRETRAIN_FIELDS}
    assert blob["source_only_target_acc"] == trainer.record["source_only_target_acc"]
    assert weights_checksum(trainer.f.backbone) == blob["weights_sha256"]
    net = trainer.f.backbone.double().eval()
    x = torch.stack([trainer.task.source_eval[i][0] for i in range(16)]).double()
    with torch.no_grad():
        ref = net(x).float()
    torch.testing.assert_close(blob["source"]["features"][:16], ref, rtol=1e-4, atol=1e-4)


def test_encoder_stages_of_older_caches_are_inferred():
    from ssot.data.encoder_stages import encoder_stage

    assert encoder_stage({"backbone": "digits_cnn", "pretrained": True}) == "untrained"  # the digits CNN was never pretrained
    assert encoder_stage({"backbone": "resnet50", "pretrained": True}) == "imagenet"
    assert encoder_stage({"backbone": "resnet50", "pretrained": False}) == "untrained"
    assert encoder_stage({"task": "digits"}) == "unknown"  # format 1 or user-made features: accepted
    assert encoder_stage({"backbone": "digits_cnn", "encoder": "pretrained"}) == "pretrained"


def test_training_and_search_on_an_untrained_cache_are_refused_and_the_printed_command_works(a2w_cache, digits_cache, tmp_path,
                                                                                            capsys):
    from ssot.train import main as train_main
    from tune.search import main as search_main

    _, untrained = a2w_cache
    quick = ["--epochs", "1", "--pretrain-epochs", "1", "--iters-per-epoch", "2", "--batch-size", "8", "--device", "cpu", "--quiet"]
    capsys.readouterr()
    assert train_main(["--task", "A2W", "--features", str(untrained), *quick]) == 2
    assert search_main(["--task", "A2W", "--features", str(untrained), "--storage-path", str(tmp_path / "runs")]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2 and all("encoded by an untrained resnet50" in e and "python -m ssot.features --task A2W" in e for e in err)
    assert not (tmp_path / "runs").exists()
    # what `python -m ssot.features` prints is true: --features alone trains on the cache
    assert train_main(["--task", "digits", "--features", str(digits_cache), *quick, "--out", str(tmp_path / "run.json")]) == 0
    record = json.loads((tmp_path / "run.json").read_text())
    assert record["config"]["backbone"] == "features" and record["status"] == "completed"


def test_training_set_draws_views_and_evaluation_uses_eval_features(a2w_cache):
    _, out = a2w_cache
    task = load_feature_task(out, "A2W", backbone="resnet50", untrained_ok=True)
    assert isinstance(task.source, FeatureViews) and task.input_shape == (2048,)
    views = read_feature_cache(out)["source_views"]
    torch.manual_seed(0)
    drawn = torch.stack([task.source[0][0] for _ in range(40)])
    hits = {int(torch.isclose(views[:, 0], d).all(1).nonzero()[0]) for d in drawn}
    assert hits == {0, 1}  # every draw is one of the two views, and both occur
    assert torch.equal(task.source_eval[0][0], read_feature_cache(out)["source"]["features"][0])


def test_other_task_or_backbone_and_existing_out_are_refused_in_one_line(a2w_cache, tmp_path, capsys):
    root, out = a2w_cache
    with pytest.raises(DataError, match="holds task 'A2W', not 'D2W'"):
        load_feature_task(out, "D2W")
    with pytest.raises(DataError, match="built with backbone 'resnet50', not 'digits_cnn'"):
        load_feature_task(out, "A2W", backbone="digits_cnn")
    before = out.read_bytes()
    assert main(["--task", "A2W", "--data-root", str(root), *SMALL, "--out", str(out)]) == 2
    assert out.read_bytes() == before
    assert main(["--task", "A2W", "--data-root", str(tmp_path / "none"), *SMALL, "--out", str(tmp_path / "x.pt")]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2 and "already exists" in err[0] and "none" in err[1]
    assert not (tmp_path / "x.pt").exists()


@pytest.mark.slow
def test_search_and_final_runs_on_the_cache(a2w_cache, tmp_path):
    pytest.importorskip("ray")
    from tune.final import main as final_main
    from tune.search import main as search_main

    root, _ = a2w_cache
    out = tmp_path / "a2w-pretrained.pt"  # the default encoder: the source-pretrained ResNet-50 (one epoch here)
    assert main(["--task", "A2W", "--data-root", str(root), *SMALL, "--pretrain-epochs", "1", "--batch-size", "16",
                 "--out", str(out)]) == 0
    quick = ["--set", "pretrain_epochs=1", "--set", "iters_per_epoch=2", "--set", "batch_size=8", "--set", "eval_batch_size=64"]
    code = search_main(["--task", "A2W", "--features", str(out), "--num-samples", "2", "--epochs", "1", "--num-cpus", "2",
                        "--storage-path", str(tmp_path / "runs"), "--quiet", *quick])
    assert code == 0
    exp = tmp_path / "runs" / "ssot-A2W" / "A2W"
    best = json.loads((exp / "best_config.json").read_text())
    assert best["backbone"] == "features" and best["features_path"] == str(out.resolve())
    # final runs of the exported config on the same cache
    cfg = tmp_path / "configs" / "A2W.json"
    cfg.parent.mkdir()
    SSOTConfig.from_dict({**best, "backbone": "resnet50", "features_path": None}).to_json(cfg)
    assert final_main([str(cfg), "--seeds", "0", "--features", str(out), "--out", str(tmp_path / "final")]) == 0
    record = json.loads((tmp_path / "final" / "runs" / "A2W_seed0.json").read_text())
    assert record["config"]["backbone"] == "features" and record["status"] == "completed"


def test_the_cache_written_carries_the_checksum_of_its_contents(a2w_cache):
    from ssot.data.features import CHECKSUM_KEY, content_checksum

    _, out = a2w_cache
    blob = torch.load(out, weights_only=True)
    assert blob[CHECKSUM_KEY] == content_checksum(blob) and len(blob[CHECKSUM_KEY]) == 64
    assert read_feature_cache(out)[CHECKSUM_KEY] == blob[CHECKSUM_KEY]


def test_the_plausible_mistakes_are_refused_in_one_line_before_any_work(tmp_path, capsys):
    """Unknown task, an --out that exists, is a folder, lies under a file or is the --config it
    reads, a cache asked of a cache (--features), negative --views, an encoder that does not fit
    the backbone, a missing config file, a task without its data root: one line, exit status 2."""
    (tmp_path / "afile").write_text("x")
    config = tmp_path / "cfg.json"
    SSOTConfig.for_task("P2H").to_json(config)
    out = str(tmp_path / "c.pt")
    cases = {
        ("--task", "P2HX", "--out", out): "Unknown task 'P2HX'. Did you mean 'P2H'? Valid tasks:",
        ("--task", "P2H", "--out", str(tmp_path / "afile")): "already exists",
        ("--task", "P2H", "--out", str(tmp_path)): "is a folder, not a file",
        ("--task", "P2H", "--out", str(tmp_path / "afile" / "c.pt")): "cannot be created",
        ("--config", str(config), "--out", str(config)): f"--out {config} is one of the command's inputs ({config})",
        ("--task", "P2H", "--features", str(tmp_path / "afile"), "--out", out): "The 'backbone' parameter must be an image backbone",
        ("--task", "P2H", "--views", "-1", "--out", out): "The 'views' parameter must be an int in [0, inf). Got -1 instead.",
        ("--task", "P2H", "--encoder", "imagenet", "--out", out): "'imagenet' needs the resnet50 backbone",
        ("--config", str(tmp_path / "missing.json"), "--out", out): "does not exist",
        ("--task", "A2W", "--data-root", str(tmp_path / "none"), "--out", out): "does not exist or is not a folder",
    }
    for argv, message in cases.items():
        assert main([*argv, "--quiet"]) == 2, argv
        err = capsys.readouterr().err
        assert err.startswith("error: ") and message in err and err.count("\n") == 1, (argv, err)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile", "cfg.json"]
