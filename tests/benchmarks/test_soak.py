"""benchmarks/soak.py: its checks find what is wrong, and a reduced soak (2 kills of a population search) finds nothing."""
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
def test_a_reduced_soak_of_a_population_search_finds_nothing_wrong_and_keeps_the_contract(tmp_path):
    """2 kills of a population search (within 0.3 s of a population's new state, then in the final
    outputs), each resumed: a replay of a reference's 5 configs (--configs-from: populations of 3
    and 2) with its study in a sqlite database (--optuna-storage). No epoch lost or repeated, each
    member's values those of its population trained in one go, trials.csv, best_config.json, the
    study and the trials' files agree, nothing left RUNNING; the population cut off continued from
    its state; every consumer of the results reads the search (the contract). (Each driver starts
    its own Ray: about 20 s here, so the soak cannot be much shorter.)"""
    from ssot.results.space import default_space
    from tests.fixtures.contract import check_consumers
    from tests.fixtures.experiments import trial_rows, write_experiment

    reference = tmp_path / "e2e" / "ref" / "digits"
    lambdas = [0.003, 0.05, 0.4, 2.0, 8.0]
    rows = [row for i, lam in enumerate(lambdas) for row in trial_rows("digits", "random", f"t{i}", {
        "lambda_ot": lam, "lambda_ent": 0.1 * (i + 1), "eps": 0.3 * (i + 1), "potential_width": [64, 128, 256, 512, 1024][i]},
        [0.5, 0.6], "completed")]
    write_experiment(reference, rows, task="digits", search="random", space=default_space(), max_epochs=2)
    out = tmp_path / "soak"
    proc = subprocess.run([sys.executable, str(SCRIPT), "--task", "digits", "--kills", "2", "--phases", "checkpoint,final",
                           "--population", "3", "--num-samples", "5", "--epochs", "4", "--iters-per-epoch", "20", "--seed", "1",
                           "--out", str(out), "--", "--configs-from", str(reference), "--optuna-storage", f"sqlite:///{tmp_path}/optuna.db",
                           "--set", "bottleneck_dims=[64]", "--set", "source_eval_samples=200"],
                          capture_output=True, text=True, timeout=900)
    line = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else ""
    assert proc.returncode == 0, line + proc.stderr[-3000:]
    for part in ("2 of 2 kills (checkpoint 1, final 1)", "lost epochs 0, duplicated epochs 0, lost configs 0",
                 "epochs unlike an uninterrupted run 0 of", "disagreeing trials 0", "left RUNNING in the study 0", "processes left 0"):
        assert part in line, line
    report = json.loads((out / "soak.json").read_text())
    assert report["compared_epochs"] >= 5 and [d["status"] for d in report["drivers"]] == ["killed"] * 2 + [0]
    exp = out / "runs" / "soak" / "digits"
    info = json.loads((exp / "experiment.json").read_text())
    assert info["population"] == 3 and info["configs_from"]["n_configs"] == 5 and info["optuna_storage"].startswith("sqlite:")
    frame = pd.read_csv(exp / "trials.csv", dtype={"trial_id": str})
    last = frame.sort_values("epoch").groupby("trial_id").tail(1)
    assert sorted(last["lambda_ot"]) == pytest.approx(lambdas)  # exactly the reference's configs
    assert sorted(p.name for p in (exp / "trials").iterdir()) == ["p0000", "p0001"]  # the same two populations throughout
    runs = [[json.loads(line)["epoch"] for line in result.read_text().splitlines()] for result in (exp / "ray").glob("p*_*/result.json")]
    assert any(run and run[0] > 1 for run in runs), runs  # the population the kill cut off continued from its state
    check_consumers(out / "runs", exp, tmp_path)
