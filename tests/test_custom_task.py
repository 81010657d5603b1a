"""`--task custom --source S --target T` on generated image folders, with and without target labels."""
from __future__ import annotations

import json

import numpy as np
import pytest
from PIL import Image

from ssot.config import SSOTConfig
from ssot.data import build_task
from ssot.errors import ConfigError, DataError
from ssot.train import main

CLASSES = ("cat", "dog", "owl")
QUICK = ["--epochs", "1", "--pretrain-epochs", "1", "--iters-per-epoch", "2", "--quiet", "--no-pretrained",
         "--image-size", "16", "--resize-size", "18", "--batch-size", "4", "--num-workers", "0", "--device", "cpu",
         "--bottleneck-dims", "8"]


def _image(path, seed):
    rng = np.random.default_rng(seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(rng.integers(0, 255, (20, 20, 3), dtype=np.uint8)).save(path)


def make_folders(root, *, labeled: bool):
    for k, name in enumerate(CLASSES):
        for i in range(3):
            _image(root / "src" / name / f"{i}.png", 10 * k + i)
    for k, name in enumerate(CLASSES[:2]):
        for i in range(2):
            _image(root / "tgt" / (name if labeled else "") / f"{name}{i}.jpg", 100 + 10 * k + i)
    return root / "src", root / "tgt"


@pytest.mark.slow  # a ResNet-50 on CPU: ~40 s each on a loaded 2-core machine
@pytest.mark.parametrize("labeled", [True, False])
def test_custom_task_trains_and_reports_validators(tmp_path, labeled):
    src, tgt = make_folders(tmp_path, labeled=labeled)
    out = tmp_path / "run.json"
    assert main(["--task", "custom", "--source", str(src), "--target", str(tgt), *QUICK, "--out", str(out)]) == 0
    record = json.loads(out.read_text())
    assert record["task"]["class_names"] == list(CLASSES) and record["task"]["n_target"] == 4
    final = record["epochs"][-1]
    assert all(np.isfinite(final[k]) for k in ("snd", "im", "entropy", "bnm", "dev", "mixval"))
    if labeled:
        assert record["task"]["target_classes"] == [0, 1] and 0 <= final["target_acc"] <= 1
    else:
        assert final["target_acc"] is None and record["source_only_target_acc"] is None and final["per_class_acc"] == {}


def test_bad_folders_are_one_line_errors(tmp_path, capsys):
    src, tgt = make_folders(tmp_path, labeled=True)
    _image(tgt / "zebra" / "0.png", 1)
    assert main(["--task", "custom", "--source", str(src), "--target", str(tgt), *QUICK]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "zebra" in err and "not source classes" in err
    with pytest.raises(ConfigError, match="needs --target"):
        build_task(SSOTConfig.for_task("custom", source_dir=str(src)))
    with pytest.raises(DataError, match="is not a folder"):
        build_task(SSOTConfig.for_task("custom", source_dir=str(src), target_dir=str(tmp_path / "none")))


def test_search_refuses_target_acc_on_an_unlabeled_target(tmp_path):
    from tune.experiment import SearchOptions, run_search

    src, tgt = make_folders(tmp_path, labeled=False)
    options = SearchOptions(task="custom", base={"source_dir": str(src), "target_dir": str(tgt)}, storage_path=str(tmp_path / "r"))
    with pytest.raises(ConfigError, match="--metric target_acc needs target labels.*label-free metric: source_acc, entropy, snd"):
        run_search(options)
    assert not (tmp_path / "r").exists()
