"""`ssot/data/features.py`: the feature-cache format."""
from __future__ import annotations

import pytest
import torch

from ssot.data.features import CHECKSUM_KEY, content_checksum, load_feature_task, read_feature_cache, save_feature_cache
from ssot.errors import DataError


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


def _cache(path, *, checksum: bool = True):
    """A small digits-shaped cache (70 target rows, every 7th of them damaged by the tests)."""
    gen = torch.Generator().manual_seed(0)
    save_feature_cache(path, "digits", list("0123456789"), [0, 1, 2, 3, 4],
                       (torch.randn(40, 8, generator=gen), torch.arange(40) % 10),
                       (torch.randn(70, 8, generator=gen), torch.arange(70) % 5), meta={"backbone": "digits_cnn", "seed": 3})
    if not checksum:
        blob = torch.load(path, weights_only=True)
        del blob[CHECKSUM_KEY]
        torch.save(blob, path)
    return path


def _damage(path, change):
    """Rewrite the cache at ``path`` with ``change`` applied to its target features (its recorded checksum kept)."""
    blob = torch.load(path, weights_only=True)
    change(blob["target"]["features"])
    torch.save(blob, path)
    return content_checksum(blob)


def _flip_exponent_bit(x):
    bits = x.view(-1).view(torch.int32)
    bits[::7] ^= 1 << 23  # the lowest exponent bit: every 7th value doubled or halved, still finite


def _nan(x):
    x.view(-1)[::7] = float("nan")


@pytest.mark.parametrize("change", [_flip_exponent_bit, _nan], ids=["finite", "nan"])
def test_a_cache_changed_since_it_was_written_is_refused_naming_both_checksums_and_the_rebuild(tmp_path, change, capsys):
    path = _cache(tmp_path / "p2h.pt")
    expected = torch.load(path, weights_only=True)[CHECKSUM_KEY]
    assert expected == content_checksum(read_feature_cache(path))  # intact: accepted
    found = _damage(path, change)
    assert found != expected
    with pytest.raises(DataError) as info:
        read_feature_cache(path)
    message = str(info.value)
    assert "\n" not in message and str(path) in message and "is damaged" in message
    assert f"is {found}, expected {expected}" in message
    assert f"`python -m ssot.features --task digits --seed 3 --out {path}`" in message
    # a command refuses it before any work, exit status 2, and never calls it a divergence
    from ssot.train import main

    assert main(["--task", "digits", "--features", str(path), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: Feature cache {path} is damaged") and err.count("\n") == 1 and "diverged" not in err


def test_a_cache_without_checksum_is_accepted_with_a_warning_but_its_values_are_still_checked(tmp_path, capsys):
    path = _cache(tmp_path / "old.pt", checksum=False)
    assert read_feature_cache(path)["task"] == "digits"
    read_feature_cache(path)
    warned = capsys.readouterr().err
    assert warned.count("\n") == 1 and warned.startswith(f"warning: feature cache {path} carries no checksum")  # once
    _damage(path, _nan)
    with pytest.raises(DataError, match=r"is damaged \(80 NaN or infinite values in target/features\)\. Remove it and rebuild it") as info:
        read_feature_cache(path)
    assert "\n" not in str(info.value)


def test_a_cache_whose_labels_or_shapes_do_not_fit_is_refused(tmp_path):
    cases = {
        "target labels \\[7\\] are not target classes": lambda b: b["target"]["labels"].__setitem__(0, 7),
        "source labels \\[12\\] are not classes": lambda b: b["source"]["labels"].__setitem__(0, 12),
        "target holds features \\(70, 8\\) and labels \\(69,\\)": lambda b: b["target"].__setitem__("labels", b["target"]["labels"][1:]),
        "source_views holds \\(1, 40, 4\\), not \\(V, 40, 8\\)": lambda b: b.__setitem__("source_views", torch.zeros(1, 40, 4)),
    }
    for k, (message, change) in enumerate(cases.items()):
        path = _cache(tmp_path / f"c{k}.pt", checksum=False)
        blob = torch.load(path, weights_only=True)
        change(blob)
        torch.save(blob, path)
        with pytest.raises(DataError, match=message):
            read_feature_cache(path)


def test_non_finite_features_are_never_written(tmp_path):
    with pytest.raises(DataError, match="not all finite \\(1 NaN or infinite value in target/features\\): the encoder diverged"):
        save_feature_cache(tmp_path / "c.pt", "digits", list("0123456789"), [0], (torch.zeros(2, 3), torch.tensor([0, 1])),
                           (torch.tensor([[0.0, float("inf"), 0.0]]), torch.tensor([0])))
    assert list(tmp_path.iterdir()) == []
