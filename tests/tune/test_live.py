"""`tune/live.py` and the live files of a running search (written by its record)."""
from __future__ import annotations

import json
from types import SimpleNamespace

import pandas as pd
import pytest

from ssot.results.experiment import BEST_CONFIG_FILE, EXPERIMENT_FILE, FINISHED, TRIALS_FILE, parse_trials
from ssot.results.trials import RUNNING, best_trial, trial_table
from tune import members


# ------------------------------------------------------------------------------------ live views
def test_trials_csv_grows_after_each_finished_trial_while_the_search_says_running(finished_search):
    seen = finished_search.snapshots
    # when the k-th trial ends, at least k trials are in the file as ended (the next one may have
    # reported its last epoch already: two trials run at once), and the file only grows
    ended = [s["ended"] for s in seen]
    assert len(ended) == 3 and all(e >= k for k, e in enumerate(ended, 1)) and ended == sorted(ended) and ended[-1] == 3, ended
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


def test_a_failed_live_write_is_one_warning_and_never_ends_the_search(finished_search, tmp_path, capsys):
    from tune.experiment import open_record
    from tune.options import SearchOptions, base_config

    (tmp_path / "file").write_text("")
    info = json.loads((finished_search.folder / EXPERIMENT_FILE).read_text())
    options = SearchOptions(task="digits", num_samples=3, base={"epochs": finished_search.epochs}, optuna_storage=finished_search.storage)
    record = open_record(options, base_config(options), str(finished_search.folder), info)
    record.path = str(tmp_path / "file" / "exp")  # where the live files cannot be written (a file in the way)
    for _ in range(2):
        record.write_live()
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
    ended = [0]
    lines = TrialLines(str(tmp_path), lambda: ended[0])
    lines.setup()
    config = {"lambda_ot": 1.0, "lambda_ent": 1.0, "eps": 1.0, "potential_width": 256}
    trials = []
    for k in range(4):  # four populations of 4, the first two running at once
        unit, ids = members.unit_ids(4 * k, k, 4, 4, 16)
        params = {**members.proposal({m: {**config, "lambda_ot": 0.1 * (i + 1)} for i, m in enumerate(ids)}), "_unit": unit}
        report = members.report({m: {"epoch": 3, "target_acc": [0.5, 0.9, 0.7, 0.6][i]} for i, m in enumerate(ids)}, "target_acc", "max")
        trials.append(SimpleNamespace(trial_id=f"r{k}", status="RUNNING", config=params, last_result=report))
    ended[0] = 4  # the configs that ended, as the record counts them (earlier drivers' too)
    lines.on_trial_complete(0, trials, trials[0])
    ended[0] = 8
    lines.on_trial_complete(0, trials, trials[1])
    first, second = capsys.readouterr().out.splitlines()
    assert first.startswith("[4/16 configs, 0:30 elapsed, ~1:30 left] trial p0000 (4 configs, best p0000-m01): epoch 3, "
                            "target_acc 0.9000  lambda_ot 0.2 "), first
    assert second.startswith("[8/16 configs, 0:30 elapsed, ~0:30 left] trial p0001 (4 configs, best p0001-m01)"), second
