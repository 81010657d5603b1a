"""Searches of several configs per trial (populations): the members asked and told through the record
(`tune/record.py`), and a real search killed and resumed."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pandas as pd
import pytest

pytest.importorskip("optuna")
pytest.importorskip("ray")

import optuna  # noqa: E402

from ssot.config import SSOTConfig  # noqa: E402
from tests.fixtures import REPO  # noqa: E402
from tests.fixtures.study import check_study_agrees  # noqa: E402
from tune import members  # noqa: E402
from tune.record import Record  # noqa: E402
from tune.space import default_space, optuna_space  # noqa: E402

FINISHED = (optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.PRUNED, optuna.trial.TrialState.FAIL)
DEFAULT = {"lambda_ot": 1.0, "lambda_ent": 1.0, "eps": 1.0, "potential_width": 256}


class CountingSampler(optuna.samplers.RandomSampler):
    """A random sampler that records how many trials had ended when each trial was asked."""

    def __init__(self, seen: list[int], seed: int) -> None:
        super().__init__(seed=seed)
        self.seen = seen

    def before_trial(self, study, trial) -> None:
        self.seen.append(len(study.get_trials(deepcopy=False, states=FINISHED)))


def entry(epoch: int, acc: float, **extra) -> dict:
    return {"epoch": epoch, "target_acc": acc, "diverged": 0, "reason": "", "early_stopped": 0, **extra}


def reported(entries: dict) -> dict:
    """A trial's report as Ray hands it to a scheduler: flattened (``members/<id>/<name>``)."""
    report = members.report(entries, "target_acc", "max")
    flat = {k: v for k, v in report.items() if k != members.MEMBERS_KEY}
    for member, values in report[members.MEMBERS_KEY].items():
        flat.update({f"members/{member}/{k}": v for k, v in values.items()})
    return flat


def test_each_trial_is_asked_after_every_result_so_far_and_every_member_is_told(tmp_path):
    seen: list[int] = []
    info = {"metric": "target_acc", "mode": "max", "max_epochs": 2, "population": 3, "num_samples": 7, "space": default_space(),
            "rungs": [1], "reduction_factor": 3, "optuna_study": "exp/digits", "base_config": SSOTConfig().to_dict(),
            "task": "digits", "search": "random"}
    record = Record(str(tmp_path), info, optuna_space(default_space()), lambda k: CountingSampler(seen, k), [DEFAULT])
    first = record.next()
    ids = list(first.members)
    assert first.id == "p0000" and ids == ["p0000-m00", "p0000-m01", "p0000-m02"] and first.members[ids[0]] == DEFAULT
    assert not record.observe(first.id, reported({ids[0]: entry(1, 0.6), ids[1]: entry(1, 0.4, early_stopped=1), ids[2]: entry(1, 0.5)}))
    record.observe(first.id, reported({ids[0]: entry(2, 0.8, target_pred="0 1"), ids[2]: entry(2, 0.0, diverged=1, reason="non-finite")}))
    trials = record.study.trials
    assert [t.state for t in trials] == [optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.PRUNED,
                                         optuna.trial.TrialState.COMPLETE]
    assert trials[0].value == 0.8 and trials[0].intermediate_values == {1: 0.6, 2: 0.8}
    assert trials[1].intermediate_values == {1: 0.4} and trials[1].value == 0.4  # PRUNED at its rung, with the values it reached
    assert trials[2].value == 0.0  # diverged: the metric's worst value
    assert [t.user_attrs["member_id"] for t in trials] == ids and {t.user_attrs["unit"] for t in trials} == {"p0000"}
    assert [t.user_attrs["status"] for t in trials] == ["completed", "early-stopped", "diverged"]
    assert trials[0].user_attrs["target_acc"] == 0.8 and record.study.metric_names == ["target_acc"]
    second = record.next()
    assert len(second.members) == 3 and seen == [0, 0, 3, 3, 3]  # each sampled from every result told so far
    third = record.next()
    assert list(third.members) == ["p0002-m00"] and record.next() is None  # 7 = 3 + 3 + 1
    record.ended(second.id, "RuntimeError: boom")  # a trial that errored: its members FAIL
    assert [t.state for t in record.study.trials[3:6]] == [optuna.trial.TrialState.FAIL] * 3


@pytest.fixture(scope="module")
def digits_cache(tmp_path_factory):
    from ssot.features import build_feature_cache

    out = tmp_path_factory.mktemp("population-search") / "digits.pt"
    build_feature_cache(SSOTConfig.for_task("digits", pretrain_epochs=1, device="cpu", num_threads=1), out, progress=False)
    return out


