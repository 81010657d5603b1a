"""The search with a real local Ray (2 CPUs) on the embedded digits task."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from ssot.config import SSOTConfig
from ssot.errors import ConfigError, SSOTError
from ssot.trainer import Trainer
from tune import space as spaces
from tune.experiment import SearchOptions, run_search
from tune.outputs import exit_status_of as exit_status

REPO = Path(__file__).resolve().parents[1]
SEARCH = [sys.executable, str(REPO / "tune" / "search.py")]
QUICK = {"epochs": 3, "pretrain_epochs": 2, "iters_per_epoch": 8}


def final_results(frame: pd.DataFrame) -> pd.DataFrame:
    """Each trial's last row of trials.csv (its final epoch and status)."""
    return frame.sort_values(["trial_id", "epoch"]).groupby("trial_id", as_index=False).tail(1)


@pytest.fixture(scope="module")
def ray_local():
    ray = pytest.importorskip("ray")
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)  # never another test's cluster
    yield ray
    ray.shutdown()


def _intervals(path: str) -> list[tuple[float, float]]:
    spans = []
    for result in Path(path).glob("trial_*/result.json"):
        rows = [json.loads(line) for line in result.read_text().splitlines() if line.strip()]
        spans.append((rows[-1]["timestamp"] - rows[-1]["time_total_s"], rows[-1]["timestamp"]))
    return spans


def test_tpe_asha_search_reports_every_epoch_stops_early_and_exports_a_usable_config(ray_local, tmp_path):
    options = SearchOptions(task="digits", num_samples=6, base=QUICK, storage_path=str(tmp_path), name="tpe",
                            grace_period=1, reduction_factor=3, max_concurrent=2, verbose=0)
    outcome = run_search(options)
    frame = outcome.trials
    assert outcome.finished and frame["trial_id"].nunique() == 6
    last = final_results(frame)
    assert set(last["status"]) <= {"completed", "early-stopped"}
    assert (last["status"] == "early-stopped").any() and (last["status"] == "completed").any()
    for _, trial in frame.groupby("trial_id"):  # one row per reported epoch, in order
        assert list(trial["epoch"]) == list(range(1, len(trial) + 1))
    assert (last[last["status"] == "completed"]["epoch"] == 3).all()
    assert (last[last["status"] == "early-stopped"]["epoch"] < 3).all()
    # the paper's default config is evaluated first
    first = frame[frame["trial_id"] == frame["trial_id"].iloc[0]]
    assert ((frame["lambda_ot"] == 1.0) & (frame["lambda_ent"] == 1.0) & (frame["eps"] == 1.0)).any()
    assert first["target_acc"].between(0, 1).all()
    # the best config file loads into the trainer as it is
    best = SSOTConfig.from_json(Path(outcome.path) / "best_config.json")
    completed = last[last["status"] == "completed"]
    top = completed.loc[completed["target_acc"].idxmax()]
    assert best.lambda_ot == pytest.approx(top["lambda_ot"]) and best.epochs == 3
    Trainer(best)
    info = json.loads((Path(outcome.path) / "experiment.json").read_text())
    assert info["status"] == "finished" and info["search"] == "tpe" and info["space"]["eps"]["type"] == "loguniform"
    # trials really ran side by side (some Ray releases ignored the concurrency settings)
    spans = sorted(_intervals(outcome.path))
    assert any(b[0] < a[1] for a, b in zip(spans, spans[1:])), spans


def test_grid_search_runs_every_cell_once(ray_local, tmp_path):
    space = {"lambda_ot": {"type": "grid", "values": [0.1, 1.0]}, "lambda_ent": {"type": "grid", "values": [0.1, 1.0]},
             "eps": {"type": "fixed", "value": 0.5}, "potential_width": {"type": "fixed", "value": 64}}
    options = SearchOptions(task="digits", search="grid", space=space, num_samples=1, base={**QUICK, "epochs": 1},
                            storage_path=str(tmp_path), name="grid", early_stop=False, verbose=0)
    last = final_results(run_search(options).trials)
    cells = sorted(zip(last["lambda_ot"], last["lambda_ent"]))
    assert cells == [(0.1, 0.1), (0.1, 1.0), (1.0, 0.1), (1.0, 1.0)]
    assert (last["eps"] == 0.5).all() and (last["potential_width"] == 64).all()
    assert (last["status"] == "completed").all()


def test_paper_grid_space_is_the_5x5_grid():
    from tune.experiment import expected_trials

    grid = spaces.paper_grid_space()
    assert expected_trials({"space": grid, "num_samples": 2}) == 50
    assert expected_trials({"space": spaces.default_space(), "num_samples": 20}) == 20
    assert grid["lambda_ot"]["values"] == grid["lambda_ent"]["values"] == [1e-3, 1e-2, 1e-1, 1.0, 10.0]
    assert grid["eps"] == {"type": "fixed", "value": 1.0}


