"""`analysis/paper_figures.py` on synthetic run records (no torch, no training)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from analysis.data import paper_runs as info
from analysis.mpl import paper as pf
from paper_fixtures import feature_map_data, synthetic_record

REPO = Path(__file__).resolve().parent.parent


def test_estimated_proportions_are_p_s_times_m():
    est, true, p_s = info.estimated_proportions(synthetic_record())
    assert est.shape == (5, 4)
    np.testing.assert_allclose(est[0], p_s)
    np.testing.assert_allclose(est[-1], true, atol=1e-12)
    np.testing.assert_allclose(est.sum(1), 1.0)


def test_class_weight_figure_marks_outliers_and_reports_the_outlier_mass():
    record = synthetic_record()
    record["epochs"][-1]["class_weights"] = [1.8, 1.8, 0.2, 0.2]  # 0.1 mass left on the outliers
    record["epochs"][-1]["outlier_mass"] = 0.1  # as the trainer records it: the same p_t
    fig = pf.class_weight_figure(record)
    line_ax, bar_ax = fig.axes
    dashed = [ln for ln in line_ax.get_lines() if ln.get_linestyle() == "--"]
    assert len(dashed) == 2 and all("(outlier)" in ln.get_label() for ln in dashed)
    assert "outlier classes 0.100" in bar_ax.get_title()
    with pytest.raises(info.FigureError, match="use_class_weights=false"):
        pf.class_weight_figure({**record, "config": {**record["config"], "use_class_weights": False}})
    with pytest.raises(info.FigureError, match="source_class_freq"):
        info.estimated_proportions({k: v for k, v in record.items() if k != "source_class_freq"})


def test_solver_figure_draws_one_curve_per_solver_and_mean_times():
    fig = pf.solver_figure([synthetic_record("net"), synthetic_record("vector"), synthetic_record("sinkhorn")])
    curve_ax, bar_ax = fig.axes
    assert len(curve_ax.get_lines()) == 3
    np.testing.assert_allclose(curve_ax.get_lines()[0].get_ydata(), [1.0, 0.5, 1 / 3, 0.25])
    assert [round(p.get_height(), 6) for p in bar_ax.patches] == [2.0, 3.0, 3.0]


def test_feature_map_figure_one_panel_per_model():
    fig = pf.feature_map_figure(feature_map_data())
    assert len(fig.axes) == 2 and sum(len(ax.collections) for ax in fig.axes) == 4


def test_command_writes_figures_never_overwrites_and_refuses_bad_input(tmp_path):
    rec = tmp_path / "run.json"
    rec.write_text(json.dumps(synthetic_record()))
    cmd = [sys.executable, "analysis/paper_figures.py", "class-weights", str(rec), "--out", str(tmp_path / "cw.png")]
    done = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "final mass on outlier classes: 0.0000 (source-only 0.5000)" in done.stdout
    assert (tmp_path / "cw.png").read_bytes()[:4] == b"\x89PNG"
    again = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
    assert again.returncode == 2 and "already exists" in again.stderr and "Traceback" not in again.stderr
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    worse = subprocess.run(cmd[:3] + [str(bad), "--out", str(tmp_path / "x.png")], cwd=REPO, capture_output=True, text=True)
    assert worse.returncode == 2 and "is not a run record" in worse.stderr
    assert "torch" not in subprocess.run([sys.executable, "-c", "import sys, analysis.paper_figures; print(' '.join(sys.modules))"],
                                         cwd=REPO, capture_output=True, text=True).stdout.split()


@pytest.mark.slow  # trains a tiny digits run and two t-SNE embeddings
def test_save_model_then_feature_map_file(tmp_path, capsys):
    """--save-model writes both models; python -m ssot.feature_maps embeds a seeded subsample of each."""
    from ssot.train import main as train_main
    from ssot.feature_maps import main as maps_main

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
