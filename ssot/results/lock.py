"""The lock of an experiment folder: one search driver at a time (a new search or ``--resume``).

A driver takes the lock before any work and releases it when it ends (also on an error or
Ctrl-C); a second driver with the same ``--name`` and task is refused in one line naming the
first one. The lock is a small JSON file, :data:`LOCK_FILE`, in the experiment folder, naming its
holder (``host``, ``pid``, ``started``, the process's start time ``created`` and a ``token``).

Local folders (NFS included)
    filelock's ``FileLock`` holds an OS lock (``flock``) on the file for the driver's whole life:
    of two drivers exactly one gets it, and the kernel drops it when the driver ends, however it
    ends. A driver killed with ``kill -9`` leaves the file but not the OS lock, so the next driver
    on the same host that gets the OS lock knows the holder named in the file is gone: it takes
    over and says so. A file naming another host is refused (not every network file system
    shares ``flock`` between hosts), and the message says which file to delete.
Object storage (``s3://...``)
    Kept here because no library covers it: filelock needs a file system's locks, and pyarrow's
    file systems offer no conditional create. So the lock is a best-effort marker: the driver
    writes it with a token of its own, waits :data:`SETTLE_S` seconds and reads it back; of
    drivers that wrote within that time, only the last writer (the one whose token it reads back)
    goes on. S3 reads are strongly consistent, so two drivers started at once both read the same
    winner; drivers started more than the settle time apart see the first one's marker. A marker
    whose process no longer runs on this host (psutil: its pid and start time) is stale and
    removed with a note; on another host it is refused as above.
"""
from __future__ import annotations

import json
import os
import socket
import time
import uuid
from pathlib import Path
from typing import Any

import psutil
from filelock import FileLock, Timeout

from ssot.errors import SSOTError
from ssot.results import storage
from ssot.results.experiment import now

LOCK_FILE = ".ssot-search.lock"
#: Seconds an object-storage driver waits before reading its marker back.
SETTLE_S = 2.0


class LockedError(SSOTError):
    """Another search driver holds the experiment's lock (one line: who, and how to go on)."""


def _created(pid: int) -> float | None:
    """The start time of process ``pid`` (seconds since the epoch), None when it is not running."""
    try:
        return psutil.Process(pid).create_time()
    except psutil.Error:
        return None


def _alive(holder: dict[str, Any]) -> bool | None:
    """Whether the process that wrote ``holder`` still runs: None when it cannot be told
    (another host); a reused pid or a rebooted machine (another start time) counts as not running."""
    if holder.get("host") != socket.gethostname():
        return None
    pid = holder.get("pid")
    if not isinstance(pid, int) or pid <= 0:
        return False
    created = _created(pid)
    recorded = holder.get("created")
    return created is not None and (not isinstance(recorded, (int, float)) or abs(created - recorded) < 0.01)


class ExperimentLock:
    """The lock of the experiment folder ``folder`` (a local path or a URI); a context manager.

    ``notes`` receives the lines to print (e.g. a stale lock broken)."""

    def __init__(self, folder: str, notes: Any = print):
        self.folder, self.notes = folder, notes
        self.path = storage.join(folder, LOCK_FILE)
        self.token = uuid.uuid4().hex
        self.held = False
        self.created: list[Path] = []  # local folders made to hold the lock, removed with it when left empty
        self.os_lock: FileLock | None = None  # the local case's

    def holder(self) -> dict[str, Any] | None:
        """The content of the lock file, or None when there is none (or it is empty)."""
        text = storage.read_text(self.path)
        if not text:
            return None
        try:
            content = json.loads(text)
        except json.JSONDecodeError:
            content = None
        return content if isinstance(content, dict) else {"unreadable": text[:100]}

    def _content(self) -> str:
        pid = os.getpid()
        return json.dumps({"host": socket.gethostname(), "pid": pid, "started": now(), "created": _created(pid),
                           "token": self.token}) + "\n"

    def acquire(self) -> None:
        """Take the lock, taking over a stale one of this host (with a note).

        Raises
        ------
        LockedError
            When another driver holds it (or wrote its object-storage marker at the same time).
        """
        for attempt in range(3):
            stale = self._take_marker() if storage.is_uri(self.path) else self._take_local()
            if stale is not None:
                self.held = True
                return
            time.sleep(0.1 * attempt)  # released (or its holder not written yet) meanwhile: try again
        raise LockedError(self._refusal(self.holder() or {}))

    def _note_stale(self, holder: dict[str, Any]) -> None:
        self.notes(f"note: removed the stale lock {self.path} of pid {holder.get('pid')} on {holder.get('host')} "
                   f"(started {holder.get('started')}; that process no longer runs)")

    def _take_local(self) -> dict[str, Any] | None:
        """Take the OS lock and write this driver's file: the stale holder it replaced (``{}`` for
        none), or None when the lock was released meanwhile."""
        path = Path(self.path)
        self.created = self.created or [p for p in path.parents if not p.exists()]  # deepest first
        path.parent.mkdir(parents=True, exist_ok=True)
        lock = FileLock(self.path, timeout=0, fallback_to_soft=False)
        try:
            lock.acquire()
        except Timeout:
            holder = self.holder()
            if holder is None:
                return None
            raise LockedError(self._refusal(holder)) from None
        previous = self.holder() or {}
        if previous and previous.get("host") != socket.gethostname():  # its OS lock may not reach this host
            lock.release()
            raise LockedError(self._refusal(previous))
        path.write_text(self._content())
        self.os_lock = lock
        if previous:  # its OS lock is gone: the process that held it no longer runs
            self._note_stale(previous)
        return previous

    def _take_marker(self) -> dict[str, Any] | None:
        """Object storage: write this driver's marker if there is none and read it back after
        :data:`SETTLE_S` (``{}``: taken); None after removing a stale one."""
        holder = self.holder()
        if holder is not None:
            if _alive(holder) is not False:
                raise LockedError(self._refusal(holder))
            if self.holder() == holder:  # not replaced meanwhile
                storage.remove(self.path)
                self._note_stale(holder)
            return None
        storage.write_text(self.path, self._content())
        time.sleep(SETTLE_S)  # another driver that wrote meanwhile: the last writer wins, the others see it
        holder = self.holder()
        if holder is not None and holder.get("token") == self.token:
            return {}
        raise LockedError(self._refusal(holder or {}))

    def _refusal(self, holder: dict[str, Any]) -> str:
        who = (f"pid {holder.get('pid')} on {holder.get('host')}, started {holder.get('started')}" if "pid" in holder
               else "an unreadable lock")
        return (f"Experiment {self.folder} is in use by another search ({who}; lock {self.path}). Wait for it to end, "
                "or choose another --name. If that search no longer runs (killed on another machine, or the machine "
                f"was lost), delete {self.path} and rerun.")

    def release(self) -> None:
        """Remove the lock if this driver holds it (its own, never another one's), and the
        folders made to hold it if nothing else was written there (a refused search leaves nothing)."""
        if not self.held:
            return
        self.held = False
        try:
            if self.os_lock is not None:  # the file goes while the OS lock is still held
                Path(self.path).unlink(missing_ok=True)
                self.os_lock.release()
                self.os_lock = None
            elif (holder := self.holder()) is not None and holder.get("token") == self.token:
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
