"""`ssot/results/storage.py` on a real local S3 server (moto): a store that cannot be used, the lock,
warm-start sources. A search in object storage, stopped, killed, resumed and read by export, the
dashboard and confirm: `tests/tune/test_search.py` (its kill test runs there)."""
from __future__ import annotations

import json
import time

import pytest

pytest.importorskip("moto.server")  # moto[server], the test extra
from tests.fixtures.ray_cluster import free_port  # noqa: E402


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
