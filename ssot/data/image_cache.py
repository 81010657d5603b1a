"""The decoded-image cache an image task trains on by default: ``image_cache = "auto"``.

A run (``python -m ssot.train``), the trials of a search, a confirmation and a final run of a task
of the paper's image benchmarks train on the task's decoded-image cache (:mod:`ssot.data.decoded`:
the images decoded once, square-resized to ``resize_size``, stored as uint8; crops, flips and the
normalisation on the device) unless the config says ``image_cache = "off"`` (``--image-cache off``:
decode the image files every epoch) or names a cache file of its own. The square 256x256 resize is
the paper's own preprocessing: "224x224 center crops of 256x256 resized images".

The cache is prepared on first use, once per machine, task and ``resize_size``, and shared by every
later run, trial and command (:func:`ensure`):

- **where**: ``$SSOT_CACHE_DIR/<task>-<size>.ssotimg`` when ``SSOT_CACHE_DIR`` is set, else
  ``<data root>/decoded/<task>-<size>.ssotimg`` (:func:`ssot.data.decoded.default_path`);
- **when**: it does not exist, or it no longer holds the images under the data root: its header
  records the list of files with their labels (``files_sha256``) and their sizes and
  modification times (``files_stat_sha256``), compared with a listing of the data root (no image
  opened; :meth:`ssot.data.decoded.Listing.changed`). Then it is rebuilt in place, atomically (a
  process reading the old file keeps it until it closes it). A header that cannot be read
  counts as changed.
- **disk**: before preparing, the space it needs is compared with the free space of its folder;
  too little is refused in one line, before any work (:func:`check_space`, exit status 2);
- **lock**: preparing holds a file lock beside the cache (``<cache>.lock``, the ``filelock``
  library), so two commands started together prepare it once: the second says that it waits,
  then finds the cache ready;
- **progress**: a progress bar (tqdm, on stderr) while the images are decoded, when asked.

A search prepares it in its driver before any trial starts (:mod:`tune.choices`), so that its
trials find it ready; a trial on a machine without it (a node of a Ray cluster whose cache folder
is not shared) prepares its own, under the same lock.
"""
from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ssot.data.decoded import Listing, cache_bytes, default_path, listing, read_header
from ssot.errors import DataError

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from ssot.config import SSOTConfig

#: What :func:`ensure` found or did.
READY, MISSING, STALE = "ready", "missing", "stale"
REUSED, PREPARED, REBUILT, WAITED = "reused", "prepared", "rebuilt", "prepared by another process"
_GIB = 2**30


def applies(config: SSOTConfig) -> bool:
    """Whether ``config`` trains on its task's default cache: ``image_cache`` is ``auto``, the task
    is one of the image benchmarks and its images are read (not a feature cache)."""
    from ssot.data.registry import task

    return config.image_cache == "auto" and config.backbone != "features" and task(config.task).spec.on_disk


@dataclass(frozen=True)
class CacheState:
    """The default cache of a config as it is on disk now (:func:`inspect`)."""

    path: Path
    resize_size: int
    state: str  # READY, MISSING or STALE
    reason: str  # why STALE
    images: Listing
    needed: int  # bytes a new cache takes
    free: int  # bytes free in its folder (or the nearest folder that exists)

    @property
    def folder(self) -> Path:
        return _existing(self.path.parent)

    def plan(self) -> str:
        """One line: what preparing it writes, and the disk it needs."""
        s = self.resize_size
        what = f"rebuilding {self.path} ({self.reason})" if self.state == STALE else f"preparing {self.path}"
        return (f"decoded-image cache: {what}: {self.images.count:,} images at {s}x{s}, needs {self.needed / _GIB:.2f} GiB "
                f"of disk, {self.free / _GIB:.2f} GiB free in {self.folder}")


def _existing(path: Path) -> Path:
    """``path``, or its nearest parent that exists (where a new folder would be created)."""
    return next(p for p in (path, *path.parents) if p.exists())


def inspect(config: SSOTConfig) -> CacheState:
    """The default cache of ``config`` (:func:`applies`): where it is, whether it is ready, missing
    or stale, and the disk a new one needs. Lists the task's images (opens none), reads the cache's
    header only.

    Raises
    ------
    ConfigError, DataError : as :func:`ssot.data.decoded.listing` (no data root, missing images).
    """
    images = listing(config.task, config.data_root)
    path = default_path(images.task, images.root, config.resize_size)
    state, reason = MISSING, ""
    if path.exists():
        try:
            header, _ = read_header(path, images.task, config.resize_size)
        except DataError as exc:
            state, reason = STALE, f"it cannot be used: {exc}"
        else:
            if header.get("task") != images.task or header.get("resize", {}).get("size") != config.resize_size:
                state, reason = STALE, f"it holds task {header.get('task')!r} at {header.get('resize', {}).get('size')}"
            else:
                reason = images.changed(header)
                state = STALE if reason else READY
    free = shutil.disk_usage(_existing(path.parent)).free
    return CacheState(path, config.resize_size, state, reason, images, cache_bytes(images.count, config.resize_size), free)


