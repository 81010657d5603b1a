"""benchmarks/gpu.py: skips cleanly without CUDA, runs every section on a CPU (--smoke), and its table states the ratios and goals."""
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
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_skips_with_status_0_and_writes_nothing_without_cuda(monkeypatch, tmp_path, capsys):
    gpu = _load()
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert gpu.main(["--out", str(tmp_path / "gpu.md")]) == 0
    assert "skipped, no CUDA GPU" in capsys.readouterr().out and not (tmp_path / "gpu.md").exists()


@pytest.mark.skipif(torch.cuda.is_available(), reason="a CUDA GPU is here: the script would run the real benchmark (minutes); "
                    "the CUDA smoke run below is this machine's variant")
def test_script_runs_as_a_command_here():
    proc = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "skipped" in proc.stdout


def _smoke(device: str, out, *extra: str) -> str:
    """The table of a ``--smoke`` run on ``device`` (tiny sizes: every section's code path)."""
    proc = subprocess.run([sys.executable, str(SCRIPT), "--device", device, "--smoke", "--num-workers", "1", "--out", str(out),
                           *extra], capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-2000:]
    text = out.read_text()
    assert f"torch {torch.__version__}" in text
    for row in ("model: plain CE, NCHW", "model: plain CE, channels_last", "model: SSOT step, channels_last",
                "model: old SSOT step", "input pipeline: decoded cache + device augmentation",
                "input pipeline: JPEG loader, 1 persistent workers", "decoded-image cache: `python -m ssot.data prepare`; opening it",
                "1 trial(s) per GPU (gpus-per-trial 1), no MPS", "2 trial(s) per GPU (gpus-per-trial 0.5), no MPS",
                "one A2W epoch (1 iterations + evaluation)"):
        assert row in text, row
    return text


def test_the_cpu_smoke_run_goes_through_every_section_and_writes_its_table(tmp_path):
    out = tmp_path / "smoke.md"
    text = _smoke("cpu", out, "--compile")  # --compile is ignored on a CPU: the command runs
    assert text.startswith("CPU ") and "trials with MPS | not measured: MPS needs CUDA" in text and "compiled" not in text
    assert _load().main(["--device", "cpu", "--smoke", "--out", str(out)]) == 2 and out.read_text() == text  # never overwritten


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (the CPU smoke run above is the CPU's variant)")
def test_the_cuda_smoke_run_goes_through_every_section_with_compile_and_mps(tmp_path):
    """The GPU variant: every section's CUDA path at tiny sizes (bf16, channels_last, pinned copies,
    processes sharing the GPU, MPS started for the run or said why not, torch.compile)."""
    text = _smoke("cuda", tmp_path / "smoke.md", "--compile")
    assert text.startswith(f"GPU {torch.cuda.get_device_name(0)}")
    assert "model: SSOT step, channels_last compiled" in text and "model: plain CE, channels_last compiled" in text
    assert "2 trial(s) per GPU (gpus-per-trial 0.5), MPS" in text or "| trials with MPS | not measured: " in text


def test_table_gives_each_ratio_and_goal():
    gpu = _load()
    results = {
        "model": {"plain CE, NCHW": 1909.0, "SSOT step, NCHW": 1500.0, "plain CE, channels_last": 2417.0,
                  "SSOT step, channels_last": 2300.0, "old SSOT step (NCHW, host read every step)": 1648.0},
        "pipeline": {"model": 2300.0, "rates": {"decoded cache + device augmentation": 4600.0,
                                                "JPEG loader, 4 persistent workers": 812.0}, "prepare_s": 30.0, "cache_gib": 0.66,
                     "open_s": 1.5},
        "trials": {"time-slicing": {1: 1600.0, 2: 1700.0, 4: 1700.0}, "mps": {1: 1600.0, 2: 2656.0, 4: 3152.0},
                   "mps_detail": "a daemon started for the search"},
        "epoch": {"before": 10.0, "after": 5.0, "iterations": 88},
    }
    text = gpu.table(results, "GPU Test GPU, torch 9")
    assert text.startswith("GPU Test GPU, torch 9; random-init ResNet-50, 224x224, batch 32 + 32")
    assert "| model: SSOT step, channels_last | 2,300 images/s | SSOT at 95 % of plain CE | >= 90 % and >= 2,200 images/s: met |" in text
    assert "| 200 % of the model (2,300 images/s) | >= 100 %: met |" in text and "| 35 % of the model (2,300 images/s) | (today's) |" in text
    assert "| 4 trial(s) per GPU (gpus-per-trial 0.25), no MPS | 1,700 images/s in total | 1.06x one trial |  |" in text
    assert "| 4 trial(s) per GPU (gpus-per-trial 0.25), MPS | 3,152 images/s in total | 1.97x one trial | >= 1.9x: met |" in text
    assert "| 10.0 s / 5.0 s | 2.00x faster | >= 1.8x: met |" in text and "| 30 s, 0.66 GiB; 1.5 s |" in text
    slow = {**results, "model": {"plain CE, channels_last": 2417.0, "SSOT step, channels_last": 1648.0},
            "trials": {"time-slicing": {1: 1600.0}, "mps": None, "mps_detail": "nvidia-cuda-mps-control is not on PATH"}}
    text = gpu.table(slow, "GPU Test GPU")
    assert "SSOT at 68 % of plain CE | >= 90 % and >= 2,200 images/s: NOT met" in text
    assert "| trials with MPS | not measured: nvidia-cuda-mps-control is not on PATH | | |" in text