def test_a_diverging_trial_is_recorded_and_the_search_goes_on(ray_local, tmp_path):
    space = {"lr": {"type": "grid", "values": [1e-4, 1e30]}}  # lr = 1e30 really diverges
    options = SearchOptions(task="digits", search="grid", space=space, num_samples=1, base={**QUICK, "epochs": 2},
                            storage_path=str(tmp_path), name="diverge", early_stop=False, verbose=0)
    outcome = run_search(options)
    last = final_results(outcome.trials).set_index("lr")
    assert last.loc[1e30, "status"] == "diverged" and "non-finite" in last.loc[1e30, "reason"]
    assert last.loc[1e30, "target_acc"] == 0.0  # a finite placeholder, never NaN
    assert last.loc[1e-4, "status"] == "completed" and outcome.finished
    assert SSOTConfig.from_json(Path(outcome.path) / "best_config.json").lr == 1e-4
    # divergence during source pretraining is a divergence too, not an error
    options = SearchOptions(task="digits", search="grid", space={"lr_pretrain": {"type": "grid", "values": [1e30]}},
                            num_samples=1, base={**QUICK, "epochs": 1}, storage_path=str(tmp_path), name="diverge-pre",
                            early_stop=False, verbose=0)
    outcome = run_search(options)
    last = final_results(outcome.trials)
    assert list(last["status"]) == ["diverged"] and "pretraining" in last["reason"].iloc[0]
    assert outcome.status == "finished" and exit_status(outcome) == 3  # nothing usable


def test_existing_experiments_are_never_overwritten(ray_local, tmp_path):
    (tmp_path / "ssot-digits" / "digits").mkdir(parents=True)
    with pytest.raises(SSOTError, match="already exists. Pass --resume"):
        run_search(SearchOptions(task="digits", storage_path=str(tmp_path)))
    with pytest.raises(SSOTError, match="no experiment at .* to resume"):
        run_search(SearchOptions(task="digits", storage_path=str(tmp_path), name="other", resume=True))


def test_tpe_proposes_a_trial_only_when_a_slot_is_free(ray_local, tmp_path):
    """With 2 slots (2 CPUs, 1 per trial, no --max-concurrent), the k-th TPE proposal is made after
    at least k - 2 - 1 trials reported (1: the paper's default config, evaluated first)."""
    import pickle

    options = SearchOptions(task="digits", num_samples=5, base={"epochs": 1, "pretrain_epochs": 1, "iters_per_epoch": 3},
                            storage_path=str(tmp_path), name="slots", early_stop=False, verbose=0)
    outcome = run_search(options)
    state = next(Path(outcome.path).glob("searcher-state-*.pkl"))
    study = pickle.loads(state.read_bytes())["_ot_study"]  # Optuna's record of every ask and tell
    proposals = sorted(study.trials, key=lambda t: t.datetime_start)
    reports = sorted(t.datetime_complete for t in proposals)
    assert len(proposals) == 5 and None not in reports
    for k, trial in enumerate(proposals, start=1):
        assert sum(done <= trial.datetime_start for done in reports) >= k - 2 - 1, (k, proposals, reports)


def test_a_final_run_of_a_trials_config_reproduces_its_accuracies(ray_local, tmp_path):
    """A trial runs with its CPU share of threads, recorded in its config: a standalone run of
    best_config.json gives the trial's per-epoch accuracies exactly (same machine)."""
    import torch

    from ssot.trainer import run

    options = SearchOptions(task="digits", search="grid", space={"lambda_ot": {"type": "grid", "values": [1.0]}},
                            num_samples=1, base={"epochs": 2, "pretrain_epochs": 1, "iters_per_epoch": 5},
                            storage_path=str(tmp_path), name="repro", early_stop=False, verbose=0)
    outcome = run_search(options)
    config = SSOTConfig.from_json(Path(outcome.path) / "best_config.json")
    assert config.num_threads == 1
    threads = torch.get_num_threads()
    try:
        record = run(config)
    finally:
        torch.set_num_threads(threads)
    trial = outcome.trials.sort_values("epoch")
    assert [e["target_acc"] for e in record["epochs"]] == trial["target_acc"].tolist()
    assert record["config"]["num_threads"] == 1


def test_zero_epochs_are_refused_before_anything_starts(tmp_path):
    with pytest.raises(ConfigError, match=r"'epochs' parameter of a search must be an int >= 1 \(ASHA's max_t\). Got 0 instead"):
        run_search(SearchOptions(task="digits", base={"epochs": 0}, storage_path=str(tmp_path)))
    assert list(tmp_path.iterdir()) == []


