"""The lock of an experiment folder: one search driver at a time (a new search or ``--resume``).

A driver takes the lock before any work and releases it when it ends (also on an error or
Ctrl-C); a second driver with the same ``--name`` and task is refused in one line naming the
first one. The lock is a small JSON file, :data:`LOCK_FILE`, in the experiment folder, holding
the ``host``, ``pid``, ``started`` time and the process's start token (``pid_start``, ``boot_id``:
Linux ``/proc``), so that a lock whose process is gone can be told from a live one.

Local folders (NFS included)
    The lock is created with ``O_CREAT | O_EXCL``: of two drivers, exactly one creates it.
Object storage (``s3://...``)
    pyarrow offers no conditional create, so the lock is a best-effort marker: the driver writes
    it with a token of its own, waits :data:`SETTLE_S` seconds and reads it back; of drivers that
    wrote within that time, only the last writer (the one whose token it reads back) goes on.
    S3 reads are strongly consistent, so two drivers started at once both read the same winner;
    drivers started more than the settle time apart see the first one's marker.

A stale lock (its process is no longer running: a driver killed with ``kill -9``, a machine that
rebooted) is broken by the next driver on the same host, which says so. On another host the pid
cannot be checked: that driver is refused, and the message says which file to delete once the
user knows the first search no longer runs.
"""
from __future__ import annotations

import json
import os
import socket
import time
import uuid
from pathlib import Path
from typing import Any

from ssot.errors import SSOTError
from ssot.results import storage
from ssot.results.experiment import now

LOCK_FILE = ".ssot-search.lock"
#: Seconds an object-storage driver waits before reading its marker back.
SETTLE_S = 2.0


class LockedError(SSOTError):
    """Another search driver holds the experiment's lock (one line: who, and how to go on)."""


def _proc_start(pid: int) -> str | None:
    """The start time of process ``pid`` in clock ticks since boot (Linux), None elsewhere."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def _boot_id() -> str | None:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return None


def _alive(holder: dict[str, Any]) -> bool | None:
    """Whether the process that wrote ``holder`` still runs: None when it cannot be told
    (another host); a reused pid or a rebooted machine counts as not running."""
    if holder.get("host") != socket.gethostname():
        return None
    if holder.get("boot_id") and _boot_id() and holder["boot_id"] != _boot_id():
        return False
    pid = holder.get("pid")
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # it runs, as another user
        return True
    return holder.get("pid_start") is None or holder["pid_start"] == _proc_start(pid)


class ExperimentLock:
    """The lock of the experiment folder ``folder`` (a local path or a URI); a context manager.

    ``notes`` receives the lines to print (e.g. a stale lock broken)."""

    def __init__(self, folder: str, notes: Any = print):
        self.folder, self.notes = folder, notes
        self.path = storage.join(folder, LOCK_FILE)
        self.token = uuid.uuid4().hex
        self.held = False
        self.created: list[Path] = []  # local folders made to hold the lock, removed with it when left empty

    def holder(self) -> dict[str, Any] | None:
        """The content of the lock file, or None when there is none."""
        text = storage.read_text(self.path)
        if text is None:
            return None
        try:
            content = json.loads(text)
        except json.JSONDecodeError:
            content = None
        return content if isinstance(content, dict) else {"unreadable": text[:100]}

    def _content(self) -> str:
        pid = os.getpid()
        return json.dumps({"host": socket.gethostname(), "pid": pid, "started": now(), "pid_start": _proc_start(pid),
                           "boot_id": _boot_id(), "token": self.token}) + "\n"

    def acquire(self) -> None:
        """Take the lock, breaking a stale one of this host.

        Raises
        ------
        LockedError
            When another driver holds it (or wrote its object-storage marker at the same time).
        """
        for _ in range(3):
            if self._create():
                self.held = True
                return
            holder = self.holder()
            if holder is None:  # released meanwhile: try again
                continue
            if _alive(holder) is False and self._break(holder):
                self.notes(f"note: removed the stale lock {self.path} of pid {holder.get('pid')} on {holder.get('host')} "
                           f"(started {holder.get('started')}; that process no longer runs)")
                continue
            raise LockedError(self._refusal(holder))
        raise LockedError(self._refusal(self.holder() or {}))

    def _refusal(self, holder: dict[str, Any]) -> str:
        who = (f"pid {holder.get('pid')} on {holder.get('host')}, started {holder.get('started')}" if "pid" in holder
               else "an unreadable lock")
        return (f"Experiment {self.folder} is in use by another search ({who}; lock {self.path}). Wait for it to end, "
                "or choose another --name. If that search no longer runs (killed on another machine, or the machine "
                f"was lost), delete {self.path} and rerun.")

    def _create(self) -> bool:
        """Create the lock file if there is none: True when this driver holds it now."""
        if not storage.is_uri(self.path):
            path = Path(self.path)
            self.created = self.created or [p for p in path.parents if not p.exists()]  # deepest first
            path.parent.mkdir(parents=True, exist_ok=True)
            try:
                fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                return False
            with os.fdopen(fd, "w") as out:
                out.write(self._content())
            return True
        if storage.exists(self.path):
            return False
        storage.write_text(self.path, self._content())
        time.sleep(SETTLE_S)  # another driver that wrote meanwhile: the last writer wins, the others see it
        holder = self.holder()
        return holder is not None and holder.get("token") == self.token

    def _break(self, stale: dict[str, Any]) -> bool:
        """Remove a stale lock, unless another driver replaced it meanwhile."""
        if storage.is_uri(self.path):
            if self.holder() != stale:
                return False
            storage.remove(self.path)
            return True
        aside = Path(f"{self.path}.stale-{self.token}")
        try:
            os.rename(self.path, aside)
        except FileNotFoundError:
            return True  # removed meanwhile
        try:
            taken = json.loads(aside.read_text())
        except (OSError, json.JSONDecodeError):
            taken = None
        if taken == stale or not isinstance(taken, dict):
            aside.unlink(missing_ok=True)
            return True
        try:  # another driver broke the stale lock and took a new one first: put its lock back
            os.link(aside, self.path)
        except FileExistsError:
            pass
        aside.unlink(missing_ok=True)
        return False

    def release(self) -> None:
        """Remove the lock if this driver holds it (its own, never another one's), and the
        folders made to hold it if nothing else was written there (a refused search leaves nothing)."""
        if not self.held:
            return
        self.held = False
        try:
            holder = self.holder()
            if holder is not None and holder.get("token") == self.token:
                storage.remove(self.path)
        except OSError:  # a storage that failed (read-only, unreachable): the next driver finds the lock stale
            return
        for folder in self.created:
            try:
                folder.rmdir()
            except OSError:  # not empty: the search wrote there
                break

    def __enter__(self) -> ExperimentLock:
        self.acquire()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.release()
