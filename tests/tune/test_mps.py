"""`tune/mps.py`: MPS for trials that share a GPU, with a fake `nvidia-cuda-mps-control` that records its calls."""
from __future__ import annotations

import os
import stat

import pytest

from tests.fixtures import QUICK
from tune import mps

FAKE = """#!/bin/sh
stdin=$(cat)
{ echo "args=$*"; echo "pipe=$CUDA_MPS_PIPE_DIRECTORY"; echo "log=$CUDA_MPS_LOG_DIRECTORY"; echo "stdin=$stdin"; echo "--"; } >> "$FAKE_MPS_RECORD"
if [ -n "$FAKE_MPS_FAIL" ]; then echo "$FAKE_MPS_FAIL" >&2; exit 1; fi
"""


@pytest.fixture
def fake_mps(tmp_path, monkeypatch):
    """A fake ``nvidia-cuda-mps-control`` first on PATH; returns the calls it recorded so far."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / mps.BINARY
    script.write_text(FAKE)
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    record = tmp_path / "calls.txt"
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_MPS_RECORD", str(record))
    _no_daemon_here(tmp_path, monkeypatch)

    def calls() -> list[dict[str, str]]:
        if not record.exists():
            return []
        blocks = record.read_text().split("--\n")[:-1]
        return [dict(line.split("=", 1) for line in block.strip().splitlines()) for block in blocks]

    return calls


def _no_daemon_here(tmp_path, monkeypatch):
    for name in (mps.PIPE_ENV, mps.LOG_ENV):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(mps, "DEFAULT_PIPE_DIR", str(tmp_path / "no-daemon"))
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))  # the search's own MPS folders go here


def test_without_the_binary_one_warning_and_the_search_goes_on(tmp_path, monkeypatch, capsys):
    _no_daemon_here(tmp_path, monkeypatch)
    monkeypatch.setenv("PATH", str(tmp_path))  # no nvidia-cuda-mps-control
    state = mps.start(0.25)
    err = capsys.readouterr().err
    assert (state.on, state.how) == (False, mps.OFF) and "not on PATH" in state.detail
    assert err.count("\n") == 1 and err.startswith("warning: MPS not used (nvidia-cuda-mps-control is not on PATH)")
    assert mps.PIPE_ENV not in os.environ
    state.stop()
    assert mps.describe(state.record()).startswith("  MPS off: nvidia-cuda-mps-control is not on PATH")


def test_whole_gpus_no_mps_and_a_joined_cluster_start_nothing(fake_mps, capsys):
    for gpus in (None, 0, 1, 2):
        assert mps.start(gpus).how == mps.NOT_NEEDED
    off = mps.start(0.5, enabled=False)
    cluster = mps.start(0.5, joined="the Ray cluster at head:6379")
    assert (off.on, off.how, off.detail) == (False, mps.OFF, "turned off by --no-mps")
    assert (cluster.on, cluster.how) == (None, mps.CLUSTER) and "before `ray start`" in cluster.detail
    assert fake_mps() == [] and capsys.readouterr().err == "" and mps.PIPE_ENV not in os.environ
    assert mps.describe(mps.start(1).record()) is None
    assert mps.describe(cluster.record()).startswith("  MPS not managed by the search: the search joins the Ray cluster")


def test_a_running_daemon_is_used_and_left_running(fake_mps, tmp_path, monkeypatch):
    pipe = tmp_path / "their-pipe"
    pipe.mkdir()
    (pipe / "control").touch()
    monkeypatch.setenv(mps.PIPE_ENV, str(pipe))
    state = mps.start(0.5)
    state.stop()
    assert (state.on, state.how, state.pipe_dir) == (True, mps.EXISTING, str(pipe)) and fake_mps() == []


def test_a_daemon_is_started_with_its_own_folders_exported_and_quit_once(fake_mps):
    state = mps.start(0.25)
    (started,) = fake_mps()
    assert (state.on, state.how) == (True, mps.STARTED) and started["args"] == "-d"
    assert started["pipe"] == state.pipe_dir == os.environ[mps.PIPE_ENV] and started["log"] == os.environ[mps.LOG_ENV]
    assert os.path.isdir(started["pipe"]) and os.path.isdir(started["log"]) and started["pipe"] != mps.DEFAULT_PIPE_DIR
    assert mps.describe(state.record()) == f"  MPS on: a daemon started for the search (pipe directory {state.pipe_dir})"
    state.stop()
    state.stop()
    calls = fake_mps()
    assert len(calls) == 2 and calls[1]["args"] == "" and calls[1]["stdin"] == "quit" and calls[1]["pipe"] == started["pipe"]
    assert mps.PIPE_ENV not in os.environ and mps.LOG_ENV not in os.environ
    assert not os.path.exists(os.path.dirname(started["pipe"]))


def test_a_daemon_that_cannot_start_leaves_one_warning_and_nothing_behind(fake_mps, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("FAKE_MPS_FAIL", "An instance of this daemon is already running or permission denied")
    state = mps.start(0.5)
    assert (state.on, state.how) == (False, mps.OFF) and "permission denied" in state.detail
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "-d failed: An instance" in err
    assert mps.PIPE_ENV not in os.environ and list(tmp_path.glob("ssot-mps-*")) == []


#: The search of the next test, in a process of its own: its Ray is the one the search starts, whatever Ray
#: another test of this process left running (the test's outcome does not depend on the tests run before it).
_SEARCH_WITH_MPS = """
import json, os, sys, tempfile
import ray
from ssot.errors import ConfigError
from tune import mps
from tune.experiment import run_search
from tune.options import SearchOptions

