"""benchmarks/gpu.py: importable, skips cleanly without CUDA, and its table states the ratios."""
from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest
import torch

from tests.fixtures import REPO

SCRIPT = REPO / "benchmarks" / "gpu.py"


def _load():
    spec = importlib.util.spec_from_file_location("bench_gpu", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_skips_with_status_0_and_writes_nothing_without_cuda(monkeypatch, tmp_path, capsys):
    gpu = _load()
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert gpu.main(["--out", str(tmp_path / "gpu.md")]) == 0
    assert "skipped, no CUDA GPU" in capsys.readouterr().out and not (tmp_path / "gpu.md").exists()


def test_script_runs_as_a_command_here():
    if torch.cuda.is_available():
        pytest.skip("a CUDA GPU is here: the script would run the real benchmark (minutes); run it by hand")
    proc = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "skipped" in proc.stdout


def test_table_gives_each_ratio():
    gpu = _load()
    text = gpu.table({"fp32": {"ssot": 20.0, "ce": 25.0}, "bf16": {"ssot": 30.0, "ce": 30.0}}, {4: 960.0},
                     {1: 10.0, 2: 15.0, 4: 16.0}, "Test GPU")
    assert "Test GPU" in text and "SSOT at 80 %" in text and "SSOT at 100 %" in text
    assert "960 / 1920 images/s | loader at 50 %" in text
    assert "1.50x one trial" in text and "gpus-per-trial 0.25" in text
