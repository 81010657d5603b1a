"""benchmarks/population.py and population_drift.py: they run as commands at small sizes, on the CPU
and, where a CUDA GPU is at hand, on it (the CUDA paths of the population: stacked step, evaluation
and validators on the device); a GPU asked for but absent is said so."""
from __future__ import annotations

import subprocess
import sys

import pytest
import torch

from tests.fixtures import REPO

SCRIPT = REPO / "benchmarks" / "population.py"
DRIFT = REPO / "benchmarks" / "population_drift.py"
DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU here"))]


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=600)


@pytest.mark.parametrize("device", DEVICES)
def test_the_throughput_and_epoch_sections_run_at_small_sizes(small_cache, device):
    """Section 1 (P = 1 is the population of one: the trainer's step) with its whole-epoch line, and
    section 2 with every part's share, on ``device``."""
    proc = _run(str(SCRIPT), "--device", device, "--cache", str(small_cache), "--task", "digits", "--sections", "1", "2",
                "--sizes", "1", "3", "--iters", "2", "--screen-configs", "3", "--epochs", "2", "--iters-per-epoch", "3",
                "--pretrain-epochs", "1", "--threads", "1")
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout
    assert "P =    1:" in out and "P =    3:" in out and out.count("whole epoch (iterations, evaluation, validators)") == 2
    assert "2. the first epoch of a population of 3 (DEV from zero)" in out and "evaluation and validators" in out
    assert "its second epoch (3 iterations; DEV warm-started" in out
    assert "    their Newton solve" in out and "the table's host read" in out
    assert ("worker process(es)" in out) == (device == "cpu")
    assert ("with the worker process(es): the start" in out and "the close" in out) == (device == "cpu")


@pytest.mark.parametrize("device", DEVICES)
def test_the_drift_benchmark_runs_at_small_sizes(small_cache, device):
    proc = _run(str(DRIFT), "--cache", str(small_cache), "--task", "digits", "--configs", "2", "--epochs", "1", "--device", device)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "members within 1e-6 of their run at every epoch" in proc.stdout and "the cause, one batch" in proc.stdout
    if device == "cpu":  # a member is its independent run, bit for bit
        assert "2 of 2 members within 1e-6" in proc.stdout


def test_a_gpu_run_without_a_gpu_says_so_and_measures_nothing():
    if torch.cuda.is_available():
        pytest.skip("a CUDA GPU is here: the GPU variants above run the CUDA paths")
    proc = _run(str(SCRIPT), "--device", "cuda")
    assert proc.returncode == 0 and "no CUDA GPU here; nothing measured" in proc.stdout


def test_the_help_names_every_section():
    proc = _run(str(SCRIPT), "--help")
    assert proc.returncode == 0 and "--population-size" in proc.stdout and "--max-memory-gb" in proc.stdout
    assert "--epoch-rounds" in proc.stdout
