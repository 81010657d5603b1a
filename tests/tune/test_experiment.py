"""`tune/experiment.py`: real searches on the digits task (local Ray, 2 CPUs)."""
from __future__ import annotations

import json
import math
import signal
import socket
import time
from pathlib import Path

import pytest

from ssot.config import SSOTConfig
from ssot.errors import ConfigError, SSOTError
from ssot.trainer import Trainer
from ssot.validators import DIRECTIONS
from tests.fixtures.contract import check_consumers
from tests.fixtures.experiments import last_rows as final_results
from tests.fixtures.images import make_folders
from tune.experiment import run_search
from tune.options import SearchOptions
from tune.outputs import exit_status_of as exit_status

QUICK = {"epochs": 3, "pretrain_epochs": 2, "iters_per_epoch": 8}





def _study(path: str):
    """The search's Optuna study, as its record keeps it (the experiment folder's journal)."""
    from tune.record import read_study

    return read_study(path, json.loads((Path(path) / "experiment.json").read_text()))


def _intervals(path: str) -> list[tuple[float, float]]:
    """When each config ran: from its Optuna trial's start (asked) to its end (told)."""
    return [(t.datetime_start.timestamp(), t.datetime_complete.timestamp()) for t in _study(path).trials]


def test_tpe_asha_search_reports_every_epoch_stops_early_and_exports_a_usable_config(ray_local, tmp_path):
    options = SearchOptions(task="digits", num_samples=6, base=QUICK, storage_path=str(tmp_path), name="tpe",
                            grace_period=1, reduction_factor=3, max_concurrent=2, verbose=0)
    handler = signal.getsignal(signal.SIGINT)
    outcome = run_search(options)
    assert signal.getsignal(signal.SIGINT) is handler  # Ray Tune's own Ctrl-C handler is not left behind
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
    options = SearchOptions(task="digits", num_samples=5, base={"epochs": 1, "pretrain_epochs": 1, "iters_per_epoch": 3},
                            storage_path=str(tmp_path), name="slots", early_stop=False, verbose=0)
    outcome = run_search(options)
    study = _study(outcome.path)  # the record of every ask and tell
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
    with pytest.raises(ConfigError, match=r"--epochs of a search must be an int >= 1 \(ASHA's max_t\). Got 0 instead"):
        run_search(SearchOptions(task="digits", base={"epochs": 0}, storage_path=str(tmp_path)))
    assert list(tmp_path.iterdir()) == []


def test_dev_as_the_metric_with_dev_every_is_refused_before_anything_starts(tmp_path):
    with pytest.raises(ConfigError, match=r"--metric dev ranks the trials by DEV .* dev_every=3 .* --set dev_every=1"):
        run_search(SearchOptions(task="digits", metric="dev", base={"dev_every": 3}, storage_path=str(tmp_path)))
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
    with pytest.raises(ConfigError, match="--num-samples must be an int >= 1. Got 0"):
        SearchOptions(task="digits", num_samples=0).validate()
    with pytest.raises(ConfigError, match="range of 'eps' must satisfy 0 < low < high"):
        SearchOptions(task="digits", space={"eps": {"type": "loguniform", "low": 1.0, "high": 0.1}}).validate()
    with pytest.raises(ConfigError, match="'lambda_OT' is not a config field"):
        SearchOptions(task="digits", space={"lambda_OT": {"type": "fixed", "value": 1}}).validate()


def test_trials_get_their_cpu_share_of_threads_and_loader_workers():
    from tune.cluster import Cluster, cpu_share
    from tune.experiment import _param_space
    from tune.options import base_config

    options = SearchOptions(task="A2W", cpus_per_trial=2, base={"data_root": "/data"})
    cpus, _ = cpu_share(options, None, None)
    params = _param_space(options, base_config(options, cpus), Cluster(cpus, 0.25, 1, None), cache_dir=None, rungs=())
    assert params["num_workers"] == 2 and params["num_threads"] == 2 and params["device"] == "cuda"
    assert "lambda_ot" not in params  # sampled by the searcher, not a constant


def test_a_real_search_is_read_by_analysis_and_every_consumer_names_its_best_trial(ray_local, tmp_path):
    """The contract between tune/ and analysis/: a real small search, read with no problem; the
    dashboard's best trial and copyable config are those of best_config.json."""
    options = SearchOptions(task="digits", num_samples=3, base={"epochs": 2, "pretrain_epochs": 1, "iters_per_epoch": 5},
                            storage_path=str(tmp_path / "runs"), name="contract", early_stop=False, max_concurrent=2,
                            verbose=0)
    outcome = run_search(options)
    folder = Path(outcome.path)
    assert outcome.trials["trial_id"].nunique() == 3
    check_consumers(tmp_path / "runs", folder, tmp_path)
    # trials that ended keep no state (issue 13: a 50-trial ResNet-50 search kept ~16 GB)
    assert len(list(folder.glob("trials/*/history.json"))) == 3 and not list(folder.glob("trials/*/*.pt"))


