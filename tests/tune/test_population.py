"""Searches of several configs per trial (populations): the one searcher (`tune/searcher.py`), and a real search killed and resumed."""
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
from ssot.results.space import default_space, optuna_space  # noqa: E402
from tests.fixtures import REPO  # noqa: E402
from tests.fixtures.study import check_study_agrees  # noqa: E402
from tune import members  # noqa: E402
from tune.optuna_study import StudyMirror  # noqa: E402
from tune.searcher import StudySearcher  # noqa: E402

FINISHED = (optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.PRUNED, optuna.trial.TrialState.FAIL)
DEFAULT = {"lambda_ot": 1.0, "lambda_ent": 1.0, "eps": 1.0, "potential_width": 256}


class CountingSampler(optuna.samplers.RandomSampler):
    """A random sampler that records how many trials had ended when each trial was asked."""

    def __init__(self) -> None:
        super().__init__(seed=0)
        self.seen: list[int] = []

    def before_trial(self, study, trial) -> None:
        self.seen.append(len(study.get_trials(deepcopy=False, states=FINISHED)))


def entry(epoch: int, acc: float, **extra) -> dict:
    return {"epoch": epoch, "target_acc": acc, "diverged": 0, "reason": "", "early_stopped": 0, **extra}


def reported(entries: dict) -> dict:
    """A trial's report as Ray hands it to a searcher: flattened (``members/<id>/<name>``)."""
    report = members.report(entries, "target_acc", "max")
    flat = {k: v for k, v in report.items() if k != members.MEMBERS_KEY}
    for member, values in report[members.MEMBERS_KEY].items():
        flat.update({f"members/{member}/{k}": v for k, v in values.items()})
    return flat


def searcher(sampler=None, **kw) -> StudySearcher:
    return StudySearcher(optuna_space(default_space()), "target_acc", "max", sampler or CountingSampler(), members=3, total=7,
                         max_epochs=2, **kw)


def test_each_trial_is_asked_after_every_result_so_far_and_every_member_is_told(tmp_path):
    sampler = CountingSampler()
    search = searcher(sampler, enqueued=[DEFAULT])
    first = search.suggest("r1")
    ids = list(first[members.MEMBERS_KEY])
    assert ids == ["p00-m00-r1", "p00-m01-r1", "p00-m02-r1"] and first[members.MEMBERS_KEY][ids[0]] == DEFAULT
    assert {k: first[k] for k in DEFAULT} == DEFAULT  # the first member's config at the top
    search.on_trial_result("r1", reported({ids[0]: entry(1, 0.6), ids[1]: entry(1, 0.4, early_stopped=1), ids[2]: entry(1, 0.5)}))
    search.on_trial_result("r1", reported({ids[0]: entry(2, 0.8, target_pred="0 1"),
                                           ids[2]: entry(2, 0.0, diverged=1, reason="non-finite")}))
    search.on_trial_complete("r1", None)
    trials = search.study.trials
    assert [t.state for t in trials] == [optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.PRUNED,
                                         optuna.trial.TrialState.COMPLETE]
    assert trials[0].value == 0.8 and trials[0].intermediate_values == {1: 0.6, 2: 0.8}
    assert trials[1].intermediate_values == {1: 0.4} and trials[1].value == 0.4  # PRUNED at its rung, with the values it reached
    assert trials[2].value == 0.0  # diverged: the metric's worst value
    assert [t.user_attrs["member_id"] for t in trials] == ids and {t.user_attrs["ray_trial_id"] for t in trials} == {"r1"}
    assert [t.user_attrs["status"] for t in trials] == ["completed", "early-stopped", "diverged"]
    assert trials[0].user_attrs["target_acc"] == 0.8 and search.study.metric_names == ["target_acc"]
    second = search.suggest("r2")[members.MEMBERS_KEY]
    assert len(second) == 3 and sampler.seen[-3:] == [3, 3, 3]  # proposed from every result told so far
    path = tmp_path / "searcher.pkl"
    search.save(str(path))
    restored = searcher()
    restored.restore(str(path))
    third = restored.suggest("r3")[members.MEMBERS_KEY]
    assert list(third) == ["p02-m00-r3"]  # 7 = 3 + 3 + 1
    assert restored.suggest("r4") == StudySearcher.FINISHED
    restored.on_trial_complete("r2", None, error=True)  # a trial that errored: its members FAIL
    assert [t.state for t in restored.study.trials[3:6]] == [optuna.trial.TrialState.FAIL] * 3
    # --resume runs an errored trial again: its member is asked again, a second attempt of the same config
    again = list(second)[0]
    restored.on_trial_result("r2", reported({again: entry(1, 0.3)}))
    retry = restored.study.trials[-1]
    assert retry.state == optuna.trial.TrialState.RUNNING and retry.params == second[again]
    assert retry.user_attrs["member_id"] == again and retry.user_attrs["attempt"] == 2 and retry.intermediate_values == {1: 0.3}


