"""`ssot/results/lock.py`: one search driver per experiment folder; stale locks of dead drivers."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

import pytest

from ssot.results.lock import LOCK_FILE, ExperimentLock, LockedError


def test_a_second_driver_is_refused_until_the_first_releases(tmp_path):
    folder = str(tmp_path / "runs" / "exp" / "digits")
    first = ExperimentLock(folder)
    first.acquire()
    holder = json.loads((tmp_path / "runs" / "exp" / "digits" / LOCK_FILE).read_text())
    assert holder["pid"] == os.getpid() and holder["host"] == socket.gethostname()
    with pytest.raises(LockedError, match=rf"Experiment {folder} is in use by another search \(pid {os.getpid()} on "):
        ExperimentLock(folder).acquire()
    first.release()
    assert not (tmp_path / "runs").exists()  # the folders made for the lock go with it when left empty
    with ExperimentLock(folder):
        pass


def test_the_stale_lock_of_a_dead_driver_on_this_host_is_broken_with_a_note(tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    folder = tmp_path / "exp"
    folder.mkdir()
    (folder / LOCK_FILE).write_text(json.dumps({"host": socket.gethostname(), "pid": int(dead.stdout), "started": "then"}))
    notes = []
    with ExperimentLock(str(folder), notes=notes.append):
        assert json.loads((folder / LOCK_FILE).read_text())["pid"] == os.getpid()
    assert len(notes) == 1 and f"removed the stale lock {folder / LOCK_FILE} of pid {int(dead.stdout)}" in notes[0]
    assert folder.is_dir() and not (folder / LOCK_FILE).exists()


def test_a_reused_pid_or_another_host_is_not_taken_for_stale(tmp_path):
    folder = tmp_path / "exp"
    folder.mkdir()
    # this very process, but started at another time: its pid was reused, the lock is stale
    (folder / LOCK_FILE).write_text(json.dumps({"host": socket.gethostname(), "pid": os.getpid(), "pid_start": "1"}))
    with ExperimentLock(str(folder), notes=lambda line: None):
        pass
    (folder / LOCK_FILE).write_text(json.dumps({"host": "another-machine", "pid": 1, "started": "2026-01-01T00:00:00"}))
    with pytest.raises(LockedError, match=rf"pid 1 on another-machine.*delete {folder / LOCK_FILE} and rerun"):
        ExperimentLock(str(folder)).acquire()


def test_a_driver_killed_with_sigkill_holds_the_lock_until_it_dies_then_it_is_taken_over(tmp_path):
    """The lock of another process: refused while it runs (its OS lock), taken over with a note once
    it was killed with SIGKILL (the kernel dropped its OS lock; its file names it still)."""
    folder = tmp_path / "exp"
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time\nfrom ssot.results.lock import ExperimentLock\n"
                               f"lock = ExperimentLock({str(folder)!r})\nlock.acquire()\nprint('held', flush=True)\ntime.sleep(120)"],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(LockedError, match=rf"in use by another search \(pid {holder.pid} on "):
            ExperimentLock(str(folder)).acquire()
    finally:
        holder.kill()
        holder.wait()
    assert json.loads((folder / LOCK_FILE).read_text())["pid"] == holder.pid  # what kill -9 leaves
    notes = []
    with ExperimentLock(str(folder), notes=notes.append):
        assert json.loads((folder / LOCK_FILE).read_text())["pid"] == os.getpid()
    assert len(notes) == 1 and f"removed the stale lock {folder / LOCK_FILE} of pid {holder.pid}" in notes[0]
