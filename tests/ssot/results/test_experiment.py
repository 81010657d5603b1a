"""`ssot/results/experiment.py`: the writer and reader of an experiment's files."""
from __future__ import annotations

import json

import pandas as pd

from ssot.results import trials as trial_model
from ssot.results.experiment import BEST_CONFIG_FILE, read_experiment


def test_an_old_experiment_folder_still_loads(tmp_path):
    """Folders written before the schema (no metric_label / best_trial, trials.csv without
    source_only_target_acc and time_s) load with no problem and the same rule."""
    from analysis.data.experiments import load_experiments

    folder = tmp_path / "old" / "A2D"
    folder.mkdir(parents=True)
    (folder / "experiment.json").write_text(json.dumps({
        "task": "A2D", "dataset": "office31", "name": "old", "search": "tpe", "metric": "target_acc", "mode": "max",
        "max_epochs": 2, "num_samples": 2, "space": {"lambda_ot": {"type": "loguniform", "low": 0.001, "high": 10.0}},
        "status": "finished", "started": "2024-01-01T00:00:00", "finished": "2024-01-01T01:00:00"}))
    old_columns = ["task", "trial_id", "search", "lambda_ot", "lambda_ent", "eps", "potential_width", "epoch",
                   "target_acc", "source_acc", "loss_total", "loss_ce", "loss_ot", "loss_ent", "ot_value",
                   "outlier_mass", "n_pred_classes", "status", "reason"]
    rows = [["A2D", "x1", "tpe", 0.1, 1, 1, 256, e, acc, 0.9, 1, 1, 1, 1, 1, 0.1, 31, "completed", ""]
            for e, acc in ((1, 0.5), (2, 0.7))]
    rows += [["A2D", "x0", "tpe", 1.0, 1, 1, 256, e, acc, 0.9, 1, 1, 1, 1, 1, 0.1, 31, "completed", ""]
             for e, acc in ((1, 0.6), (2, 0.7))]
    pd.DataFrame(rows, columns=old_columns).to_csv(folder / "trials.csv", index=False)
    (folder / "best_config.json").write_text(json.dumps({"task": "A2D", "lambda_ot": 1.0}))
    experiments, problems = load_experiments(tmp_path)
    assert problems == [] and len(experiments) == 1
    files = read_experiment(folder)
    assert files.metric == "target_acc"
    assert trial_model.best_trial(trial_model.trial_table(files.trials, files.max_epochs))["trial_id"] == "x0"


def test_an_all_diverged_search_is_finished_without_a_best_config_and_without_errors(tmp_path):
    from analysis.dashboard import build_dashboard
    from tests.fixtures.experiments import trial_rows, write_experiment

    rows = trial_rows("A2D", "tpe", "d0", {"lambda_ot": 10.0, "lambda_ent": 1.0, "eps": 0.01, "potential_width": 64},
                      [0.5, 0.0], "diverged", "non-finite loss_ot at epoch 2")
    folder = write_experiment(tmp_path / "div" / "A2D", rows, task="A2D", search="tpe", space={},
                              max_epochs=3, dataset="office31")
    assert not (folder / BEST_CONFIG_FILE).exists()
    result = build_dashboard(tmp_path, images=False)
    assert [p for p in result.problems if p.severity == "error"] == []
    assert "still running" not in " ".join(str(p) for p in result.problems)


def test_rows_with_a_nan_or_infinite_hyperparameter_are_dropped_and_the_dashboard_draws_the_rest(tmp_path):
    from analysis.dashboard import build_dashboard
    from tests.fixtures.experiments import write_edge_tpe

    folder = write_edge_tpe(tmp_path / "exp" / "A2D")
    frame = pd.read_csv(folder / "trials.csv")
    frame.loc[frame["trial_id"] == "t1", "eps"] = float("inf")
    frame.loc[frame["trial_id"] == "t2", "lambda_ot"] = float("nan")
    frame.loc[(frame["trial_id"] == "t0") & (frame["epoch"] == 2), "source_acc"] = float("-inf")
    frame.to_csv(folder / "trials.csv", index=False)
    files = read_experiment(folder)
    assert set(files.trials["trial_id"]) == {"t0", "t3", "t4", "t5", "t6"}
    assert files.trials["source_acc"].isna().sum() == 1 and files.trials["source_acc"].abs().max() < 1
    messages = [p.message for p in files.problems]
    assert any("8 malformed row(s) dropped (trial t1, t2)" in m for m in messages), messages
    assert any("infinite value(s) in source_acc read as missing" in m for m in messages), messages
    result = build_dashboard(tmp_path, images=False)  # no OverflowError, no math domain error
    assert result.n_experiments == 1


def test_readers_take_the_best_trial_experiment_json_records_and_check_finished_verifies_it(tmp_path):
    """The best trial is computed once, when the search writes its files: readers (export, the
    dashboard's tables) take experiment.json's record; the rule is applied again only where the
    record is missing (a running search) and by check_finished, which refuses a record the rows
    no longer give."""
    import pytest

    from ssot.errors import ResultsError
    from ssot.results.experiment import check_finished
    from tests.fixtures.experiments import trial_rows, write_experiment

    point = {"lambda_ot": 1.0, "lambda_ent": 1.0, "eps": 1.0, "potential_width": 64}
    rows = trial_rows("A2D", "tpe", "t0", point, [0.5, 0.6], "completed", "") + \
        trial_rows("A2D", "tpe", "t1", point, [0.5, 0.8], "completed", "")
    folder = write_experiment(tmp_path / "e" / "A2D", rows, task="A2D", search="tpe", space={}, max_epochs=2, dataset="office31")
    meta = json.loads((folder / "experiment.json").read_text())
    assert read_experiment(folder).best_trial()["trial_id"] == "t1" == check_finished(read_experiment(folder)).best_trial()["trial_id"]
    (folder / "experiment.json").write_text(json.dumps({**meta, "best_trial": "t0"}))  # a record the rows no longer give
    assert read_experiment(folder).best_trial()["trial_id"] == "t0"
    with pytest.raises(ResultsError, match="gives the best trial as trial t1 but experiment.json recorded trial t0"):
        check_finished(read_experiment(folder))
    (folder / "experiment.json").write_text(json.dumps({k: v for k, v in meta.items() if k != "best_trial"} | {"status": "running"}))
    assert read_experiment(folder).best_trial()["trial_id"] == "t1"  # no record yet: the rule


def test_a_status_that_is_not_an_experiment_status_is_a_problem(tmp_path):
    from ssot.results.experiment import EXPERIMENT_STATUSES, write_experiment
    from tests.fixtures.experiments import write_edge_tpe

    folder = write_edge_tpe(tmp_path / "x" / "A2D")
    experiment = read_experiment(folder)
    assert experiment.status in EXPERIMENT_STATUSES and not any("status" in p.message for p in experiment.problems)
    write_experiment(folder, {**experiment.meta, "status": "done"}, experiment.trials, experiment.best_config)
    again = read_experiment(folder)
    assert again.status == "done" and again.trials is not None and len(again.trials) == len(experiment.trials)
    assert [p.message for p in again.problems if "status" in p.message] == [
        "has the status 'done', not one of running, finished, errored: read as a search that did not finish"]
