"""A watchdog that ends the processes of a search's own Ray when its driver is killed.

A search that starts its own Ray (no ``--address``) shuts it down when it ends, also after an
error or Ctrl-C. A driver killed with SIGKILL cannot: Ray's kernel fate-sharing ends the
processes the driver started itself (GCS, raylet), but processes those started (Ray's
``DashboardAgent``, ``RuntimeEnvAgent``, idle workers) were seen alive for over 30 seconds after.
So before ``ray.init`` the driver starts this watchdog (``python -m tune.reaper DRIVER_PID``), in
a session of its own, with a pipe on its standard input:

- every :data:`SCAN_S` seconds it notes the processes that descend from the driver and were not
  there when it started (Ray's);
- the driver writes ``release`` when it has shut Ray down: the watchdog exits, touching nothing;
- end of input without ``release`` means the driver died: the noted processes still alive get
  SIGTERM, then SIGKILL after :data:`GRACE_S` seconds; so do, for a few more seconds, processes
  that name the noted processes' Ray session on their command line (a worker the raylet was
  starting as the driver died was seen to escape the last scan).

The processes are psutil's: a process is identified by its pid and its start time, so a pid
reused by another program is never signalled. POSIX only (the driver's pipe is watched with
``select``); on Windows :func:`start` does nothing. It imports psutil and the standard library
only: it starts in milliseconds, before Ray.
"""
from __future__ import annotations

import os
import re
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterable
from contextlib import suppress
from typing import IO

import psutil

SCAN_S = 0.5
GRACE_S = 2.0
#: Seconds after the driver's death during which late processes of its Ray session are ended too.
LATE_S = 5.0
RELEASE = b"release\n"
#: A Ray session folder's name, as Ray's processes carry it on their command line.
SESSION = re.compile(r"session_\d{4}-\d\d-\d\d_\d\d-\d\d-\d\d_\d+_\d+")


def descendants(root: int) -> list[psutil.Process]:
    """The processes below ``root`` (children, theirs, ...); none when ``root`` is gone."""
    try:
        return psutil.Process(root).children(recursive=True)
    except psutil.NoSuchProcess:
        return []


def session(process: psutil.Process) -> str | None:
    """The Ray session ``process`` names on its command line, or None."""
    try:
        found = SESSION.search(" ".join(process.cmdline()))
    except psutil.Error:
        return None
    return None if found is None else found.group(0)


def reap(noted: Iterable[psutil.Process]) -> None:
    """SIGTERM, then SIGKILL after :data:`GRACE_S` seconds, the ``noted`` processes that still run."""
    left = [p for p in noted if p.is_running()]
    for process in left:
        with suppress(psutil.Error):
            process.terminate()
    _, left = psutil.wait_procs(left, timeout=GRACE_S)
    for process in left:
        with suppress(psutil.Error):
            process.kill()


def late(sessions: set[str]) -> list[psutil.Process]:
    """Processes (other than this one) whose command line names one of the Ray ``sessions``."""
    return [p for p in psutil.process_iter() if p.pid != os.getpid() and session(p) in sessions]


def watch(driver: int, source: IO[bytes]) -> int:
    """Note the driver's new descendants until ``release`` (0) or the end of input (reap them)."""
    before = set(descendants(driver))
    noted: set[psutil.Process] = set()
    sessions: set[str] = set()
    received = b""
    while True:
        ready, _, _ = select.select([source], [], [], SCAN_S)
        if ready:
            chunk = os.read(source.fileno(), 64)
            if not chunk:  # the driver is gone without shutting its Ray down
                reap(noted)
                end = time.monotonic() + LATE_S
                while sessions and time.monotonic() < end:
                    reap(late(sessions))
                    time.sleep(SCAN_S)
                return 1
            received += chunk
            if RELEASE in received:
                return 0
        new = set(descendants(driver)) - before - noted
        noted |= new
        sessions.update(name for p in new if (name := session(p)) is not None)


class Reaper:
    """The driver's end of the watchdog: :meth:`release` once Ray is shut down."""

    def __init__(self, process: subprocess.Popen | None):
        self.process = process

    def release(self) -> None:
        if self.process is None or self.process.stdin is None:
            return
        try:
            self.process.stdin.write(RELEASE)
            self.process.stdin.close()
            self.process.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            pass
        self.process = None


def start() -> Reaper:
    """Start the watchdog of this process (a no-op :class:`Reaper` on Windows)."""
    if os.name == "nt":
        return Reaper(None)
    process = subprocess.Popen([sys.executable, "-m", "tune.reaper", str(os.getpid())], stdin=subprocess.PIPE,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    return Reaper(process)


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C of the terminal is the driver's to handle
    sys.exit(watch(int(sys.argv[1]), sys.stdin.buffer))
