"""`ssot/data/folders.py`: the custom task of two folders."""
from __future__ import annotations

import json

import numpy as np
import pytest

from ssot.config import SSOTConfig
from ssot.data import build_task
from ssot.errors import ConfigError, DataError
from ssot.train import main
from tests.fixtures.images import CLASSES, make_folders, write_random_image

QUICK = ["--epochs", "1", "--pretrain-epochs", "1", "--iters-per-epoch", "2", "--quiet", "--no-pretrained",
         "--image-size", "16", "--resize-size", "18", "--batch-size", "4", "--num-workers", "0", "--device", "cpu",
         "--bottleneck-dims", "8"]


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
    write_random_image(tgt / "zebra" / "0.png", 1)
    assert main(["--task", "custom", "--source", str(src), "--target", str(tgt), *QUICK]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "zebra" in err and "not source classes" in err
    with pytest.raises(ConfigError, match="needs --target"):
        build_task(SSOTConfig.for_task("custom", source_dir=str(src)))
    with pytest.raises(DataError, match="is not a folder"):
        build_task(SSOTConfig.for_task("custom", source_dir=str(src), target_dir=str(tmp_path / "none")))
