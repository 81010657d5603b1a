"""`python -m ssot.train`: run records, seeds, outputs never overwritten, one-line errors."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from ssot.config import SSOTConfig
from ssot.train import main
from tests.fixtures import REPO
from tests.fixtures.images import make_office31


def test_single_run_writes_the_run_record(quick_flags, tmp_path, capsys):
    out = tmp_path / "run.json"
    assert main(["--task", "digits", *quick_flags, "--lambda-ot", "0.5", "--out", str(out)]) == 0
    record = json.loads(out.read_text())
    assert record["config"]["lambda_ot"] == 0.5 and record["config"]["task"] == "digits"
    assert set(record["config"]) == set(SSOTConfig().to_dict())
    assert len(record["epochs"]) == 1 and 0 <= record["epochs"][0]["target_acc"] <= 1
    assert 0 <= record["source_only_target_acc"] <= 1
    printed = capsys.readouterr().out
    assert "source-only target_acc" in printed and "final target_acc" in printed


def test_config_file_with_seeds_reports_mean_and_std(quick_config, tmp_path, capsys):
    cfg = tmp_path / "best.json"
    quick_config(lambda_ent=0.2).to_json(cfg)
    out = tmp_path / "final.json"
    assert main(["--config", str(cfg), "--seeds", "0", "1", "--quiet", "--out", str(out)]) == 0
    payload = json.loads(out.read_text())
    assert payload["summary"]["seeds"] == [0, 1]
    assert [r["config"]["seed"] for r in payload["runs"]] == [0, 1]
    assert all(r["config"]["lambda_ent"] == 0.2 for r in payload["runs"])
    assert "2 seeds: target_acc" in capsys.readouterr().out


def test_existing_output_is_never_overwritten(quick_flags, tmp_path, capsys):
    out = tmp_path / "run.json"
    out.write_text("precious")
    assert main(["--task", "digits", *quick_flags, "--out", str(out)]) == 2
    assert out.read_text() == "precious"
    assert "already exists" in capsys.readouterr().err


@pytest.mark.parametrize("args, message", [
    (["--task", "X2Y"], "Unknown task 'X2Y'. Valid tasks: digits, A2W"),
    (["--task", "A2W"], "no data root: pass --data-root DIR or set SSOT_DATA_ROOT"),
    (["--eps", "-1"], "--eps must be a float in [0, inf). Got -1.0 instead."),  # the flag typed, not the field
    (["--config", "missing.json"], "Config file missing.json does not exist"),
])
def test_user_errors_are_one_line(args, message, capsys, monkeypatch):
    monkeypatch.delenv("SSOT_DATA_ROOT", raising=False)
    assert main(args) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


def test_process_exit_code_and_message(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "ssot.train", "--task", "P2I", "--data-root", str(tmp_path / "nowhere")],
                          capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stderr.startswith("error: ") and "nowhere" in proc.stderr and "Traceback" not in proc.stderr


def test_a2w_trains_end_to_end_from_the_office31_folder_layout(quick_flags, tmp_path):
    root = make_office31(tmp_path / "data", per_class=2)
    out = tmp_path / "a2w.json"
    code = main(["--task", "A2W", "--data-root", str(root), "--no-pretrained", "--image-size", "32", "--resize-size", "36",
                 "--batch-size", "8", "--num-workers", "0", "--device", "cpu", "--eval-batch-size", "32", *quick_flags,
                 "--out", str(out)])
    assert code == 0
    record = json.loads(out.read_text())
    assert record["task"]["num_classes"] == 31 and len(record["task"]["target_classes"]) == 10
    assert record["task"]["n_source"] == 62 and record["task"]["n_target"] == 20
    assert record["status"] == "completed" and len(record["epochs"]) == 1


def test_an_unreadable_image_is_one_line_even_from_a_loader_worker(quick_flags, tmp_path, capsys):
    root = make_office31(tmp_path / "data", per_class=1)
    bad = next((root / "office31" / "webcam" / "images" / "mug").iterdir())
    bad.write_bytes(b"not an image")
    code = main(["--task", "A2W", "--data-root", str(root), "--no-pretrained", "--image-size", "32", "--resize-size", "36",
                 "--batch-size", "8", "--num-workers", "1", "--device", "cpu", *quick_flags])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert f"cannot read image {bad}" in err and "Traceback" not in err


def test_train_refuses_an_out_under_a_file_before_training(a_file):
    proc = subprocess.run([sys.executable, "-m", "ssot.train", "--task", "digits", "--out", str(a_file / "run.json")],
                          cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "is a file, not a folder" in proc.stderr
    assert "source-only" not in proc.stdout  # refused before anything trained


def test_an_output_that_is_an_input_or_the_other_output_is_refused_before_training(tmp_path, capsys):
    """``--out`` over ``--config`` (a config file may be a run record), and ``--out`` and
    ``--save-model`` naming one file (the model was written, then the record refused, after the
    whole training): both refused in one line before any work."""
    config = tmp_path / "run.json"
    SSOTConfig.for_task("digits").to_json(config)
    before = config.read_text()
    assert main(["--config", str(config), "--out", str(config), "--quiet"]) == 2
    assert f"--out {config} is one of the command's inputs ({config})" in capsys.readouterr().err
    same = tmp_path / "same.pt"
    assert main(["--task", "digits", "--out", str(same), "--save-model", str(tmp_path / "." / "same.pt"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --save-model") and "is also --out" in err and err.count("\n") == 1
    assert config.read_text() == before and not same.exists()
