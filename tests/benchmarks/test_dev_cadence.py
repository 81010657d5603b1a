"""benchmarks/dev_cadence.py: DEV kept every k-th epoch and at the last changes epoch selection as it should, and only it."""
from __future__ import annotations

import subprocess
import sys

from ssot.results.metrics import DIRECTIONS
from tests.fixtures import REPO
from tests.fixtures.experiments import TPE_SPACE, trial_rows, write_experiment

SCRIPT = REPO / "benchmarks" / "dev_cadence.py"

#: Per trial: the accuracy of each of its 6 epochs and DEV's value (lower is better) at each.
#: DEV's best epoch is the most accurate one (2, 4 and 5); among epochs 3 and 6 (k = 3) its best
#: is epoch 3 in t0 and t1, epoch 6 in t2.
TRIALS = {
    "t0": ([0.50, 0.80, 0.70, 0.60, 0.60, 0.55], [0.9, 0.1, 0.3, 0.8, 0.8, 0.4]),
    "t1": ([0.40, 0.50, 0.60, 0.90, 0.70, 0.65], [0.9, 0.8, 0.2, 0.1, 0.5, 0.3]),
    "t2": ([0.30, 0.35, 0.40, 0.45, 0.75, 0.70], [0.9, 0.8, 0.7, 0.6, 0.1, 0.2]),
}


def test_epoch_selection_by_dev_sees_only_the_kept_epochs(tmp_path):
    rows = []
    for trial, (accuracies, devs) in TRIALS.items():
        config = {"lambda_ot": 0.1, "lambda_ent": 0.1, "eps": 0.1, "potential_width": 256}
        for row, dev in zip(trial_rows("P2H", "tpe", trial, config, accuracies, "completed"), devs):
            rows.append({**row, "dev": dev})
    write_experiment(tmp_path / "exp" / "P2H", rows, task="P2H", search="tpe", space=TPE_SPACE, max_epochs=6,
                     extra={"validator_directions": dict(DIRECTIONS)})
    proc = subprocess.run([sys.executable, str(SCRIPT), str(tmp_path), "--every", "1", "3", "6"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = {line.split(":")[0].strip(): line for line in proc.stdout.splitlines() if line.strip().startswith("every")}
    # every epoch: DEV picks each trial's best epoch (regret 0); the last epoch's regret is the mean gap to the best
    last = 100 * sum(max(a) - a[-1] for a, _ in TRIALS.values()) / 3
    assert "dev 0.00," in lines["every   1"] and f"last_epoch {last:.2f}" in lines["every   1"], proc.stdout
    # every 3rd: epochs 3 and 6 only
    third = 100 * ((0.80 - 0.70) + (0.90 - 0.60) + (0.75 - 0.70)) / 3
    assert f"dev {third:.2f}," in lines["every   3"], proc.stdout
    # every 6th: the last epoch alone, DEV's pick is the last epoch's
    assert f"dev {last:.2f}," in lines["every   6"], proc.stdout
    # hyperparameter selection reads the final epochs: the same for every cadence
    finals = {line.split("configs: dev ")[1] for line in lines.values()}
    assert len(finals) == 1, proc.stdout


def test_a_folder_without_searches_is_refused_in_one_line(tmp_path):
    proc = subprocess.run([sys.executable, str(SCRIPT), str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "no search with trials found" in proc.stdout and "Traceback" not in proc.stderr
