"""`analysis/data/frames.py`: per-trial tables, modes, curves, the cross-task table."""
from __future__ import annotations

import math
from pathlib import Path

import pytest

from analysis.data.experiments import Problem, load_experiment, load_experiments
from analysis.data.frames import (
    MODE_LABELS,
    cross_task_table,
    final_results,
    format_metric,
    format_percent,
    format_value,
    learning_curves,
    param_pairs,
    trial_table,
)
from ssot.results.paper import read_paper_accuracy
from tests.fixtures.experiments import EDGE_EPOCHS as EPOCHS
from tests.fixtures.experiments import TPE_SPACE, by_task, loaded, trial_rows, write_experiment


def test_trial_table_and_modes_never_mix_statuses(edge_results: Path) -> None:
    experiments, _ = load_experiments(edge_results)
    table = trial_table(by_task(experiments, "A2D")).set_index("trial_id")
    assert table.loc["t3", "reached_final"] and table.loc["t3", "final_acc"] == 0.90
    assert not table.loc["t4", "reached_final"] and math.isnan(table.loc["t4", "final_acc"])
    assert table.loc["t4", "best_acc"] == 0.95
    # the diverged trial's placeholder (0.99) is not an accuracy it reached
    assert table.loc["t5", "best_acc"] == 0.70
    assert table.loc["t5", "reason"] == "non-finite loss_ot at epoch 2"

    final = final_results(table.reset_index(), "final")
    assert final["trial_id"].tolist() == ["t3", "t2", "t1", "t0"]
    assert final["acc"].tolist() == [0.90, 0.80, 0.71, 0.62]
    best = final_results(table.reset_index(), "best")
    assert best["trial_id"].tolist() == ["t4", "t3", "t2", "t1", "t0"]
    assert "early-stopped" in MODE_LABELS["best"] and "last epoch" in MODE_LABELS["final"]
    with pytest.raises(ValueError, match="'mode' parameter"):
        final_results(table.reset_index(), "mean")  # type: ignore[arg-type]


def test_running_trials_are_only_in_the_best_view(tmp_path: Path) -> None:
    rows = trial_rows("P2I", "tpe", "r0", {"lambda_ot": 1.0, "lambda_ent": 1.0, "eps": 1.0,
                                           "potential_width": 64}, [0.5, 0.6], "running")
    rows += trial_rows("P2I", "tpe", "r1", {"lambda_ot": 0.1, "lambda_ent": 1.0, "eps": 1.0,
                                            "potential_width": 64}, [0.5] * EPOCHS, "completed")
    folder = write_experiment(tmp_path / "r" / "P2I", rows, task="P2I", search="tpe",
                              space=TPE_SPACE, max_epochs=EPOCHS, status="running")
    experiment = loaded(folder)
    table = trial_table(experiment)
    assert final_results(table, "final")["trial_id"].tolist() == ["r1"]
    assert sorted(final_results(table, "best")["trial_id"]) == ["r0", "r1"]


def test_trials_that_recorded_no_epoch_are_counted_not_drawn(tmp_path: Path) -> None:
    config = {"lambda_ot": 1.0, "lambda_ent": 1.0, "eps": 1.0, "potential_width": 64}
    rows = trial_rows("P2I", "tpe", "a", config, [0.5, 0.6, 0.7, 0.8], "completed")
    # tune/ writes one row with empty epoch and metrics for a trial that never reported
    rows.append({**rows[0], "trial_id": "b", "lambda_ot": 0.1, "epoch": math.nan,
                 "target_acc": math.nan, "status": "errored", "reason": "CUDA out of memory"})
    folder = write_experiment(tmp_path / "x" / "P2I", rows, task="P2I", search="tpe",
                              space=TPE_SPACE, max_epochs=EPOCHS)
    experiment, problems = load_experiment(folder)
    assert problems == [] and experiment is not None
    assert experiment.trials["trial_id"].unique().tolist() == ["a"]
    assert experiment.trials["epoch"].tolist() == [1, 2, 3, 4]
    table = trial_table(experiment).set_index("trial_id")
    assert table.loc["b", "status"] == "errored" and table.loc["b", "n_epochs"] == 0
    assert table.loc["b", "reason"] == "CUDA out of memory"
    assert math.isnan(table.loc["b", "best_acc"]) and not table.loc["b", "reached_final"]
    assert final_results(table.reset_index(), "best")["trial_id"].tolist() == ["a"]
    assert learning_curves(experiment)["trial_id"].unique().tolist() == ["a"]


def test_learning_curves_mark_the_last_real_epoch(edge_results: Path) -> None:
    experiments, _ = load_experiments(edge_results)
    curves = learning_curves(by_task(experiments, "A2D"))
    stopped = curves[curves["trial_id"] == "t4"]
    assert stopped["epoch"].tolist() == [1, 2] and stopped["is_last"].tolist() == [False, True]
    diverged = curves[curves["trial_id"] == "t5"]
    assert diverged["epoch"].tolist() == [1]  # the placeholder row is dropped
    assert diverged["is_last"].all()
    assert "lambda_ot=1" in diverged["config"].iloc[0]


def test_every_pair_of_searched_params(edge_results: Path) -> None:
    experiments, _ = load_experiments(edge_results)
    pairs = param_pairs(by_task(experiments, "A2D").space)
    assert pairs[0] == ("lambda_ot", "lambda_ent") and len(pairs) == 6


def test_cross_task_table_beside_the_paper(edge_results: Path, tmp_path: Path) -> None:
    experiments, _ = load_experiments(edge_results)
    paper = read_paper_accuracy()
    assert paper.loc["P2I", "ssot_acc"] == 96.7 and len(paper) == 26
    table = cross_task_table(experiments, paper).set_index("experiment")
    row = table.loc["A2D/tpe-exp"]
    assert row["best_final"] == pytest.approx(90.0) and row["best_reached"] == pytest.approx(95.0)
    assert row["paper_ssot"] == 98.7 and row["delta"] == pytest.approx(90.0 - 98.7)
    assert row["source_only"] == pytest.approx(55.0)  # the optional source_only_target_acc
    assert (row["n_completed"], row["n_early-stopped"], row["n_diverged"], row["n_errored"]) == (
        4, 1, 1, 1)
    problems: list[Problem] = []
    missing = read_paper_accuracy(tmp_path / "none.csv", problems)
    assert missing.empty and problems[0].path == tmp_path / "none.csv"


def test_format_value() -> None:
    assert [format_value(v) for v in (0.001, 1.0, 10.0, 256, 0.31622776, "x")] == [
        "0.001", "1", "10", "256", "0.316", "x"]


def test_accuracies_are_written_in_percent_other_metrics_as_numbers() -> None:
    assert format_percent(0.9844) == "98.4 %" and format_percent(0.9844, 2) == "98.44 %"
    assert format_percent(float("nan")) == "—" and format_percent(None) == "—"
    # the registry says which metrics are fractions: accuracies and MixVal in percent, the rest not
    assert format_metric("target_acc", 0.984, 2) == "98.40 %" and format_metric("mixval", 0.5) == "50.0 %"
    assert format_metric("im_pda", 1.23456) == "1.235" and format_metric("entropy", float("inf")) == "—"
    assert format_metric("not_a_metric", 0.5) == "0.5"
