"""`ssot/results/storage.py` on a real local S3 server (moto): search, export, dashboard, confirm."""
from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import pandas as pd
import pytest

from tests.fixtures import REPO
from tests.fixtures.study import check_study_agrees

moto_server = pytest.importorskip("moto.server")  # moto[server], the test extra
from tests.fixtures.ray_cluster import free_port  # noqa: E402

SEARCH = [sys.executable, str(REPO / "tune" / "search.py")]


@pytest.fixture(scope="module")
def s3_server():
    """A moto S3 server on 127.0.0.1 and the standard AWS variables that point pyarrow (and Ray) at it."""
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=free_port(), verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    env = {"AWS_ENDPOINT_URL": f"http://{host}:{port}", "AWS_ACCESS_KEY_ID": "testing",
           "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1"}
    yield env
    server.stop()


@pytest.fixture
def s3(s3_server, monkeypatch, request):
    """A new bucket (named after the test) in the server, with the AWS variables set."""
    import boto3

    for key, value in s3_server.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("AWS_ENDPOINT_URL_S3", raising=False)
    bucket = request.node.name.replace("_", "-")[:50].strip("-")
    boto3.client("s3", endpoint_url=s3_server["AWS_ENDPOINT_URL"]).create_bucket(Bucket=bucket)
    return bucket


def _keys(bucket: str, prefix: str) -> list[str]:
    import pyarrow.fs

    fs, path = pyarrow.fs.FileSystem.from_uri(f"s3://{bucket}/{prefix}")
    return [i.path for i in fs.get_file_info(pyarrow.fs.FileSelector(path, recursive=True, allow_not_found=True))]


def _read(bucket: str, key: str) -> str:
    from ssot.results import storage

    text = storage.read_text(f"s3://{bucket}/{key}")
    assert text is not None, key
    return text