def test_a_searcher_proposes_only_into_free_slots():
    search = StudySearcher(optuna_space(default_space()), "target_acc", "max", CountingSampler(), members=1, total=5,
                           max_epochs=2, slots=2)
    assert search.suggest("a") is not None and search.suggest("b") is not None
    assert search.suggest("c") is None  # both slots busy: TPE waits for a result
    search.on_trial_complete("a", reported({"a": entry(2, 0.5)}))
    assert list(search.suggest("c")[members.MEMBERS_KEY]) == ["c"]  # one config per trial: the member is the Ray trial


def test_the_database_copy_is_one_save_behind_and_a_resume_fails_the_trials_a_dead_driver_asked_for(tmp_path):
    """With --optuna-storage the study's copy holds nothing Ray's saved state does not: it is
    written one save behind (Ray's state is on the storage by then) and at the end; on --resume
    the trials a killed driver asked for after Ray's last save are failed there, and their configs
    asked again."""
    url = f"sqlite:///{tmp_path}/optuna.db"

    def database():
        return optuna.load_study(study_name="exp/digits", storage=url)

    search = searcher(mirror=StudyMirror(url, "exp/digits", "max", "target_acc"), enqueued=[DEFAULT] * 4)  # one still queued at the saves
    ids = list(search.suggest("r1")[members.MEMBERS_KEY])
    search.on_trial_result("r1", reported({m: entry(1, 0.5) for m in ids}))
    search.save(str(tmp_path / "s1.pkl"))  # Ray's save 1
    assert "exp/digits" not in optuna.get_all_study_names(url)  # nothing saved before save 1
    search.on_trial_complete("r1", reported({m: entry(2, 0.7) for m in ids}))
    search.save(str(tmp_path / "s2.pkl"))  # Ray's save 2: the database gets save 1
    copy = database()
    assert [t.state.name for t in copy.trials] == ["RUNNING"] * 3 and copy.metric_names == ["target_acc"]
    assert [t.intermediate_values for t in copy.trials] == [{1: 0.5}] * 3
    orphan = list(search.suggest("r2")[members.MEMBERS_KEY])  # asked after save 2: the driver is killed now
    search.on_trial_result("r2", reported({m: entry(1, 0.4) for m in orphan}))
    search.flush_saved()  # had the search ended: save 2 in the database
    assert [t.state.name for t in database().trials] == ["COMPLETE"] * 3
    # what a killed driver leaves: its database holds save 2 and the orphans (an earlier version wrote at once)
    killed = database()
    for member in orphan:
        killed.enqueue_trial(search.study.trials[search.numbers[member]].params, user_attrs={"member_id": member, "attempt": 1})
        killed.ask()
    resumed = searcher(mirror=StudyMirror(url, "exp/digits", "max", "target_acc"))
    resumed.restore(str(tmp_path / "s2.pkl"))
    states = [t.state.name for t in database().trials]
    assert states == ["COMPLETE"] * 3 + ["FAIL"] * 3  # no trial left RUNNING, no queued config copied
    assert all("killed" in t.user_attrs["failed_because"] for t in database().trials[3:])
    again = resumed.suggest("r3")[members.MEMBERS_KEY]  # the orphans' configs are asked again
    lost = [search.study.trials[search.numbers[m]].params for m in orphan]
    assert list(again.values()) == lost


@pytest.fixture(scope="module")
def digits_cache(tmp_path_factory):
    from ssot.features import build_feature_cache

    out = tmp_path_factory.mktemp("population-search") / "digits.pt"
    build_feature_cache(SSOTConfig.for_task("digits", pretrain_epochs=1, device="cpu", num_threads=1), out, progress=False)
    return out


