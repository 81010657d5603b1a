"""benchmarks/dev_solvers.py: it runs as a command at small sizes and prints every comparison (on a GPU too, when one is here)."""
from __future__ import annotations

import re
import subprocess
import sys

import pytest
import torch

from tests.fixtures import REPO

SCRIPT = REPO / "benchmarks" / "dev_solvers.py"


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU here"))])
def test_the_solvers_are_compared_on_a_small_population(small_cache, device):
    """Every comparison with skada where it is installed (else ``--skip-references``), and the warm
    start's schedules and timing on the second epoch's problems."""
    try:
        import skada  # noqa: F401
        references = []
    except ImportError:
        references = ["--skip-references"]
    proc = subprocess.run([sys.executable, str(SCRIPT), "--cache", str(small_cache), "--task", "digits", "--configs", "2",
                           "--epochs", "2", "--rounds", "1", "--device", device, "--warm", "4/1,10/2", "--one-penalty", "1/1,40/40",
                           *references],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout
    assert "2 random configs x 2 epochs = 4 DEV problems" in out
    lines = ["warm starts: 2 problems", "warm (4, 1)", "warm (10, 2) (DEV_WARM_STEPS)", "time of 2 members' DEV classifiers: cold"]
    if not references:
        lines += ["the schedule's error", "against the per-fit L-BFGS", "against skada's DEV", "time of 2 members' DEV:"]
    for line in lines:
        assert line in out, line
    # one penalty: every problem's choice is counted, and 40 fresh steps reach that penalty's optimum
    chosen = re.search(r"one penalty: DEV chose (.*) of 2 warm-start problems; (\S+) alone", out)
    assert chosen and sum(int(n) for n in re.findall(r"in (\d+)", chosen.group(1))) == 2, out
    tight = re.search(r"alone, warm \(40, 40\): weights (\S+), DEV (\S+) from its optimum", out)
    assert tight and float(tight.group(1)) < 1e-9 and float(tight.group(2)) < 1e-9, out
    assert "alone, warm (1, 1): weights" in out and "DEV's warm solve (three penalties, (10, 2))" in out
