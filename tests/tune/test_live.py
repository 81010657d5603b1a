"""`tune/live.py`: the live files and the Optuna study of a running search."""
from __future__ import annotations

import json
from types import SimpleNamespace

import pandas as pd
import pytest

from ssot.results.experiment import BEST_CONFIG_FILE, EXPERIMENT_FILE, FINISHED, TRIALS_FILE, parse_trials
from ssot.results.trials import COMPLETED, RUNNING, best_trial, trial_table
from tune.live import LiveOutputs


# ------------------------------------------------------------------------------------ live views
def test_trials_csv_grows_after_each_finished_trial_while_the_search_says_running(finished_search):
    seen = finished_search.snapshots
    assert [s["ended"] for s in seen] == [1, 2, 3]  # after the k-th trial ended, k trials are in the file as ended
    assert {s["status"] for s in seen} == {RUNNING}
    assert json.loads((finished_search.folder / EXPERIMENT_FILE).read_text())["status"] == FINISHED
    final = pd.read_csv(finished_search.folder / TRIALS_FILE, dtype={"trial_id": str})
    live = seen[-1]["frame"]  # the last live file already holds every epoch of every trial
    key = ["trial_id", "epoch"]
    assert live.sort_values(key)[[*key, "target_acc", "lambda_ot", "status"]].reset_index(drop=True).equals(
        final.sort_values(key)[[*key, "target_acc", "lambda_ot", "status"]].reset_index(drop=True))
    assert seen[-1]["best"] == json.loads((finished_search.folder / BEST_CONFIG_FILE).read_text())
    for snap in seen:  # the best config so far is the best of the trials ended so far
        table = trial_table(parse_trials(snap["frame"].to_csv(index=False), finished_search.folder, []), finished_search.epochs)
        best = best_trial(table)
        assert snap["best"]["lambda_ot"] == pytest.approx(best["lambda_ot"])
    assert not list(finished_search.folder.glob(".*.tmp"))  # atomic writes leave no temporary file


def test_live_outputs_keep_earlier_rows_of_a_resumed_search(finished_search, tmp_path):
    """Unit level, with fake trials: a trial resumed from its checkpoint keeps its earlier epochs,
    trials not seen again keep their rows, a running trial is 'running'."""
    info = json.loads((finished_search.folder / EXPERIMENT_FILE).read_text())
    old = pd.read_csv(finished_search.folder / TRIALS_FILE, dtype={"trial_id": str})
    ids = sorted(old["trial_id"].unique())
    (tmp_path / TRIALS_FILE).write_text(old[~((old["trial_id"] == ids[0]) & (old["epoch"] == 2))].to_csv(index=False))
    meta = (finished_search.folder / EXPERIMENT_FILE).read_text()
    (tmp_path / EXPERIMENT_FILE).write_text(meta)
    live = LiveOutputs(str(tmp_path), info)
    live.setup()
    resumed = SimpleNamespace(trial_id=ids[0], config=old[old["trial_id"] == ids[0]].iloc[0].to_dict(), error_file=None)
    new = SimpleNamespace(trial_id="new00001", config={"lambda_ot": 0.5, "lambda_ent": 0.5, "eps": 1.0, "potential_width": 64}, error_file=None)
    live.on_trial_result(0, [], resumed, {"epoch": 2, "target_acc": 0.99, "trial_id": ids[0], "config": {}})
    live.on_trial_result(0, [], new, {"epoch": 1, "target_acc": 0.5, "trial_id": "new00001"})
    live.on_trial_complete(0, [], resumed)
    frame = pd.read_csv(tmp_path / TRIALS_FILE, dtype={"trial_id": str})
    first = frame[frame["trial_id"] == ids[0]]
    assert first["epoch"].tolist() == [1, 2] and first["target_acc"].iloc[1] == 0.99
    assert set(first["status"]) == {COMPLETED}
    assert frame[frame["trial_id"] == "new00001"]["status"].tolist() == [RUNNING]
    for other in ids[1:]:
        assert frame[frame["trial_id"] == other]["target_acc"].tolist() == old[old["trial_id"] == other]["target_acc"].tolist()
    assert json.loads((tmp_path / BEST_CONFIG_FILE).read_text())["lambda_ot"] == pytest.approx(resumed.config["lambda_ot"])
    assert (tmp_path / EXPERIMENT_FILE).read_text() == meta  # experiment.json is the search's to write


def test_a_failed_live_write_is_one_warning_and_never_ends_the_search(finished_search, tmp_path, capsys):
    (tmp_path / "file").write_text("")
    live = LiveOutputs(str(tmp_path / "file" / "exp"), json.loads((finished_search.folder / EXPERIMENT_FILE).read_text()))
    for k in range(2):
        trial = SimpleNamespace(trial_id=f"t{k}", config={"lambda_ot": 1.0}, error_file=None)
        live.on_trial_result(0, [], trial, {"epoch": 1, "target_acc": 0.5})
        live.on_trial_complete(0, [], trial)
    err = capsys.readouterr().err
    assert err.count("warning: live trials.csv not written") == 1 and len(err.strip().splitlines()) == 1


