"""`python -m ssot.feature_maps`: saved models and their seeded t-SNE."""
from __future__ import annotations

import numpy as np
import pytest


@pytest.mark.slow  # trains a tiny digits run and two t-SNE embeddings
def test_save_model_then_feature_map_file(tmp_path, capsys):
    """--save-model writes both models; python -m ssot.feature_maps embeds a seeded subsample of each."""
    from ssot.feature_maps import main as maps_main
    from ssot.train import main as train_main

    model = tmp_path / "m.pt"
    argv = ["--task", "digits", "--epochs", "1", "--pretrain-epochs", "1", "--iters-per-epoch", "2", "--source-eval-samples", "64",
            "--quiet", "--save-model", str(model)]
    assert train_main(argv) == 0
    assert train_main(argv) == 2 and "--save-model" in capsys.readouterr().err  # never overwritten
    out = tmp_path / "t.npz"
    assert maps_main([str(model), "--out", str(out), "--per-domain", "30"]) == 0
    data = np.load(out)
    assert list(data["models"]) == ["source-only", "adapted"] and data["xy"].shape == (120, 2)
    assert np.array_equal(data["domain"][:60], np.repeat([0, 1], 30)) and set(data["outlier_classes"]) == {5, 6, 7, 8, 9}
    again = tmp_path / "t2.npz"
    assert maps_main([str(model), "--out", str(again), "--per-domain", "30"]) == 0
    np.testing.assert_allclose(np.load(again)["xy"], data["xy"])  # seeded: the same map
    assert maps_main([str(model), "--out", str(out)]) == 2 and "already exists" in capsys.readouterr().err
