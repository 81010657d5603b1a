"""Failures are found before the work (issue 13): unwritable outputs, an address where nothing
listens. None of these tests trains or starts Ray."""
from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ssot.config import SSOTConfig
from ssot.errors import SSOTError
from tune import export, final
from tune.experiment import SearchOptions, run_search

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def a_file(tmp_path: Path) -> Path:
    path = tmp_path / "regular-file"
    path.write_text("in the way")
    return path


def test_train_refuses_an_out_under_a_file_before_training(a_file):
    proc = subprocess.run([sys.executable, "-m", "ssot.train", "--task", "digits", "--out", str(a_file / "run.json")],
                          cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "is a file, not a folder" in proc.stderr
    assert "source-only" not in proc.stdout  # refused before anything trained


def test_export_and_final_refuse_an_out_that_is_or_lies_under_a_file(a_file, tmp_path, capsys):
    assert export.main([str(tmp_path), "--out", str(a_file / "configs")]) == 2
    assert "is a file, not a folder" in capsys.readouterr().err
    config = tmp_path / "digits.json"
    SSOTConfig.for_task("digits", epochs=1, pretrain_epochs=1, iters_per_epoch=2).to_json(config)
    assert final.main([str(config), "--seeds", "0", "--out", str(a_file)]) == 2  # refused before the seed is trained
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "is a file, not a folder" in err[0]


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