@pytest.mark.slow
def test_a_population_search_killed_and_resumed_loses_no_epoch_and_keeps_the_contract(digits_cache, tmp_path):
    """A population search that replays a reference's 5 configs (populations of 3 and 2) is killed
    with SIGKILL after its first checkpoint, its Ray state cut short as by a kill during Ray's copy
    of it, then resumed: each member's epochs are recorded once
    and equal a population trained in one go; the Optuna study and trials.csv agree trial by trial;
    every consumer of the results reads the search (the contract)."""
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
    env = {**os.environ, "TUNE_GLOBAL_CHECKPOINT_S": "0"}  # Ray saves the experiment state at every result
    exp = tmp_path / "runs" / "screen" / "digits"
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, start_new_session=True)
    deadline, checkpoints = time.monotonic() + 300, []
    while time.monotonic() < deadline and not checkpoints:
        checkpoints = list(exp.glob("trial_*/checkpoint_*"))
        time.sleep(0.1)
    os.killpg(proc.pid, signal.SIGKILL)  # the driver and everything it started, at once, in the middle of a population
    proc.communicate(timeout=60)
    # and as if the kill fell while Ray copied its state into the folder (in place: the file cut
    # short), which made this search impossible to resume before the last good copy (tune.state)
    newest = sorted(exp.glob("experiment_state-*.json"))[-1]
    newest.write_bytes(newest.read_bytes()[: newest.stat().st_size // 2])
    interrupted = checkpoints[0].parent
    assert json.loads((exp / "experiment.json").read_text())["status"] == "running"
    resumed = subprocess.run([*command, "--resume"], capture_output=True, text=True, env=env, timeout=600)
    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]

    info = json.loads((exp / "experiment.json").read_text())
    assert info["population"] == 3 and info["configs_from"]["path"] == str(reference) and info["configs_from"]["n_configs"] == 5
    assert info["features"]["encoder"] == "pretrained"
    frame = pd.read_csv(exp / "trials.csv", dtype={"trial_id": str})
    assert frame["trial_id"].nunique() == 5
    assert len(list(exp.glob("trial_*"))) == 2  # restored, not started again: the same two populations
    assert interrupted.name.removeprefix("trial_") in {t.rsplit("-", 1)[1] for t in frame["trial_id"]}
    reported = [json.loads(line)["epoch"] for line in (interrupted / "result.json").read_text().splitlines()]
    assert reported.count(1) == 1 and max(reported) == 4  # continued from its checkpoint, not from the start
    for _, trial in frame.groupby("trial_id"):  # every epoch once, none lost
        assert list(trial["epoch"]) == list(range(1, len(trial) + 1))
    last = frame.sort_values("epoch").groupby("trial_id").tail(1).sort_values("trial_id")
    assert sorted(last["lambda_ot"]) == pytest.approx(lambdas)  # exactly the reference's configs
    assert set(last["status"]) == {"completed", "early-stopped"} and (last["status"] == "completed").sum() == 2  # 1 + 1

    # the killed and resumed search equals each population trained in one go
    for _, group in last.groupby(last["trial_id"].str[:3]):
        configs = [trial_config(row, info) for _, row in group.iterrows()]
        records = Population(configs, rungs=asha_rungs(1, 3, 4), reduction_factor=3).fit()
        for trial_id, record in zip(group["trial_id"], records):
            mine = frame[frame["trial_id"] == trial_id]
            assert list(mine["target_acc"]) == [e["target_acc"] for e in record["epochs"]]
            assert list(mine["loss_total"]) == pytest.approx([e["loss_total"] for e in record["epochs"]], rel=1e-5)

    # every member's result was told to the Optuna study (completed COMPLETE, early-stopped PRUNED), trial by trial
    study = optuna.load_study(study_name="screen/digits", storage=f"sqlite:///{tmp_path}/optuna.db")
    assert sorted(t.state.name for t in study.trials) == ["COMPLETE", "COMPLETE", "PRUNED", "PRUNED", "PRUNED"]
    check_study_agrees(study, frame)

    check_consumers(tmp_path / "runs", exp, tmp_path)
