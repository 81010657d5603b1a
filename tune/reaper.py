"""A watchdog that ends the processes of a search's own Ray when its driver is killed.

A search that starts its own Ray (no ``--address``) shuts it down when it ends, also after an
error or Ctrl-C. A driver killed with SIGKILL cannot: Ray's kernel fate-sharing ends the
processes the driver started itself (GCS, raylet), but processes those started (Ray's
``DashboardAgent``, ``RuntimeEnvAgent``, idle workers) were seen alive for over 30 seconds after.
So before ``ray.init`` the driver starts this watchdog (``python -m tune.reaper DRIVER_PID``), in
a session of its own, with a pipe on its standard input:

- every :data:`SCAN_S` seconds it notes the processes that descend from the driver and were not
  there when it started (Ray's; their start times too, so a reused pid is never touched);
- the driver writes ``release`` when it has shut Ray down: the watchdog exits, touching nothing;
- end of input without ``release`` means the driver died: the noted processes still alive get
  SIGTERM, then SIGKILL after :data:`GRACE_S` seconds; so do, for a few more seconds, processes
  that name the noted processes' Ray session on their command line (a worker the raylet was
  starting as the driver died was seen to escape the last scan).

Linux only (``/proc``); elsewhere :func:`start` does nothing. Standard library only: it must start
in milliseconds, before Ray.
"""
from __future__ import annotations

import os
import re
import select
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import IO

SCAN_S = 0.5
GRACE_S = 2.0
#: Seconds after the driver's death during which late processes of its Ray session are ended too.
LATE_S = 5.0
RELEASE = b"release\n"
#: A Ray session folder's name, as Ray's processes carry it on their command line.
SESSION = re.compile(rb"session_\d{4}-\d\d-\d\d_\d\d-\d\d-\d\d_\d+_\d+")


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def processes() -> dict[int, tuple[int, str]]:
    """Every process: pid -> (parent pid, start time in clock ticks since boot)."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        found[int(entry.name)] = (int(fields[1]), fields[19])
    return found


def descendants(root: int, table: dict[int, tuple[int, str]]) -> dict[int, str]:
    """The processes below ``root`` in ``table`` (:func:`processes`): pid -> start time."""
    children: dict[int, list[int]] = {}
    for pid, (parent, _) in table.items():
        children.setdefault(parent, []).append(pid)
    out, stack = {}, list(children.get(root, []))
    while stack:
        pid = stack.pop()
        out[pid] = table[pid][1]
        stack.extend(children.get(pid, []))
    return out


def reap(noted: dict[int, str]) -> None:
    """SIGTERM, then SIGKILL, the ``noted`` processes that still run (same pid and start time)."""
    def alive() -> list[int]:
        table = processes()
        return [pid for pid, started in noted.items() if pid in table and table[pid][1] == started]

    for sig, wait in ((signal.SIGTERM, GRACE_S), (signal.SIGKILL, 0.0)):
        left = alive()
        for pid in left:
            try:
                os.kill(pid, sig)
            except (ProcessLookupError, PermissionError):
                pass
        deadline = time.monotonic() + wait
        while left and time.monotonic() < deadline:
            time.sleep(0.1)
            left = alive()
        if not left:
            break


def late(sessions: set[bytes]) -> dict[int, str]:
    """Processes whose command line names one of the Ray ``sessions``: pid -> start time."""
    return {pid: started for pid, (_, started) in processes().items() if pid != os.getpid()
            and (found := SESSION.search(_cmdline(pid))) is not None and found.group(0) in sessions}


def watch(driver: int, source: IO[bytes]) -> int:
    """Note the driver's new descendants until ``release`` (0) or the end of input (reap them)."""
    before = set(descendants(driver, processes()))
    noted: dict[int, str] = {}
    sessions: set[bytes] = set()
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
        new = {pid: t for pid, t in descendants(driver, processes()).items() if pid not in before and pid not in noted}
        noted.update(new)
        sessions.update(found.group(0) for pid in new if (found := SESSION.search(_cmdline(pid))) is not None)


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
    """Start the watchdog of this process (a no-op :class:`Reaper` where ``/proc`` is missing)."""
    if not Path("/proc/self/stat").exists():
        return Reaper(None)
    process = subprocess.Popen([sys.executable, "-m", "tune.reaper", str(os.getpid())], stdin=subprocess.PIPE,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    return Reaper(process)


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C of the terminal is the driver's to handle
    sys.exit(watch(int(sys.argv[1]), sys.stdin.buffer))
