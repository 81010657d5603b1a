"""`ssot/data/features.py`: the feature-cache format."""
from __future__ import annotations

import torch

from ssot.data.features import load_feature_task, read_feature_cache, save_feature_cache


def test_format_1_caches_still_load(tmp_path):
    path = tmp_path / "old.pt"
    torch.save({"task": "digits", "class_names": list("0123456789"), "target_classes": [0, 1],
                "source": {"features": torch.randn(6, 4), "labels": torch.arange(6) % 10},
                "target": {"features": torch.randn(3, 4), "labels": torch.tensor([0, 1, 0])}}, path)
    task = load_feature_task(path, "digits", backbone="digits_cnn")  # no backbone recorded: accepted
    assert len(task.source) == 6 and task.input_shape == (4,) and torch.equal(task.source[2][0], task.source_eval[2][0])


def test_save_is_atomic_and_leaves_no_temporary_file(tmp_path):
    path = tmp_path / "c.pt"
    save_feature_cache(path, "digits", list("0123456789"), [0], (torch.zeros(2, 3), torch.tensor([0, 1])),
                       (torch.zeros(1, 3), torch.tensor([0])))
    assert [p.name for p in tmp_path.iterdir()] == ["c.pt"] and read_feature_cache(path)["source_views"].shape == (0, 2, 3)