def check_space(state: CacheState) -> None:
    """Refuse, in one line, a cache to prepare that does not fit in the free space of its folder.

    Raises
    ------
    DataError
        Naming the space needed and free, and the three ways out.
    """
    if state.state != READY and state.free < state.needed:
        raise DataError(f"Not enough free disk for the decoded-image cache of {state.images.task}: it needs "
                        f"{state.needed / _GIB:.2f} GiB at {state.path}, {state.free / _GIB:.2f} GiB are free in "
                        f"{state.folder}. Free space there, set SSOT_CACHE_DIR to a folder with room, or pass "
                        "--image-cache off to decode the image files instead.")


def check(config: SSOTConfig) -> None:
    """What a command refuses before any work about the default cache of ``config``: too little
    disk to prepare it (:func:`check_space`) or a cache folder that cannot be written. Nothing
    for a config that does not use it (:func:`applies`)."""
    if applies(config):
        _refuse(inspect(config))


def _refuse(state: CacheState) -> None:
    """Refuse a cache to prepare that does not fit, or whose folder cannot be written."""
    from ssot.errors import SSOTError
    from ssot.results.outputs import check_output

    if state.state == READY:
        return
    check_space(state)
    try:
        check_output(state.path, "decoded-image cache location", folder=False, exists_ok=True)
    except SSOTError as exc:
        raise DataError(f"{exc} Set SSOT_CACHE_DIR to choose it, or pass --image-cache off to decode the image files "
                        "instead.") from None


@dataclass(frozen=True)
class Prepared:
    """The cache a config trains on, and what :func:`ensure` did to have it."""

    path: Path
    how: str  # REUSED, PREPARED, REBUILT or WAITED
    detail: str  # one line: the cache and how it came to be
    seconds: float = 0.0

    def record(self) -> dict[str, Any]:
        return {"path": str(self.path), "how": self.how, "detail": self.detail, "seconds": round(self.seconds, 1)}


def ensure(config: SSOTConfig, *, progress: bool = False, log: Callable[[str], None] | None = None) -> Prepared:
    """The default cache of ``config`` (:func:`applies`), prepared if it is missing or stale
    (module docstring): the disk it needs checked first, under the cache's file lock, decoded by
    the usable CPUs; ``log`` receives a line before the work and one while waiting for another
    process.

    Raises
    ------
    DataError : no data root or images, too little disk, an unreadable image.
    SSOTError : the cache's folder cannot be written.
    """
    from filelock import FileLock, Timeout

    from ssot.data.base import usable_workers
    from ssot.data.decoded import prepare

    say = log or (lambda line: None)
    state = inspect(config)
    if state.state == READY:
        return Prepared(state.path, REUSED, f"{state.path} (ready: the images under the data root have not changed)")
    _refuse(state)
    lock = FileLock(f"{state.path}.lock")
    waited = False
    try:
        lock.acquire(timeout=0)
    except Timeout:
        say(f"decoded-image cache: waiting for another process that prepares {state.path} (lock {state.path}.lock)")
        lock.acquire()
        waited = True
    try:
        state = inspect(config)  # what the other process left, if one held the lock
        if state.state == READY:
            how = WAITED if waited else REUSED
            return Prepared(state.path, how, f"{state.path} ({how})")
        check_space(state)
        say(state.plan())
        start = time.perf_counter()
        workers = usable_workers(min(64, state.images.count // 256))  # a process pool pays off from a few hundred images
        prepare(state.images.task, state.images.root, state.path, resize_size=state.resize_size, workers=workers,
                progress=progress, replace=state.state == STALE, images=state.images)
        seconds = time.perf_counter() - start
    finally:
        lock.release()
    how = REBUILT if state.state == STALE else PREPARED
    size = state.path.stat().st_size / _GIB
    what = f"rebuilt ({state.reason})" if how == REBUILT else "prepared"
    return Prepared(state.path, how, f"{state.path} ({what} in {seconds:.0f} s: {state.images.count:,} images, {size:.2f} GiB)",
                    seconds)


def path_for(config: SSOTConfig, *, progress: bool = False, log: Callable[[str], None] | None = None) -> str | None:
    """The cache file ``config`` trains on: the path it names, its default cache (:func:`ensure`),
    or ``None`` (``off``, or a task that reads no images of a benchmark)."""
    if config.image_cache_path:
        return os.fspath(Path(config.image_cache_path).expanduser())
    return str(ensure(config, progress=progress, log=log).path) if applies(config) else None


def prepare_for(configs: Iterable[SSOTConfig], *, progress: bool = False,
                log: Callable[[str], None] | None = print) -> dict[tuple[str, str | None, int], Prepared]:
    """:func:`ensure` the default cache of every distinct (task, data root, ``resize_size``) of
    ``configs`` that uses one (:func:`applies`), before a command trains: each says in one line
    which cache it trains on and how it came to be (``log``). What a command calls before any
    run or trial starts, so that every run finds its cache ready."""
    done: dict[tuple[str, str | None, int], Prepared] = {}
    for config in configs:
        key = (config.task, config.data_root, config.resize_size)
        if key in done or not applies(config):
            continue
        done[key] = ensure(config, progress=progress, log=log)
        if log is not None:
            log(f"decoded-image cache of {config.task}: {done[key].detail}; --image-cache off decodes the image files instead")
    return done