def test_errored_trials_are_recorded_in_one_line_and_rerun_by_resume(ray_local, tmp_path, capsys):
    """Every trial errors (the shared pretrained-model folder is a file); the experiment says so,
    each error is one printed line with its traceback's path, and --resume re-runs the trials."""
    import dataclasses

    blocker = tmp_path / "err" / "_pretrained"
    blocker.parent.mkdir()
    blocker.write_text("not a folder")
    options = SearchOptions(task="digits", num_samples=2, base={"epochs": 1, "pretrain_epochs": 1, "iters_per_epoch": 3},
                            storage_path=str(tmp_path), name="err", early_stop=False, max_concurrent=2, verbose=1,
                            max_failures=0)  # the error is deterministic: no restarts (tests/test_cluster.py has them)
    outcome = run_search(options)
    out = capsys.readouterr()
    assert outcome.status == "errored" and not outcome.finished and exit_status(outcome) == 3
    assert set(outcome.trials["status"]) == {"errored"}
    info = json.loads((Path(outcome.path) / "experiment.json").read_text())
    assert info["status"] == "errored" and info["best_trial"] is None
    lines = [line for line in out.out.splitlines() if "ERRORED" in line]
    assert len(lines) == 2 and all("FileExistsError" in line and "error.txt" in line for line in lines), out.out
    assert "Traceback" not in out.out + out.err
    blocker.unlink()  # the user fixes the cause, then resumes
    resumed = run_search(dataclasses.replace(options, resume=True))
    assert resumed.finished and exit_status(resumed) == 0
    assert set(final_results(resumed.trials)["status"]) == {"completed"} and resumed.trials["trial_id"].nunique() == 2


def test_bad_options_are_refused_with_the_argument_named():
    with pytest.raises(ConfigError, match="'num_samples' parameter must be an int >= 1. Got 0"):
        SearchOptions(task="digits", num_samples=0).validate()
    with pytest.raises(ConfigError, match="range of 'eps' must satisfy 0 < low < high"):
        SearchOptions(task="digits", space={"eps": {"type": "loguniform", "low": 1.0, "high": 0.1}}).validate()
    with pytest.raises(ConfigError, match="'lambda_OT' is not a config field"):
        SearchOptions(task="digits", space={"lambda_OT": {"type": "fixed", "value": 1}}).validate()


def _run_cli(args: list[str], **kw) -> subprocess.CompletedProcess:
    return subprocess.run([*SEARCH, *args], capture_output=True, text=True, cwd=kw.pop("cwd", None), timeout=kw.pop("timeout", 300), **kw)


def test_missing_dataset_exits_at_once_with_where_to_get_it(tmp_path):
    start = time.monotonic()
    env = {k: v for k, v in os.environ.items() if k != "SSOT_DATA_ROOT"}
    proc = _run_cli(["--task", "P2I", "--num-samples", "50", "--data-root", str(tmp_path)], env=env)
    assert proc.returncode == 2 and time.monotonic() - start < 60
    assert "imageclef" in proc.stderr and "imageclef.org" in proc.stderr and "Traceback" not in proc.stderr
    proc = _run_cli(["--task", "P2I"], env=env)
    assert proc.returncode == 2 and "no data root" in proc.stderr


def test_more_gpus_than_the_cluster_has_is_refused_within_seconds(tmp_path):
    start = time.monotonic()
    proc = _run_cli(["--task", "digits", "--gpus-per-trial", "1", "--num-cpus", "2", "--storage-path", str(tmp_path)])
    if proc.returncode == 0:
        pytest.skip("this machine has a GPU")
    assert proc.returncode == 2 and "asks for more GPUs than the Ray cluster has (0)" in proc.stderr
    assert time.monotonic() - start < 90 and "Traceback" not in proc.stderr