def test_a_storage_path_that_is_a_file_is_refused(a_file):
    with pytest.raises(SSOTError, match="--storage-path .* is a file, not a folder"):
        run_search(SearchOptions(task="digits", storage_path=str(a_file)))


def test_an_address_where_nothing_listens_fails_within_seconds(tmp_path):
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    start = time.monotonic()
    with pytest.raises(SSOTError, match=f"Cannot connect to the Ray cluster at --address 127.0.0.1:{port}"):
        run_search(SearchOptions(task="digits", storage_path=str(tmp_path)), address=f"127.0.0.1:{port}")
    assert time.monotonic() - start < 30


def test_search_refuses_target_acc_on_an_unlabeled_target(tmp_path):
    from tune.experiment import run_search
    from tune.options import SearchOptions

    src, tgt = make_folders(tmp_path, labeled=False)
    options = SearchOptions(task="custom", base={"source_dir": str(src), "target_dir": str(tgt)}, storage_path=str(tmp_path / "r"))
    with pytest.raises(ConfigError, match="--metric target_acc needs target labels.*label-free metric: source_acc, entropy, snd"):
        run_search(options)
    assert not (tmp_path / "r").exists()


def test_unknown_metric_is_refused_with_the_choices():
    with pytest.raises(ConfigError, match="--metric must be one of target_acc, source_acc"):
        SearchOptions(task="digits", metric="accuracy").validate()


def test_search_on_a_min_validator_records_the_metric_and_picks_by_it(ray_local, tmp_path):
    options = SearchOptions(task="digits", num_samples=3, base={"epochs": 2, "pretrain_epochs": 1, "iters_per_epoch": 4},
                            storage_path=str(tmp_path), name="entropy", early_stop=False, max_concurrent=2, verbose=0,
                            metric="entropy")
    outcome = run_search(options)
    info = json.loads((Path(outcome.path) / "experiment.json").read_text())
    assert info["metric"] == "entropy" and info["mode"] == "min" and info["validator_directions"] == DIRECTIONS
    last = outcome.trials.sort_values("epoch").groupby("trial_id").tail(1)
    assert (last["status"] == "completed").all()
    assert last["target_acc"].between(0, 1).all() and last["snd"].notna().all()  # the oracle is still recorded
    preds = last["target_pred"].map(lambda s: [int(v) for v in s.split()])
    assert preds.map(len).nunique() == 1 and preds.map(len).iloc[0] > 0
    best = SSOTConfig.from_json(Path(outcome.path) / "best_config.json")
    top = last.loc[last["entropy"].idxmin()]
    assert best.lambda_ot == pytest.approx(top["lambda_ot"]) and best.eps == pytest.approx(top["eps"])
    assert math.isfinite(top["entropy"])
    from analysis.dashboard import build_dashboard

    page = build_dashboard(tmp_path, out=tmp_path / "dashboard.html", images=False).path.read_text()
    assert "Label-free selection: regret against the oracle" in page and "<td>entropy</td>" in page


def test_trial_resources_and_max_failures_are_checked_where_they_enter():
    from ssot.errors import ConfigError
    from tune.options import SearchOptions
    from tune.search import build_parser, options_for

    args = build_parser().parse_args(["--task", "digits", "--trial-resources", '{"worker_node": 1}', "--max-failures", "5"])
    options = options_for(args, "digits", None)
    assert options.trial_resources == {"worker_node": 1} and options.max_failures == 5
    assert options_for(build_parser().parse_args(["--task", "digits"]), "digits", None).max_failures == 2
    with pytest.raises(SystemExit):
        build_parser().parse_args(["--task", "digits", "--trial-resources", "worker_node=1"])
    with pytest.raises(ConfigError, match="--trial-resources must map custom resource names .* Got 'CPU': 1"):
        SearchOptions(task="digits", trial_resources={"CPU": 1}).validate()
    with pytest.raises(ConfigError, match="Got 'worker_node': 0 instead"):
        SearchOptions(task="digits", trial_resources={"worker_node": 0}).validate()
    with pytest.raises(ConfigError, match="--max-failures must be an int >= 0. Got -1 instead"):
        SearchOptions(task="digits", max_failures=-1).validate()
