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


def test_seeded_views_do_not_depend_on_the_global_rng():
    from torch.utils.data import Subset

    from ssot.data.features import FeatureViews, seed_views
    from ssot.solvers import SampleIds

    views = torch.arange(4 * 5, dtype=torch.float32).reshape(4, 5, 1)  # view v of sample i holds 5 v + i
    ds = FeatureViews(views, torch.zeros(5, dtype=torch.long))

    def draws(wrapped, global_seed: int) -> list[int]:
        seed_views(wrapped, 3)
        torch.manual_seed(global_seed)
        torch.randn(global_seed)  # other code drew a config-dependent amount from the global RNG
        return [int(wrapped[i][0]) // 5 for i in range(5) for _ in range(4)]

    first = draws(ds, 1)
    assert draws(ds, 2) == first and draws(Subset(ds, range(5)), 7) == first and draws(SampleIds(ds), 9) == first
    assert len(set(first)) > 1  # still random views
    seed_views(ds, 4)
    assert [int(ds[i][0]) // 5 for i in range(5) for _ in range(4)] != first
