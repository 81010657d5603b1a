"""benchmarks/soak.py: its checks find what is wrong, and a reduced soak (3 kills of a tiny search) finds nothing."""
from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys

import pandas as pd
import pytest

from tests.fixtures import REPO

SCRIPT = REPO / "benchmarks" / "soak.py"


def _soak_module():
    spec = importlib.util.spec_from_file_location("soak", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def finished(finished_search, tmp_path):
    """A copy of a real finished search (3 trials x 2 epochs) and its Optuna study."""
    root = tmp_path / "copy"
    shutil.copytree(finished_search.results, root / "runs")
    shutil.copy(finished_search.storage.split(":///", 1)[1], root / "optuna.db")
    return root / "runs" / "live" / "digits", f"sqlite:///{root / 'optuna.db'}"


def test_the_checks_count_what_a_kill_could_have_left_wrong(finished):
    pytest.importorskip("optuna")
    soak = _soak_module()
    exp, url = finished
    clean = soak.check(exp, url, reference=False)
    assert (clean["lost_epochs"], clean["duplicated_epochs"], clean["lost_configs"], clean["running_in_study"]) == (0, 0, 0, 0)
    assert clean["disagreeing"] == {}

    frame = pd.read_csv(exp / "trials.csv", dtype={"trial_id": str})
    first = frame["trial_id"].iloc[0]
    wrong = pd.concat([frame[frame["epoch"] != 1], frame.iloc[[-1]]])  # an epoch lost, another repeated
    wrong.loc[wrong.index[0], "target_acc"] = 0.123  # a value the study and the trial's history do not hold
    wrong.to_csv(exp / "trials.csv", index=False)
    import optuna

    study = optuna.load_study(study_name="live/digits", storage=url)
    study.ask()  # a trial a killed driver left RUNNING
    found = soak.check(exp, url, reference=False)
    assert found["lost_epochs"] == 3 and found["duplicated_epochs"] == 1 and found["running_in_study"] == 1
    assert first in found["disagreeing"] and any("trial files" in why for why in found["disagreeing"][first])
    assert any(k.startswith("#") for k in found["disagreeing"])


def test_bad_input_is_one_line_before_any_work(tmp_path):
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "soak.json").write_text("{}")  # an earlier soak's
    for flags, message in ((["--phases", "sometime"], "'--phases' argument must be phases among start"),
                           (["--kills", "-1"], "'--kills' argument must be an int >= 0"),
                           (["--out", str(tmp_path / "taken")], "soak.json")):
        proc = subprocess.run([sys.executable, str(SCRIPT), *flags], capture_output=True, text=True, timeout=120)
        assert proc.returncode == 2 and message in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert [p.name for p in (tmp_path / "taken").iterdir()] == ["soak.json"]


@pytest.mark.slow
def test_a_reduced_soak_kills_the_search_twice_and_finds_nothing_wrong(tmp_path):
    """2 kills (while the study is written, then in the final outputs) of a search of 3 configs x 2
    epochs, each resumed: no epoch lost or repeated, each trial's values those of an uninterrupted
    run, trials.csv, best_config.json, the Optuna study and the trials' files agree, nothing left
    RUNNING. (Each driver starts its own Ray: about 20 s here, so the soak cannot be much shorter.)"""
    out = tmp_path / "soak"
    proc = subprocess.run([sys.executable, str(SCRIPT), "--task", "digits", "--kills", "2", "--phases", "record,final",
                           "--num-samples", "3", "--epochs", "2", "--iters-per-epoch", "5", "--seed", "1", "--out", str(out)],
                          capture_output=True, text=True, timeout=900)
    line = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else ""
    assert proc.returncode == 0, line + proc.stderr[-3000:]
    for part in ("2 of 2 kills (record 1, final 1)", "lost epochs 0, duplicated epochs 0, lost configs 0",
                 "epochs unlike an uninterrupted run 0 of", "disagreeing trials 0", "left RUNNING in the study 0", "processes left 0"):
        assert part in line, line
    report = json.loads((out / "soak.json").read_text())
    assert report["compared_epochs"] >= 3 and [d["status"] for d in report["drivers"]] == ["killed"] * 2 + [0]