@pytest.mark.slow
def test_an_interrupted_search_resumes_to_exactly_the_asked_number_of_trials(tmp_path):
    args = ["--task", "digits", "--num-samples", "4", "--epochs", "3", "--set", "pretrain_epochs=2",
            "--set", "iters_per_epoch=8", "--max-concurrent", "1", "--num-cpus", "2", "--storage-path", str(tmp_path),
            "--name", "crash", "--grace-period", "1", "--verbose", "0", "--optuna-storage", f"sqlite:///{tmp_path}/optuna.db"]
    proc = subprocess.Popen([*SEARCH, *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    exp = tmp_path / "crash" / "digits"
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and not any(p.stat().st_size > 0 for p in exp.glob("trial_*/result.json")):
        time.sleep(0.5)
    proc.send_signal(signal.SIGINT)  # Ctrl-C: Ray saves the experiment state and exits
    proc.communicate(timeout=120)
    assert proc.returncode == 130  # interrupted is not success
    assert (exp / "experiment.json").exists()
    before = json.loads((exp / "experiment.json").read_text())
    assert before["status"] == "running"
    refused = _run_cli(args)
    assert refused.returncode == 2 and "already exists. Pass --resume" in refused.stderr
    resumed = _run_cli([*args, "--resume"])
    assert resumed.returncode == 0, resumed.stdout[-2000:] + resumed.stderr[-2000:]
    frame = pd.read_csv(exp / "trials.csv")
    last = final_results(frame)
    assert last["trial_id"].nunique() == 4
    for _, trial in frame.groupby("trial_id"):  # interrupted trials continued from their checkpoint
        assert list(trial["epoch"]) == list(range(1, len(trial) + 1))
    assert set(last["status"]) <= {"completed", "early-stopped"}
    assert json.loads((exp / "experiment.json").read_text())["status"] == "finished"
    assert "finished; table" in resumed.stdout
    # the resumed search kept the same Optuna study: every trial, with its last value (tune/live.py)
    import optuna

    study = optuna.load_study(study_name="crash/digits", storage=f"sqlite:///{tmp_path}/optuna.db")
    assert sorted(t.value for t in study.trials) == pytest.approx(sorted(last["target_acc"]))


def test_command_line_ranges_and_grid_options():
    from tune.search import build_parser, options_for

    args = build_parser().parse_args(["--task", "digits", "--eps-range", "0.1", "1", "--widths", "64", "128",
                                      "--epochs", "4", "--set", "lr=3e-4", "--set", "use_mask=false"])
    options = options_for(args, "digits", "my-exp")
    assert options.name == "my-exp"
    assert options.space["eps"] == {"type": "loguniform", "low": 0.1, "high": 1.0}
    assert options.space["lambda_ot"] == spaces.default_space()["lambda_ot"]
    assert options.space["potential_width"]["values"] == [64, 128]
    assert options.base == {"epochs": 4, "lr": 3e-4, "use_mask": False, "seed": 0} and options.num_samples == 20
    grid = options_for(build_parser().parse_args(["--task", "digits", "--search", "grid", "--eps", "0.5"]), "digits", None)
    assert grid.num_samples == 1 and grid.space["eps"] == {"type": "fixed", "value": 0.5}
    with pytest.raises(ConfigError, match="--lambda-ot-range set the sampled space; --search grid"):
        options_for(build_parser().parse_args(["--task", "digits", "--search", "grid", "--lambda-ot-range", "1", "2"]), "digits", None)


def test_trials_get_their_cpu_share_of_threads_and_loader_workers():
    from tune.experiment import _param_space, base_config

    options = SearchOptions(task="A2W", cpus_per_trial=2, base={"data_root": "/data"})
    params = _param_space(options, base_config(options), gpus=0.25, cache_dir=None)
    assert params["num_workers"] == 2 and params["num_threads"] == 2 and params["device"] == "cuda"
    assert "lambda_ot" not in params  # sampled by the searcher, not a constant


def test_a_real_search_is_read_by_analysis_and_every_consumer_names_its_best_trial(ray_local, tmp_path):
    """The contract between tune/ and analysis/: a real small search, read with no problem; the
    dashboard's best trial and copyable config are those of best_config.json."""
    import html
    import re

    from analysis.dashboard import build_dashboard
    from analysis.data.experiments import load_experiments
    from tune import export

    options = SearchOptions(task="digits", num_samples=3, base={"epochs": 2, "pretrain_epochs": 1, "iters_per_epoch": 5},
                            storage_path=str(tmp_path / "runs"), name="contract", early_stop=False, max_concurrent=2,
                            verbose=0)
    outcome = run_search(options)
    folder = Path(outcome.path)
    experiments, problems = load_experiments(tmp_path / "runs")
    assert problems == [] and len(experiments) == 1 and experiments[0].trials["trial_id"].nunique() == 3
    best_file = json.loads((folder / "best_config.json").read_text())
    best_id = json.loads((folder / "experiment.json").read_text())["best_trial"]
    page = build_dashboard(tmp_path / "runs", out=tmp_path / "dashboard.html", images=False).path.read_text()
    named = re.search(r'<p class="mode-final best-line">[^<]*<b data-trial="([^"]+)">', page).group(1)
    shown = json.loads(html.unescape(re.search(r'<pre id="cfg-e0">(.*?)</pre>', page, re.S).group(1)))
    assert named == best_id == export.load_experiment(folder).best_trial
    assert shown == best_file
    row = final_results(outcome.trials).set_index("trial_id").loc[best_id]
    assert (best_file["lambda_ot"], best_file["potential_width"]) == (pytest.approx(row["lambda_ot"]), row["potential_width"])
    # trials that ended keep no checkpoint (issue 13: a 50-trial ResNet-50 search kept ~16 GB)
    assert list(folder.glob("trial_*")) and not list(folder.glob("trial_*/checkpoint_*"))
