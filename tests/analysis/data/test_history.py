"""`analysis/data/history.py`: the optimisation history, best so far by the best-trial rule."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analysis.data.history import history_info
from tests.fixtures.experiments import asha_experiment, loaded, write_edge_tpe


def test_best_so_far_is_the_cumulative_max_of_the_trials_that_reached_the_end(views_results: Path) -> None:
    experiment, table = asha_experiment(views_results)
    info = history_info(experiment, table)
    frame = info.frame
    assert info.metric == "target_acc" and info.direction == "max" and info.fraction
    assert list(frame["order"]) == list(range(1, 21)) and list(frame["trial_id"]) == sorted(table["trial_id"])
    # every trial is a point: its last value (epoch 5 for a stopped one, epoch 15 for a completed one)
    last = experiment.trials.sort_values("epoch").groupby("trial_id")["target_acc"].last()
    assert frame.set_index("trial_id")["value"].to_dict() == pytest.approx(last.to_dict())
    # the best so far: a cumulative max over the completed trials' final values, carried forward
    final = frame["value"].where(frame["counts"]).to_numpy()
    expected = pd.Series(np.fmax.accumulate(np.nan_to_num(final, nan=-np.inf))).replace(-np.inf, np.nan)
    assert frame["best_so_far"].to_numpy() == pytest.approx(expected.to_numpy(), nan_ok=True)
    assert frame["counts"].sum() == 3 and frame["best_so_far"].iloc[-1] == frame["value"][frame["counts"]].max()
    assert info.best_trial == frame.loc[frame["value"].where(frame["counts"]).idxmax(), "trial_id"]


def test_stopped_and_diverged_trials_never_count(tmp_path: Path) -> None:
    experiment = loaded(write_edge_tpe(tmp_path / "tpe" / "A2D"))
    frame = history_info(experiment).frame.set_index("trial_id")
    # t4 (stopped at 0.95) and t5 (diverged; its placeholder 0.99 is no value) are points, never the best
    assert frame.loc["t4", "value"] == 0.95 and not frame.loc["t4", "counts"]
    assert frame.loc["t5", "value"] == 0.70 and not frame.loc["t5", "counts"]
    assert frame["best_so_far"].tolist() == [0.62, 0.71, 0.80, 0.90, 0.90, 0.90, 0.90]


def test_a_min_metric_keeps_the_lowest(tmp_path: Path) -> None:
    from tests.fixtures.experiments import TPE_SPACE, trial_rows, write_experiment

    rows = []
    for i, loss in enumerate([0.5, 0.3, 0.4, 0.2]):
        trial = trial_rows("A2D", "tpe", f"t{i}", {"lambda_ot": 1.0, "lambda_ent": 1.0, "eps": 1.0, "potential_width": 64},
                           [0.5, 0.6], "completed")
        trial[-1]["loss_total"] = loss
        rows += trial
    folder = write_experiment(tmp_path / "tpe" / "A2D", rows, task="A2D", search="tpe", space=TPE_SPACE, max_epochs=2,
                              extra={"metric": "loss_total", "mode": "min"})
    info = history_info(loaded(folder))
    assert info.direction == "min" and not info.fraction
    assert info.frame["best_so_far"].tolist() == pytest.approx([0.5, 0.3, 0.3, 0.2])
