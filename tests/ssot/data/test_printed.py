"""`ssot/data/printed.py` and `ssot/data/shifted.py`: the printed, handwritten and shifted digits
(datasets embedded and embedded3), deterministic and partial."""
from pathlib import Path

import matplotlib
import numpy as np
import pytest
import torch

from ssot.config import SSOTConfig
from ssot.data import build_task, printed, registry, shifted
from ssot.trainer import run


def test_rendering_is_deterministic_and_seeded():
    x1, y1 = printed.render_printed(7, per_class=3)
    x2, y2 = printed.render_printed(7, per_class=3)
    x3, _ = printed.render_printed(8, per_class=3)
    assert np.array_equal(x1, x2) and np.array_equal(y1, y2)
    assert not np.array_equal(x1, x3)
    assert x1.shape == (30, 8, 8) and x1.dtype == np.uint8
    assert x1.max() <= 16 and (x1.reshape(30, -1).sum(axis=1) > 20).all()  # levels 0..16, ink in every image


def test_checksum_of_the_generated_arrays():
    """A change in rendering (code, fonts, FreeType, PIL) changes this sha256: update it knowingly."""
    arrays = printed.printed_digits()
    assert printed.checksum(arrays) == printed.EXPECTED_SHA256, (
        f"printed digits changed (matplotlib {matplotlib.__version__}; recorded with 3.11.2)")
    # the checksum sees every byte
    changed = dict(arrays, xA=arrays["xA"].copy())
    changed["xA"][0, 0, 0] ^= 1
    assert printed.checksum(changed) != printed.EXPECTED_SHA256


def test_class_balance_and_halves_differ():
    a = printed.printed_digits()
    for half in "AB":
        assert np.bincount(a[f"y{half}"], minlength=10).tolist() == [printed.PER_CLASS] * 10
    assert not np.array_equal(a["xA"], a["xB"])
    # the printed style differs from the scans: mean ink per image, not a copy of the scans
    from sklearn.datasets import load_digits

    scans = load_digits().images
    assert abs(a["xA"].mean() - scans.mean()) > 0.3


def test_checksum_of_the_shifted_domain():
    """A change of the shift (code, torchvision, the scans) changes this sha256: update it knowingly."""
    arrays = shifted.shifted_scans()
    assert shifted.checksum(arrays) == shifted.EXPECTED_SHA256
    assert arrays["xA"].shape == (901, 16, 16) and arrays["xB"].shape == (896, 16, 16) and arrays["xA"].dtype == np.uint8


def test_h2s_is_the_digits_task_at_8_bits_and_the_domains_differ():
    from ssot.data.digits import build_digits_task

    h2s, digits = build_task(SSOTConfig.for_task("H2S")), build_digits_task()
    assert torch.equal(h2s.source.tensors[0], digits.source.tensors[0])
    assert torch.equal(h2s.target.tensors[1], digits.target.tensors[1])
    assert float((h2s.target.tensors[0] - digits.target.tensors[0]).abs().max()) <= 0.5 / 255 + 1e-6
    s2h = build_task(SSOTConfig.for_task("S2H"))  # S is H's scans shifted: same labels, other pixels
    assert torch.equal(s2h.source.tensors[1], h2s.source.tensors[1])
    assert float((s2h.source.tensors[0] - h2s.source.tensors[0]).abs().mean()) > 0.1


@pytest.mark.parametrize("name", ["P2H", "H2P", "P2S", "S2P", "H2S", "S2H"])
def test_tasks_are_partial(name):
    task = build_task(SSOTConfig.for_task(name))
    ys = task.source.tensors[1]
    yt = task.target.tensors[1]
    assert sorted(set(ys.tolist())) == list(range(10))
    assert sorted(set(yt.tolist())) == printed.TARGET_CLASSES == task.target_classes
    assert task.outlier_classes == [5, 6, 7, 8, 9]
    assert task.source.tensors[0].shape[1:] == (1, 16, 16) == task.input_shape
    assert 0.0 <= float(task.source.tensors[0].min()) and float(task.source.tensors[0].max()) <= 1.0


