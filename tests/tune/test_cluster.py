"""A real multi-node Ray cluster: a lost node's trials restart from their checkpoints."""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from tests.fixtures import REPO
from tests.fixtures.ray_cluster import ray_cluster

SEARCH = [sys.executable, str(REPO / "tune" / "search.py")]


EPOCHS = 4


# The GCS declares a node dead after health_check_failure_threshold missed checks, one every
# health_check_period_ms (defaults 5 x 3 s): shorter here, so the test waits less for the loss.
FAST_HEALTH_CHECKS = {"RAY_health_check_period_ms": "1000", "RAY_health_check_failure_threshold": "3"}


def _reported_epochs(exp: Path, unit: str) -> list[int]:
    """Every epoch Ray received from a trial, in order, repeats included (its ``result.json``: one
    Ray trial per trial here, restarts included)."""
    (path,) = exp.glob(f"ray/{unit}_*/result.json")
    return [json.loads(line)["epoch"] for line in path.read_text().splitlines() if line.strip()]


@pytest.mark.slow
def test_trials_on_a_lost_node_restart_from_their_checkpoint_on_another_node(tmp_path):
    """Trials run only on the second node (custom resource ``worker_node``); that node is killed
    once a trial has written its state of epoch 2; a new node joins; the search finishes, trials.csv
    holds every epoch of each trial once, a trial with a state continued from it (not from scratch),
    and the summary counts the restarts."""
    with ray_cluster(num_cpus=1, resources={"head_node": 1}, **FAST_HEALTH_CHECKS) as cluster:
        node = cluster.add_node(num_cpus=2, resources={"worker_node": 2})
        args = ["--task", "digits", "--num-samples", "2", "--epochs", str(EPOCHS), "--set", "pretrain_epochs=1",
                "--set", "iters_per_epoch=40", "--no-early-stop", "--address", cluster.address,
                "--trial-resources", '{"worker_node": 1}', "--max-failures", "2", "--storage-path", str(tmp_path),
                "--name", "lost"]
        search = subprocess.Popen([*SEARCH, *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                  env=cluster.env)
        try:
            exp = tmp_path / "lost" / "digits"
            deadline = time.monotonic() + 180
            # Kill the node once a trial has written its state of epoch 2 (before it reports the epoch):
            # Ray restarts the trial with nothing of its own, and the trial continues from that state.
            while time.monotonic() < deadline and search.poll() is None:
                if any(exp.glob("trials/*/epoch-2.pt")):
                    break
                time.sleep(0.05)
            ahead = sorted(d.parent.name for d in exp.glob("trials/*/epoch-2.pt"))
            assert ahead and not (exp / "trials.csv").exists(), (ahead, sorted(p.name for p in exp.iterdir()))
            cluster.kill_node(node)  # the machine is lost, with both trials' workers on it
            cluster.add_node(num_cpus=2, resources={"worker_node": 2})
            out, _ = search.communicate(timeout=240)
        finally:
            if search.poll() is None:
                search.kill()
                search.communicate()
    assert search.returncode == 0, out[-3000:]
    frame = pd.read_csv(exp / "trials.csv")
    assert frame["trial_id"].nunique() == 2 and (frame["status"] == "completed").all()
    for trial_id, rows in frame.groupby("trial_id"):  # no trial lost, no epoch duplicated
        assert list(rows["epoch"]) == list(range(1, EPOCHS + 1)), (trial_id, rows)
    for unit in frame["trial_id"].unique():  # every trial ran to its end; the one ahead continued from its state
        epochs = _reported_epochs(exp, unit)
        assert epochs[-1] == EPOCHS, (unit, epochs)
        if unit in ahead:
            assert epochs.count(1) == 1, (unit, epochs)  # not from scratch
    info = json.loads((exp / "experiment.json").read_text())
    assert info["status"] == "finished" and info["max_failures"] == 2
    assert (exp / "best_config.json").exists()  # the search joined with --address wrote its outputs
    assert sorted(info["retries"]) == sorted(frame["trial_id"].unique()) and set(info["retries"].values()) == {1}
    assert "2 trial(s) restarted from their last checkpoint after a failure" in out, out[-3000:]
    assert out.count("restart 1 of at most 2, from its last checkpoint") == 2, out[-3000:]
