"""benchmarks/population.py: runs as a command, and says so when a GPU is asked for but absent."""
from __future__ import annotations

import subprocess
import sys

import pytest
import torch

from tests.fixtures import REPO

SCRIPT = REPO / "benchmarks" / "population.py"


def test_a_gpu_run_without_a_gpu_says_so_and_measures_nothing():
    if torch.cuda.is_available():
        pytest.skip("a CUDA GPU is here: the script would run the real benchmark (minutes); run it by hand")
    proc = subprocess.run([sys.executable, str(SCRIPT), "--device", "cuda"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "no CUDA GPU here; nothing measured" in proc.stdout


def test_the_help_names_every_section():
    proc = subprocess.run([sys.executable, str(SCRIPT), "--help"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "--population-size" in proc.stdout and "--max-memory-gb" in proc.stdout