def test_reference_tasks_train_on_target_labels_and_share_the_held_out_target():
    references = {**registry.DATASETS["embedded"].references, **registry.DATASETS["embedded3"].references}
    assert references == {"H2H": "P2H", "P2P": "H2P", "S2S": "P2S"}
    for ref, task_name in references.items():
        ref_task, task = printed.build_printed_task(ref), printed.build_printed_task(task_name)
        assert torch.equal(ref_task.target.tensors[0], task.target.tensors[0])  # same held-out target
        assert sorted(set(ref_task.source.tensors[1].tolist())) == printed.TARGET_CLASSES
        # trained on the target *domain*: half A of the target's domain, disjoint from half B
        assert ref[0] == task_name[-1]
        src = ref_task.source.tensors[0].flatten(1)
        tgt = ref_task.target.tensors[0].flatten(1)
        assert torch.cdist(src[:50], tgt).min() > 0


def test_only_matplotlibs_bundled_fonts_are_read(monkeypatch):
    from matplotlib import font_manager, ft2font

    data = Path(matplotlib.get_data_path()).resolve()
    paths = printed.font_paths()
    assert len(paths) == len(printed.FONTS) == 15
    assert all(p.is_file() and data in p.resolve().parents for p in paths)
    opened = []
    real = ft2font.FT2Font

    def spy(path, *args, **kwargs):
        opened.append(Path(path))
        return real(path, *args, **kwargs)

    def no_lookup(*args, **kwargs):
        raise AssertionError("font lookup (system fonts) used")

    monkeypatch.setattr(ft2font, "FT2Font", spy)
    monkeypatch.setattr(font_manager, "findfont", no_lookup)
    monkeypatch.setattr(font_manager.fontManager, "findfont", no_lookup)
    x, _ = printed.render_printed(0, per_class=2)
    assert opened and all(data in p.resolve().parents for p in opened)
    assert np.array_equal(x, printed.render_printed(0, per_class=2)[0])


def test_disk_cache_is_checked(tmp_path, monkeypatch):
    monkeypatch.setenv(printed.CACHE_ENV, str(tmp_path))
    monkeypatch.setattr(printed, "PER_CLASS", 2)
    printed.printed_digits.cache_clear()
    try:
        first = printed.printed_digits()
        files = list(tmp_path.glob("*.npz"))
        assert len(files) == 1 and first["xA"].shape == (20, 8, 8)
        printed.printed_digits.cache_clear()
        assert printed.checksum(printed.printed_digits()) == printed.checksum(first)  # read back
        with np.load(files[0]) as z:  # a tampered file is ignored and rewritten
            tampered = {k: z[k] for k in z.files}
        tampered["xA"] = tampered["xA"] + 1
        np.savez_compressed(files[0], **tampered)
        printed.printed_digits.cache_clear()
        assert printed.checksum(printed.printed_digits()) == printed.checksum(first)
    finally:
        printed.printed_digits.cache_clear()


@pytest.mark.parametrize("name", ["P2H", "H2P", "H2H", "P2S", "S2P", "H2S", "S2H", "S2S"])
def test_short_end_to_end_run(name):
    epochs = 0 if registry.task(name).reference_of else 1
    cfg = SSOTConfig.for_task(name, epochs=epochs, pretrain_epochs=1, iters_per_epoch=3, device="cpu",
                              source_eval_samples=100)
    record = run(cfg)
    assert record["status"] == "completed" and len(record["epochs"]) == epochs
    assert record["task"]["name"] == name and record["task"]["target_classes"] == printed.TARGET_CLASSES
    assert 0.0 <= record["source_only_target_acc"] <= 1.0
    if epochs:
        assert np.isfinite(record["epochs"][-1]["loss_ot"])
