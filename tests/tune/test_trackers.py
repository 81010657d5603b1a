"""`tune/trackers.py`: one real search logged to a real MLflow server, TensorBoard event files and
W&B offline runs at once, each read back and compared with the search's own ``trials.csv``; bad
tracker settings refused in one line before Ray starts."""
from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

from tests.fixtures.servers import free_port, serve
from tests.fixtures.trackers import tensorboard_scalars, wandb_run
from tune import search, trackers


@pytest.fixture(scope="module")
def tracked(tmp_path_factory: pytest.TempPathFactory):
    """A 2-trial digits search (2 epochs, ASHA may stop one at epoch 1) with all three trackers,
    MLflow's being a real ``mlflow server`` on 127.0.0.1 (kept running for the assertions)."""
    pytest.importorskip("mlflow")
    pytest.importorskip("wandb")
    pytest.importorskip("tensorboardX")
    root = tmp_path_factory.mktemp("trackers")
    url = f"http://127.0.0.1:{free_port()}"
    server = [str(Path(sys.executable).parent / "mlflow"), "server", "--host", "127.0.0.1", "--port", url.rsplit(":", 1)[1],
              "--workers", "1", "--backend-store-uri", f"sqlite:///{root}/mlflow.db", "--default-artifact-root", str(root / "artifacts")]
    quicker = {"MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}  # no job runner: the server starts faster
    with serve(server, f"{url}/health", root / "mlflow.log", env=quicker), pytest.MonkeyPatch.context() as env:
        env.setenv(trackers.MLFLOW_URI_ENV, url)
        env.setenv("WANDB_SILENT", "true")
        env.setenv(trackers.WANDB_DIR_ENV, str(root / "runs"))
        code = search.main(["--task", "digits", "--num-samples", "2", "--epochs", "2", "--set", "pretrain_epochs=1",
                            "--set", "iters_per_epoch=3", "--grace-period", "1", "--reduction-factor", "2", "--num-cpus", "2",
                            "--storage-path", str(root / "rr"), "--name", "tracked", "--quiet",
                            "--tracker", "mlflow", "--tracker", "tensorboard", "--tracker", "wandb-offline"])
        folder = root / "rr" / "tracked" / "digits"
        rows = pd.read_csv(folder / "trials.csv", dtype={"trial_id": str})
        yield SimpleNamespace(code=code, url=url, folder=folder, rows=rows, trials=sorted(rows["trial_id"].unique()),
                              wandb=root / "runs" / "wandb")


def _epochs(rows: pd.DataFrame, trial: str) -> pd.DataFrame:
    return rows[rows["trial_id"] == trial].sort_values("epoch")


def test_mlflow_holds_every_trial_its_parameters_epochs_and_status(tracked):
    from mlflow import MlflowClient

    assert tracked.code == 0 and len(tracked.trials) == 2
    client = MlflowClient(tracked.url)
    experiment = client.get_experiment_by_name("tracked/digits")  # the Optuna study's name too
    runs = {r.data.tags["trial_id"]: r for r in client.search_runs([experiment.experiment_id])}
    assert sorted(runs) == tracked.trials
    for trial, run in runs.items():
        epochs = _epochs(tracked.rows, trial)
        last = epochs.iloc[-1]
        assert run.info.status == "FINISHED" and run.data.tags["task"] == "digits"
        assert run.data.tags["ssot_status"] == last["status"]  # completed or early-stopped, as trials.csv says
        for name in ("lambda_ot", "lambda_ent", "eps"):
            assert float(run.data.params[name]) == pytest.approx(last[name])
        assert int(run.data.params["potential_width"]) == last["potential_width"]
        for metric in ("target_acc", "mixval", "loss_ot"):
            history = {m.step: m.value for m in client.get_metric_history(run.info.run_id, metric)}
            assert history == pytest.approx(dict(zip(epochs["epoch"].astype(int), epochs[metric])), rel=1e-6)


def test_tensorboard_event_files_hold_every_epoch(tracked):
    assert tracked.code == 0 and len(tracked.trials) == 2
    for trial in tracked.trials:
        epochs = _epochs(tracked.rows, trial)
        (events,) = (tracked.folder / f"trial_{trial}").glob("events.out.tfevents.*")
        scalars = tensorboard_scalars(events)
        for metric in ("target_acc", "entropy", "loss_ce"):
            expected = dict(zip(epochs["epoch"].astype(int), epochs[metric]))
            assert scalars[f"ray/tune/{metric}"] == pytest.approx(expected, rel=1e-6)


def test_wandb_offline_runs_hold_every_trial(tracked):
    assert tracked.code == 0 and len(tracked.trials) == 2
    for trial in tracked.trials:
        epochs = _epochs(tracked.rows, trial)
        (path,) = tracked.wandb.glob(f"offline-run-*-{trial}/run-{trial}.wandb")
        run = wandb_run(path)
        assert (run["id"], run["project"], run["group"]) == (trial, "tracked", "digits")
        assert run["config"]["lambda_ot"] == pytest.approx(epochs.iloc[-1]["lambda_ot"])
        assert run["config"]["ssot_status"] == epochs.iloc[-1]["status"]
        logged = {int(h["epoch"]): h["target_acc"] for h in run["history"] if "epoch" in h}
        assert logged == pytest.approx(dict(zip(epochs["epoch"].astype(int), epochs["target_acc"])), rel=1e-6)


@pytest.mark.parametrize("setting, message", [
    ("unreachable", "--tracker mlflow: the tracking URI http://127.0.0.1:{port} ($MLFLOW_TRACKING_URI, default "
                    "sqlite:///./mlflow.db) does not answer within 5 s"),
    ("sqlite under a file", "cannot be created: {tmp}/file is a file"),
    ("no package", "--tracker wandb-offline needs the wandb_not_here package, which is not installed: pip install -e \".[trackers]\""),
])
def test_bad_tracker_settings_are_one_line_and_exit_2_before_ray_starts(tmp_path, monkeypatch, capsys, setting, message):
    (tmp_path / "file").write_text("")
    port = free_port()
    uri = {"unreachable": f"http://127.0.0.1:{port}", "sqlite under a file": f"sqlite:///{tmp_path}/file/mlflow.db"}
    monkeypatch.setenv(trackers.MLFLOW_URI_ENV, uri.get(setting, f"sqlite:///{tmp_path}/mlflow.db"))
    monkeypatch.setitem(trackers.PACKAGES, "wandb-offline", "wandb_not_here" if setting == "no package" else "wandb")
    code = search.main(["--task", "digits", "--storage-path", str(tmp_path / "rr"), "--tracker", "mlflow",
                        "--tracker", "wandb-offline"])
    err = capsys.readouterr().err
    assert code == 2 and message.format(port=port, tmp=tmp_path) in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "rr").exists()