mps.DEFAULT_PIPE_DIR = sys.argv[1]
tempfile.tempdir = sys.argv[4]  # the search's own MPS folders go here
seen, real_init = [], ray.init

def init(*args, **kwargs):  # the real local Ray, then ask one of its workers for its environment
    real_init(*args, **kwargs)
    seen.append(ray.get(ray.remote(lambda: os.environ.get(mps.PIPE_ENV)).remote()))

ray.init = init
options = SearchOptions(task="digits", num_samples=1, base=json.loads(sys.argv[2]), gpus_per_trial=0.5, storage_path=sys.argv[3],
                        verbose=0)
try:
    run_search(options, num_cpus=1)
    error = ""
except ConfigError as exc:
    error = str(exc)
print(json.dumps({"seen": seen, "error": error, "initialized": ray.is_initialized(), "pipe_env": os.environ.get(mps.PIPE_ENV)}))
"""


def test_a_search_exports_mps_to_its_ray_workers_and_stops_it_after_an_error(fake_mps, tmp_path):
    import json
    import subprocess
    import sys

    from tests.fixtures import REPO

    pytest.importorskip("ray")
    run = subprocess.run([sys.executable, "-c", _SEARCH_WITH_MPS, str(tmp_path / "no-daemon"), json.dumps(QUICK), str(tmp_path / "runs"),
                          str(tmp_path)], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert "more GPUs than the Ray cluster has" in out["error"]  # this machine has no GPU: refused after Ray started
    started, stopped = fake_mps()
    assert out["seen"] == [started["pipe"]] and stopped["stdin"] == "quit" and stopped["pipe"] == started["pipe"]
    assert not out["initialized"] and out["pipe_env"] is None
    assert started["pipe"].startswith(str(tmp_path)) and not os.path.exists(started["pipe"])  # the search's own folder, removed


def test_experiment_json_and_the_summary_say_what_mps_did(finished_search):
    import json

    from tune.outputs import summary_lines

    meta = json.loads((finished_search.folder / "experiment.json").read_text())
    assert meta["mps"] == {"on": False, "how": mps.NOT_NEEDED, "detail": "trials do not share a GPU"}
    assert not any("MPS" in line for line in summary_lines(finished_search.outcome.trials, meta))
    started = {**meta, "mps": {"on": True, "how": mps.STARTED, "detail": "a daemon started for the search (pipe directory /x)"}}
    assert "  MPS on: a daemon started for the search (pipe directory /x)" in summary_lines(finished_search.outcome.trials, started)
