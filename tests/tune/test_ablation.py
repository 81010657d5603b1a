"""`python tune/ablation.py`: every variant through Ray, reusable run records, tables never overwritten."""
from __future__ import annotations

import json

import pandas as pd
import pytest

from ssot.config import SSOTConfig
from tune import ablation


def test_variants_change_one_field_each():
    full = SSOTConfig.for_task("digits", lambda_ent=0.5)
    configs = ablation.variant_configs(full)
    assert list(configs) == ["SSOT w/o m", "SSOT w/o Mask", "SSOT w/o Ent", "SSOT"]
    base = full.to_dict()
    diffs = {name: {k for k, v in c.to_dict().items() if base[k] != v} for name, c in configs.items()}
    assert diffs == {"SSOT w/o m": {"use_class_weights"}, "SSOT w/o Mask": {"use_mask"}, "SSOT w/o Ent": {"lambda_ent"}, "SSOT": set()}


def test_table_is_mean_and_sample_std_in_percent():
    rec = lambda acc, status="completed": {"status": status, "epochs": [{"target_acc": acc}], "source_only_target_acc": 0.1}  # noqa: E731
    by_variant = {name: [rec(0.5), rec(0.7)] for name in ablation.VARIANTS}
    by_variant["SSOT"] = [rec(0.8), rec(0.9, "diverged")]
    table = ablation.ablation_table({"digits": by_variant})
    row = table[table["variant"] == "SSOT w/o m"].iloc[0]
    assert row["mean"] == pytest.approx(60.0) and row["std"] == pytest.approx(14.142135, rel=1e-5)
    full = table[table["variant"] == "SSOT"].iloc[0]
    assert full["mean"] == pytest.approx(80.0) and full["n_completed"] == 1
    md = ablation.ablation_markdown(table)
    assert "| SSOT w/o m | 60.0 ± 14.1 |" in md and md.splitlines()[0] == "| Method | digits |"


@pytest.mark.slow  # Ray start + 4 tiny runs: ~40 s alone, more on a loaded machine
def test_ablation_command_through_ray_resumes_and_never_overwrites(quick_config, tmp_path, capsys):
    cfg = quick_config(iters_per_epoch=2, source_eval_samples=64)
    cfg.to_json(tmp_path / "best.json")
    out = tmp_path / "abl"
    argv = ["--config", str(tmp_path / "best.json"), "--seeds", "0", "--out", str(out), "--num-cpus", "2"]
    assert ablation.main(argv) == 0
    printed = capsys.readouterr().out
    records = {name: json.loads((out / folder / "runs" / "digits_seed0.json").read_text()) for name, (folder, _) in ablation.VARIANTS.items()}
    assert records["SSOT w/o m"]["config"]["use_class_weights"] is False
    assert records["SSOT w/o Ent"]["config"]["lambda_ent"] == 0.0
    assert all(r["status"] == "completed" for r in records.values())
    table = pd.read_csv(out / "ablation.csv")
    full_acc = 100 * records["SSOT"]["epochs"][-1]["target_acc"]
    assert table.set_index("variant").loc["SSOT", "mean"] == pytest.approx(full_acc)
    assert "| SSOT w/o Mask |" in printed and (out / "ablation.md").read_text() in printed
    # tables exist: refused with one line, nothing trained or changed
    before = (out / "ablation.md").read_text()
    assert ablation.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "already exists" in err and len(err.strip().splitlines()) == 1
    assert (out / "ablation.md").read_text() == before
    # tables moved away: every run record is reused (no Ray, no training)
    (out / "ablation.csv").unlink(); (out / "ablation.md").unlink()
    assert ablation.main(argv) == 0
    assert capsys.readouterr().out.count("[reused ") == 4
    # a record made with another config is not silently reused
    (out / "ablation.csv").unlink(); (out / "ablation.md").unlink()
    cfg.replace(lambda_ot=0.5).to_json(tmp_path / "other.json")
    assert ablation.main(["--config", str(tmp_path / "other.json"), "--seeds", "0", "--out", str(out)]) == 2
    assert "lambda_ot=1.0 instead of 0.5" in capsys.readouterr().err


def test_a_missing_dataset_is_one_line_before_ray_starts(tmp_path, monkeypatch, capsys):
    """The data of every run is checked before Ray starts (tune.runner.train_on_ray): one line, exit 2."""
    import ray

    monkeypatch.delenv("SSOT_DATA_ROOT", raising=False)
    monkeypatch.setattr(ray, "init", lambda *a, **k: pytest.fail("Ray started before the data was checked"))
    assert ablation.main(["--task", "P2I", "--seeds", "0", "--out", str(tmp_path / "abl"), "--num-cpus", "1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: no data root: pass --data-root DIR or set SSOT_DATA_ROOT") and len(err.splitlines()) == 1


def test_a_user_error_inside_a_ray_task_is_raised_as_itself():
    import ray

    from ssot.errors import DataError
    from tune.runner import ray_result

    def get(ref):
        raise ray.exceptions.RayTaskError("_train", "Traceback ...\x1b[36mray::_train()\x1b[39m", DataError("no data root"))

    with pytest.raises(DataError, match="^no data root$"):
        ray_result(type("FakeRay", (), {"get": staticmethod(get), "exceptions": ray.exceptions}), object())
