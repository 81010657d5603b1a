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


def test_the_plausible_mistakes_are_refused_in_one_line_before_any_work(tmp_path, capsys):
    """Not a model (a text file: an UnpicklingError traceback in the second audit), missing, a
    folder, a torch file of something else, a model whose weights do not fit, a bad --out."""
    import torch

    from ssot.feature_maps import main

    (tmp_path / "notes.txt").write_text("hello")
    (tmp_path / "afile").write_text("x")
    torch.save({"config": {"task": "digits"}}, tmp_path / "partial.pt")
    torch.save({"config": {"task": "digits"}, "source-only": {"f": {}, "eta": {}}, "adapted": {"f": {}, "eta": {}}},
               tmp_path / "empty.pt")
    torch.save({"config": {"task": "digits"}, "source-only": {}, "adapted": {}}, tmp_path / "model.npz")
    out = str(tmp_path / "t.npz")
    cases = {
        ("notes.txt", out): "cannot be loaded safely as tensors and plain types (it is not a file of torch.save",
        ("missing.pt", out): "does not exist. Pass a model file written by `python -m ssot.train --save-model FILE`.",
        (".", out): "is a folder, not a file.",
        ("partial.pt", out): "is not a model file of python -m ssot.train --save-model (it lacks adapted, source-only)",
        ("empty.pt", out): "The source-only model of",
        ("empty.pt", str(tmp_path / "t.png")): "The '--out' argument must end in .npz. Got 't.png' instead.",
        ("empty.pt", str(tmp_path / "afile" / "t.npz")): "cannot be created",
        ("model.npz", str(tmp_path / "model.npz")): "is one of the command's inputs",
    }
    for (model, where), message in cases.items():
        assert main([str(tmp_path / model), "--out", where]) == 2, model
        err = capsys.readouterr().err
        assert err.startswith("error: ") and message in err and err.count("\n") == 1 and "weights_only" not in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile", "empty.pt", "model.npz", "notes.txt", "partial.pt"]