@pytest.mark.slow
def test_a_population_search_killed_and_resumed_loses_no_epoch_and_keeps_the_contract(digits_cache, tmp_path):
    """A population search that replays a reference's 5 configs (populations of 3 and 2) is killed
    with SIGKILL after its first state, then resumed: the population continues from its state,
    each member's epochs are recorded once and equal a population trained in one go; the Optuna
    study (in a database) and trials.csv agree trial by trial; every consumer of the results reads
    the search (the contract)."""
    from ssot.population import Population
    from ssot.results.trials import asha_rungs
    from tests.fixtures.contract import check_consumers
    from tests.fixtures.experiments import trial_rows, write_experiment
    from tune.outputs import trial_config

    reference = tmp_path / "e2e" / "ref" / "digits"
    lambdas = [0.003, 0.05, 0.4, 2.0, 8.0]
    rows = [row for i, lam in enumerate(lambdas) for row in trial_rows("digits", "random", f"t{i}", {
        "lambda_ot": lam, "lambda_ent": 0.1 * (i + 1), "eps": 0.3 * (i + 1), "potential_width": [64, 128, 256, 512, 1024][i]},
        [0.5, 0.6], "completed")]
    write_experiment(reference, rows, task="digits", search="random", space=default_space(), max_epochs=2)
    args = ["--task", "digits", "--features", str(digits_cache), "--population", "3", "--configs-from", str(reference),
            "--epochs", "4", "--grace-period", "1", "--set", "pretrain_epochs=1", "--set", "iters_per_epoch=20",
            "--set", "bottleneck_dims=[64]", "--set", "source_eval_samples=200", "--max-concurrent", "1", "--num-cpus", "2",
            "--storage-path", str(tmp_path / "runs"), "--name", "screen", "--quiet",
            "--optuna-storage", f"sqlite:///{tmp_path}/optuna.db"]
    command = [sys.executable, str(REPO / "tune" / "search.py"), *args]
    exp = tmp_path / "runs" / "screen" / "digits"
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    deadline, states = time.monotonic() + 300, []
    while time.monotonic() < deadline and not states:
        states = list(exp.glob("trials/*/epoch-*.pt"))
        time.sleep(0.1)
    os.killpg(proc.pid, signal.SIGKILL)  # the driver and everything it started, at once, in the middle of a population
    proc.communicate(timeout=60)
    interrupted = states[0].parent.name
    assert json.loads((exp / "experiment.json").read_text())["status"] == "running"
    resumed = subprocess.run([*command, "--resume"], capture_output=True, text=True, timeout=600)
    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]

    info = json.loads((exp / "experiment.json").read_text())
    assert info["population"] == 3 and info["configs_from"]["path"] == str(reference) and info["configs_from"]["n_configs"] == 5
    assert info["features"]["encoder"] == "pretrained"
    frame = pd.read_csv(exp / "trials.csv", dtype={"trial_id": str})
    assert frame["trial_id"].nunique() == 5
    assert sorted(p.name for p in (exp / "trials").iterdir()) == ["p0000", "p0001"]  # the same two populations
    runs = [[json.loads(line)["epoch"] for line in result.read_text().splitlines()]
            for result in (exp / "ray").glob(f"{interrupted}_*/result.json")]  # what its Ray trials (one per driver) reported
    assert any(run and run[0] > 1 and run[-1] == 4 for run in runs), runs  # the resumed one continued from its state
    for _, trial in frame.groupby("trial_id"):  # every epoch once, none lost
        assert list(trial["epoch"]) == list(range(1, len(trial) + 1))
    last = frame.sort_values("epoch").groupby("trial_id").tail(1).sort_values("trial_id")
    assert sorted(last["lambda_ot"]) == pytest.approx(lambdas)  # exactly the reference's configs
    assert set(last["status"]) == {"completed", "early-stopped"} and (last["status"] == "completed").sum() == 2  # 1 + 1

    # the killed and resumed search equals each population trained in one go
    for _, group in last.groupby(last["trial_id"].str[:5]):
        configs = [trial_config(row, info) for _, row in group.iterrows()]
        records = Population(configs, rungs=asha_rungs(1, 3, 4), reduction_factor=3).fit()
        for trial_id, record in zip(group["trial_id"], records):
            mine = frame[frame["trial_id"] == trial_id]
            assert list(mine["target_acc"]) == [e["target_acc"] for e in record["epochs"]]
            assert list(mine["loss_total"]) == pytest.approx([e["loss_total"] for e in record["epochs"]], rel=1e-5)

    # every member's result was told to the Optuna study (completed COMPLETE, early-stopped PRUNED), trial by trial
    study = optuna.load_study(study_name="screen/digits", storage=f"sqlite:///{tmp_path}/optuna.db")
    latest = {t.user_attrs["member_id"]: t for t in study.trials}  # each member's last attempt
    assert sorted(t.state.name for t in latest.values()) == ["COMPLETE", "COMPLETE", "PRUNED", "PRUNED", "PRUNED"]
    cut = [t for t in study.trials if t.state.name == "FAIL"]  # the attempts the kill cut off: the interrupted population's
    assert cut and {t.user_attrs["unit"] for t in cut} == {interrupted} and {t.user_attrs["attempt"] for t in cut} == {1}
    check_study_agrees(study, frame)

    check_consumers(tmp_path / "runs", exp, tmp_path)
