"""`tune/live.py`: the live files and the Optuna study of a running search."""
from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

from ssot.results.experiment import BEST_CONFIG_FILE, EXPERIMENT_FILE, FINISHED, TRIALS_FILE, parse_trials
from ssot.results.trials import COMPLETED, RUNNING, best_trial, trial_table
from tune import members
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


def _resumed_copy(finished_search, tmp_path, running: int) -> tuple[Path, dict, list[str]]:
    """A copy of the finished search whose Ray state holds its trial ``running`` as still running
    (its end not saved: a driver killed, or a storage that failed, before Ray saved it) and whose
    experiment.json says running: what a --resume starts from."""
    import shutil

    folder = tmp_path / "live" / "digits"
    shutil.copytree(finished_search.folder, folder)
    state_file = sorted(folder.glob("experiment_state-*.json"))[-1]
    saved = json.loads(state_file.read_text())
    trial = json.loads(saved["trial_data"][running][0])
    trial["status"] = "RUNNING"
    saved["trial_data"][running][0] = json.dumps(trial)
    state_file.write_text(json.dumps(saved))
    info = json.loads((folder / EXPERIMENT_FILE).read_text())
    info["status"] = RUNNING
    (folder / EXPERIMENT_FILE).write_text(json.dumps(info))
    ids = [json.loads(t)["trial_id"] for t, _ in saved["trial_data"]]
    return folder, info, ids


def test_a_resumed_search_rewrites_its_live_files_from_what_ray_recorded(finished_search, tmp_path):
    """Issue 31, defect 8: after a storage failure, --resume warned "live trials.csv not written"
    (a TypeError merging its earlier trials.csv) and the live files stayed stale. The live files
    of a resumed search are built from the trials Ray restored: a trial restored at its end
    (no new result) keeps its epochs and its status, a trial resumed from its checkpoint keeps its
    earlier epochs, a new trial is running, the others keep their rows."""
    folder, info, ids = _resumed_copy(finished_search, tmp_path, running=0)
    old = pd.read_csv(finished_search.folder / TRIALS_FILE, dtype={"trial_id": str})
    (folder / TRIALS_FILE).write_text(old[old["trial_id"] != ids[1]].to_csv(index=False))  # stale: one trial missing
    live = LiveOutputs(str(folder), info)
    live.setup()
    restored = SimpleNamespace(trial_id=ids[0], config={}, error_file=None)
    live.on_trial_complete(0, [], restored)  # ended at once: its end had not been saved
    frame = pd.read_csv(folder / TRIALS_FILE, dtype={"trial_id": str})
    key = ["trial_id", "epoch"]
    assert frame[[*key, "target_acc", "status"]].equals(old[[*key, "target_acc", "status"]]), frame
    new = SimpleNamespace(trial_id="new00001", config={"lambda_ot": 0.5, "lambda_ent": 0.5, "eps": 1.0, "potential_width": 64},
                          error_file=None)
    again = SimpleNamespace(trial_id=ids[1], config={}, error_file=None)
    live.on_trial_result(0, [], new, {"epoch": 1, **members.report({"new00001": {"epoch": 1, "target_acc": 0.5}}, "target_acc", "max")})
    live.on_trial_result(0, [], again, members.report({ids[1]: {"epoch": 2, "target_acc": 0.99}}, "target_acc", "max"))
    live.on_trial_complete(0, [], again)
    frame = pd.read_csv(folder / TRIALS_FILE, dtype={"trial_id": str})
    second = frame[frame["trial_id"] == ids[1]]
    assert second["epoch"].tolist() == [1, 2] and second["target_acc"].tolist()[1] == 0.99
    assert second["target_acc"].iloc[0] == old.loc[(old["trial_id"] == ids[1]) & (old["epoch"] == 1), "target_acc"].iloc[0]
    assert set(second["status"]) == {COMPLETED}
    assert frame[frame["trial_id"] == "new00001"]["status"].tolist() == [RUNNING]
    assert frame[frame["trial_id"] == ids[2]]["target_acc"].tolist() == old[old["trial_id"] == ids[2]]["target_acc"].tolist()
    assert json.loads((folder / BEST_CONFIG_FILE).read_text())["lambda_ot"] == pytest.approx(
        old.loc[old["trial_id"] == ids[1], "lambda_ot"].iloc[0])
    assert json.loads((folder / EXPERIMENT_FILE).read_text())["status"] == RUNNING  # experiment.json is the search's to write


def test_a_failed_live_write_is_one_warning_and_never_ends_the_search(finished_search, tmp_path, capsys):
    (tmp_path / "file").write_text("")
    live = LiveOutputs(str(tmp_path / "file" / "exp"), json.loads((finished_search.folder / EXPERIMENT_FILE).read_text()))
    for k in range(2):
        trial = SimpleNamespace(trial_id=f"t{k}", config={"lambda_ot": 1.0}, error_file=None)
        live.on_trial_result(0, [], trial, members.report({f"t{k}": {"epoch": 1, "target_acc": 0.5}}, "target_acc", "max"))
        live.on_trial_complete(0, [], trial)
    err = capsys.readouterr().err
    assert err.count("warning: live trials.csv not written") == 1 and len(err.strip().splitlines()) == 1


def test_the_progress_line_counts_configs_against_num_samples_also_with_populations(tmp_path, capsys):
    """Issue 31, defect 9c: the counter read "[1/2]" in a 4-population search (trials created so
    far); issue 32: it counts configs against --num-samples, with the elapsed time (earlier runs
    of a resumed search included) and an estimate of what is left."""
    from ssot.results.experiment import new_meta
    from ssot.results.space import default_space
    from tune.live import TrialLines

    meta = new_meta(task="P2H", dataset="printed", name="screen", search="tpe", space=default_space(), max_epochs=3,
                    num_samples=16, population=4, elapsed_s=30.0)
    (tmp_path / EXPERIMENT_FILE).write_text(json.dumps(meta))
    lines = TrialLines(str(tmp_path))
    lines.setup()
    config = {"lambda_ot": 1.0, "lambda_ent": 1.0, "eps": 1.0, "potential_width": 256}
    trials = []
    for k in range(4):  # four populations of 4, the first two running at once
        ids = [f"p{k:02d}-m{i:02d}-r{k}" for i in range(4)]
        params = members.proposal({m: {**config, "lambda_ot": 0.1 * (i + 1)} for i, m in enumerate(ids)})
        report = members.report({m: {"epoch": 3, "target_acc": [0.5, 0.9, 0.7, 0.6][i]} for i, m in enumerate(ids)}, "target_acc", "max")
        trials.append(SimpleNamespace(trial_id=f"r{k}", status="RUNNING", config=params, last_result=report))
    lines.on_trial_complete(0, trials, trials[0])
    trials[0].status = "TERMINATED"
    lines.on_trial_complete(0, trials, trials[1])
    first, second = capsys.readouterr().out.splitlines()
    assert first.startswith("[4/16 configs, 0:30 elapsed, ~1:30 left] trial r0 (4 configs, best p00-m01-r0): epoch 3, "
                            "target_acc 0.9000  lambda_ot 0.2 "), first
    assert second.startswith("[8/16 configs, 0:30 elapsed, ~0:30 left] trial r1 (4 configs, best p01-m01-r1)"), second