@pytest.mark.slow
def test_a_search_in_object_storage_resumes_and_is_read_by_export_and_the_dashboard(s3, tmp_path):
    import os

    from analysis import sensitivity
    from tune import export

    uri = f"s3://{s3}/runs"
    args = ["--task", "digits", "--num-samples", "2", "--epochs", "3", "--set", "pretrain_epochs=1",
            "--set", "iters_per_epoch=8", "--max-concurrent", "1", "--num-cpus", "2", "--no-early-stop",
            "--storage-path", uri, "--name", "s3exp", "--quiet"]
    search = subprocess.Popen([*SEARCH, *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=os.environ)
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and search.poll() is None:
            if any("/epoch-" in k for k in _keys(s3, "runs/s3exp/digits/trials")):
                break
            time.sleep(0.5)
        search.send_signal(signal.SIGINT)  # Ctrl-C after a trial's first state: Ray stops the trials
        out, _ = search.communicate(timeout=120)
    finally:
        if search.poll() is None:
            search.kill()
    assert search.returncode == 130, out[-3000:]
    assert "interrupted: rerun with --resume to continue" in out
    assert json.loads(_read(s3, "runs/s3exp/digits/experiment.json"))["status"] == "running"
    stopped = pd.read_csv(pd.io.common.StringIO(_read(s3, "runs/s3exp/digits/trials.csv")), dtype={"trial_id": str})
    assert set(stopped["status"]) == {"running"}  # the interrupted trial, shown as running: --resume continues it
    resumed = subprocess.run([*SEARCH, *args, "--resume"], capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]
    assert "1 config(s) cut off by the stop of the last driver continue from their last state" in resumed.stdout

    keys = _keys(s3, "runs/s3exp")
    names = {k.rsplit("/", 1)[-1] for k in keys}
    assert {"experiment.json", "trials.csv", "best_config.json", "study.journal"} <= names  # the study: the search's record
    assert [k for k in keys if "/_pretrained/pretrained-" in k]  # the shared source-only model
    assert not [k for k in keys if k.endswith(".pt") and "/trials/" in k]  # each trial's states dropped when it ended
    assert len([k for k in keys if k.endswith("/history.json")]) == 2  # each trial's history
    frame = pd.read_csv(pd.io.common.StringIO(_read(s3, "runs/s3exp/digits/trials.csv")), dtype={"trial_id": str})
    assert frame["trial_id"].nunique() == 2 and (frame["status"] == "completed").all()
    for _, rows in frame.groupby("trial_id"):  # the interrupted trial continued from its state, each epoch once
        assert list(rows["epoch"]) == [1, 2, 3]
    from tune.record import read_study

    study = read_study(f"{uri}/s3exp/digits", json.loads(_read(s3, "runs/s3exp/digits/experiment.json")))
    check_study_agrees(study, frame)  # the record in the bucket agrees with trials.csv
    assert [t.state.name for t in study.trials] == ["FAIL", "COMPLETE", "COMPLETE"]  # the attempt Ctrl-C stopped, then both
    best = json.loads(_read(s3, "runs/s3exp/digits/best_config.json"))

    assert export.main([uri, "--out", str(tmp_path / "configs")]) == 0
    assert json.loads((tmp_path / "configs" / "digits.json").read_text()) == best
    page = tmp_path / "dashboard.html"
    assert sensitivity.main([uri, "--out", str(page), "--no-images"]) == 0
    text = page.read_text()
    assert "digits" in text and f'data-trial="{json.loads(_read(s3, "runs/s3exp/digits/experiment.json"))["best_trial"]}"' in text
    assert f"{uri}/s3exp/digits" in text and "ssot-experiments-" not in text  # the URI, not the temporary copy
    # tune/confirm.py reads its candidates from the store too (training them is tested locally)
    from tune import confirm, confirmation

    warnings: list[str] = []
    (top,) = confirmation.gather_candidates(uri, 1, warnings.append)
    assert top.experiment == f"{uri}/s3exp/digits" and top.config.to_dict() == best and not warnings
    assert confirm.main([uri, "--top", "1"]) == 2  # its outputs are local: --out is needed


def test_an_unreachable_store_is_one_line_and_exit_2_before_any_trial(monkeypatch, capsys):
    from tune.search import main

    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{free_port()}")  # nothing listens there
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.delenv("AWS_ENDPOINT_URL_S3", raising=False)
    start = time.monotonic()
    assert main(["--task", "digits", "--storage-path", "s3://nowhere/runs", "--num-cpus", "1"]) == 2
    err = capsys.readouterr().err
    assert time.monotonic() - start < 60
    assert err.count("\n") == 1 and err.startswith("error: --storage-path s3://nowhere/runs cannot be written")
    assert "AWS_ENDPOINT_URL" in err and "Traceback" not in err


def test_a_missing_bucket_is_one_line_and_exit_2(s3, capsys):
    from tune.search import main

    assert main(["--task", "digits", "--storage-path", f"s3://{s3}-missing/runs", "--num-cpus", "1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"the bucket '{s3}-missing' does not exist" in err


def test_readers_of_an_empty_or_unreachable_store_say_so_in_one_line(s3, tmp_path, monkeypatch, capsys):
    from analysis import sensitivity
    from tune import export

    assert export.main([f"s3://{s3}/nothing", "--out", str(tmp_path / "c")]) == 2
    assert "No experiment (no experiment.json) under s3://" in capsys.readouterr().err
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{free_port()}")
    assert sensitivity.main([f"s3://{s3}/runs", "--out", str(tmp_path / "d.html"), "--no-images"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Cannot read the experiments under s3://" in err
    assert sensitivity.main([f"s3://{s3}/runs"]) == 2 and "pass --out" in capsys.readouterr().err


def test_wrong_credentials_are_one_line_and_exit_2(s3, monkeypatch, capsys):
    import moto.settings

    from tune.search import main

    monkeypatch.setattr(moto.settings, "INITIAL_NO_AUTH_ACTION_COUNT", 0)  # the server now checks every request's keys
    assert main(["--task", "digits", "--storage-path", f"s3://{s3}/runs", "--num-cpus", "1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"--storage-path s3://{s3}/runs cannot be written" in err, err
    assert "AWS_ACCESS_KEY_ID" in err and "Traceback" not in err



def test_the_lock_of_an_experiment_in_object_storage(s3, monkeypatch):
    """Best effort (no conditional create): a marker read back after a settle time."""
    from ssot.results import lock, storage

    monkeypatch.setattr(lock, "SETTLE_S", 0.1)
    folder = f"s3://{s3}/runs/exp/digits"
    with lock.ExperimentLock(folder):
        assert json.loads(storage.read_text(f"{folder}/{lock.LOCK_FILE}"))["host"]
        with pytest.raises(lock.LockedError, match="is in use by another search"):
            lock.ExperimentLock(folder).acquire()
    assert not storage.exists(f"{folder}/{lock.LOCK_FILE}")  # released
    late = lock.ExperimentLock(folder)
    write = storage.write_text

    def both_write(uri, text):  # two drivers write their markers at once: the last writer goes on
        write(uri, text)
        write(uri, json.dumps({"host": "another-machine", "pid": 1, "started": "now", "token": late.token}))

    monkeypatch.setattr(storage, "write_text", both_write)
    with pytest.raises(lock.LockedError, match="pid 1 on another-machine"):
        lock.ExperimentLock(folder).acquire()
    assert late.holder()["token"] == late.token


def test_warm_start_sources_are_read_from_object_storage(s3, tmp_path):
    """``--warm-start s3://...``: a source search in a bucket is read through the storage layer (no Ray)."""
    from ssot.results import storage
    from tests.fixtures.experiments import TPE_SPACE, write_atlas_results
    from tune import warmstart

    folder = write_atlas_results(tmp_path, ("P2H",), n_trials=12)["P2H"]
    uri = f"s3://{s3}/runs/atlas/P2H"
    for file in folder.iterdir():
        storage.write_text(f"{uri}/{file.name}", file.read_text())
    (source,) = warmstart.read_sources(warmstart.source_paths([uri]), "S2H", TPE_SPACE)
    local = warmstart.read_sources([str(folder)], "S2H", TPE_SPACE)[0]
    assert source.path == uri and source.best == local.best and source.meta()["n_trials"] == 12
