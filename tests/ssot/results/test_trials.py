"""`ssot/results/trials.py`: the per-trial table and the best-trial rule."""
from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from ssot.results.trials import best_trial, trial_table
from tests.fixtures.experiments import write_export_searches


def test_best_completed_trial_follows_the_direction():
    frame = pd.DataFrame({"trial_id": ["a", "a", "b", "b", "c"], "epoch": [1, 2, 1, 2, 1],
                          "status": ["completed"] * 4 + ["early-stopped"], "target_acc": [0.5] * 5,
                          "entropy": [0.1, 0.9, 0.5, 0.4, 0.0], "snd": [9.0, 1.0, 0.0, 2.0, 50.0],
                          "mixval": [math.nan] * 5})
    table = trial_table(frame, max_epochs=2)

    def best(name: str) -> tuple[str | None, float]:
        row = best_trial(table, name)
        return (None, math.nan) if row is None else (row["trial_id"], row[name])

    assert best("entropy") == ("b", 0.4)  # final epochs only, completed only, lower is better
    assert best("snd") == ("b", 2.0)
    assert best("mixval")[0] is None


# ------------------------------------------------------------------------------------ export
def test_best_trial_uses_the_final_epoch_of_trials_that_reached_it(searches):
    from ssot.results.experiment import read_experiment
    from ssot.results.trials import best_trial, trial_table

    files = read_experiment(searches["best"])
    table = trial_table(files.trials, files.max_epochs)
    best = best_trial(table)
    assert best["trial_id"] == "t_completed" and best["target_acc"] == pytest.approx(0.8)  # not 0.9 (earlier epoch), not 0.95 (early-stopped)
    assert best_trial(table[table["status"] != "completed"]) is None


@pytest.fixture
def searches(tmp_path) -> dict[str, Path]:
    """The best, a worse and a running experiment of one task (:func:`write_export_searches`)."""
    return write_export_searches(tmp_path / "searches")
