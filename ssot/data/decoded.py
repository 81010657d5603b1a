"""The decoded-image cache: a task's images decoded once, resized, stored as uint8 in one file.

    python -m ssot.data prepare --task A2W --data-root DIR [--out PATH] [--resize-size 256]
    python -m ssot.train --task A2W --image-cache PATH ...

Decoding and resizing JPEGs on the CPU, every epoch, is what bounds an image trial on a fast GPU.
The cache decodes each image of a task once (source images, then the target images of the
partial target classes, in the order the JPEG loader uses), resizes it to a square
``resize_size x resize_size`` (PIL bilinear, antialiased, the aspect ratio not kept: the paper's
"256x256 resized images"; :func:`ssot.data.benchmarks.square_resize`) and stores the RGB pixels
as uint8. Training memory-maps the file (the operating system's page cache shares it between the
trials of a machine), gathers each batch's uint8 pixels and does the crops, flips and the
normalisation on the device (:mod:`ssot.data.augment`).

Default location: ``$SSOT_CACHE_DIR/<task>-<resize_size>.ssotimg`` when ``SSOT_CACHE_DIR`` is set,
else ``<data root>/decoded/<task>-<resize_size>.ssotimg``. A cache is about 192 KiB per image at
256 (Office-31 A2W: 3,612 images, 0.7 GB).

File format (version :data:`FORMAT`)
------------------------------------
=========  =========================================================================
bytes      content
=========  =========================================================================
0-7        the magic ``b"SSOTIMG\\n"``
8-15       ``L``, the length of the header region (little-endian uint64)
16-16+L    the header: UTF-8 JSON padded with spaces (the pixels start on a 4 KiB boundary)
16+L-end   ``N x S x S x 3`` uint8 pixels (RGB, row-major), source images first
=========  =========================================================================

The header is the provenance: ``format``, ``task``, ``dataset``, ``domains``, ``resize`` (size
and method), ``count`` (source and target), ``labels``, ``files`` (paths relative to the data
root), ``files_sha256`` (of the file list with labels), ``class_names``, ``target_classes``,
``data_sha256`` (the checksum of the pixels), ``created`` and, since format 2, ``header_sha256``
(the checksum of every other header field, :func:`header_checksum`): the two checksums cover
every byte that training reads. A cache is written to a temporary file and linked into place,
never over an existing file.

Opening one (:func:`open_cache`: once per process that trains on it, e.g. once per worker of a
search, never per epoch) refuses, in one line naming the file and the command that rebuilds it:
a file that is not a cache, of another format, a header whose length field exceeds the file, a
header whose checksum does not match (both checksums named), a header whose fields do not fit
(no task, counts that differ from the labels, a label outside the classes), another task or
``resize_size``, a truncated file, and pixels that do not match ``data_sha256`` (expected and
found named; the check reads the whole file once, measured in docs/gpu.md). A format-1 cache
(no header checksum) is accepted with a one-line warning, its fields still checked.
The cache does not look at the data root again: rebuild it when the images change.
"""
from __future__ import annotations

import hashlib
import json
import os
import struct
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from ssot.errors import DataError, SSOTError

FORMAT = 2
#: The formats this version opens: 2 (the header carries its own checksum) and 1 (it does not:
#: accepted with a warning).
READ_FORMATS = (1, 2)
MAGIC = b"SSOTIMG\n"
SUFFIX = ".ssotimg"
CACHE_DIR_ENV = "SSOT_CACHE_DIR"
_ALIGN = 4096
_PLACEHOLDER = "0" * 64
_CHUNK = 64 << 20


def default_path(task: str, data_root: str | Path, resize_size: int = 256) -> Path:
    """Where ``prepare`` writes the cache of ``task`` when no ``--out`` is given (module docstring)."""
    folder = os.environ.get(CACHE_DIR_ENV)
    base = Path(folder).expanduser() if folder else Path(data_root).expanduser() / "decoded"
    return base / f"{task}-{resize_size}{SUFFIX}"


def _decode(job: tuple[str, int]) -> bytes:
    from ssot.data.benchmarks import load_rgb, square_resize

    path, size = job
    pixels = np.asarray(square_resize(size)(load_rgb(Path(path))), dtype=np.uint8)
    return pixels.tobytes()


def _files_digest(files: dict[str, list[str]], labels: dict[str, list[int]]) -> str:
    text = "\n".join(f"{side}\t{path}\t{label}" for side in ("source", "target")
                     for path, label in zip(files[side], labels[side]))
    return hashlib.sha256(text.encode()).hexdigest()


def prepare(task: str, data_root: str | Path | None, out: str | Path | None = None, *, resize_size: int = 256,
            workers: int = 1, progress: bool = False) -> Path:
    """Decode, resize and store every image of ``task``; returns the path written.

    Parameters
    ----------
    task : a task of the image benchmarks, e.g. ``"A2W"``.
    data_root : the data root (``None``: ``$SSOT_DATA_ROOT``).
    out : the cache file (default :func:`default_path`), ending in :data:`SUFFIX`; it must not
        exist, nor be one of the task's images.
    resize_size : the side of the stored square images (the config's ``resize_size``).
    workers : processes decoding in parallel (0 or 1: this process decodes).
    progress : a progress bar.

    Raises
    ------
    ConfigError : unknown task, not a benchmark task, bad size.
    DataError : the data root or the task's images are missing or unreadable.
    SSOTError : ``out`` exists or cannot be written.
    """
    from ssot.data.layouts import benchmark_task, resolve_data_root, task_samples
    from ssot.results.outputs import check_output

    spec_task = benchmark_task(task)
    if not isinstance(resize_size, int) or resize_size < 1:
        raise SSOTError(f"The '--resize-size' argument must be an int >= 1. Got {resize_size!r} instead.")
    if not isinstance(workers, int) or workers < 0:
        raise SSOTError(f"The '--num-workers' argument must be an int >= 0 (decoding processes). Got {workers!r} instead.")
    root = resolve_data_root(data_root)
    out = Path(out).expanduser() if out else default_path(spec_task.name, root, resize_size)
    if out.suffix != SUFFIX:  # e.g. a .jpg in an image folder: the next listing of the data would read it as an image
        raise SSOTError(f"The '--out' argument must end in {SUFFIX}. Got {out.name!r} instead.")
    spec, source, target = task_samples(spec_task, root)
    check_output(out, "--out", folder=False, inputs=[p for p, _ in source + target])
    samples = {"source": source, "target": target}
    files = {side: [Path(p).relative_to(root).as_posix() if Path(p).is_relative_to(root) else str(p) for p, _ in s]
             for side, s in samples.items()}
    labels = {side: [int(label) for _, label in s] for side, s in samples.items()}
    header = {
        "format": FORMAT, "kind": "ssot decoded images", "task": spec_task.name, "dataset": spec.name,
        "domains": {"source": spec_task.source, "target": spec_task.target},
        "resize": {"size": resize_size, "method": "square: PIL bilinear (antialiased) to size x size, aspect not kept"},
        "layout": "N x size x size x 3 uint8 RGB, row-major; source images first",
        "count": {side: len(s) for side, s in samples.items()}, "class_names": list(spec.classes),
        "target_classes": spec.target_classes, "labels": labels, "files": files,
        "files_sha256": _files_digest(files, labels),
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
    jobs = [(str(p), resize_size) for p, _ in source + target]
    return write_cache(out, header, _decoded(jobs, workers, progress, spec_task.name))


def write_cache(out: Path, header: dict[str, Any], pixels: Iterable[bytes]) -> Path:
    """Write a cache file: ``header`` (its ``data_sha256`` and ``header_sha256`` filled in here)
    and the ``pixels`` chunks, in order, to a temporary file linked into place at ``out`` (never
    over an existing file). :func:`prepare` is its one caller but the benchmark of the checks,
    which writes caches of a task's size from generated pixels."""
    header = {**header, "data_sha256": _PLACEHOLDER, "header_sha256": _PLACEHOLDER}
    text = json.dumps(header)
    length = -(-(16 + len(text.encode())) // _ALIGN) * _ALIGN - 16
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    digest = hashlib.sha256()
    try:
        with open(tmp, "wb") as fh:
            fh.write(MAGIC + struct.pack("<Q", length) + text.encode().ljust(length))
            for chunk in pixels:
                fh.write(chunk)
                digest.update(chunk)
            header["data_sha256"] = digest.hexdigest()
            header["header_sha256"] = header_checksum(header)
            fh.seek(16)
            fh.write(json.dumps(header).encode().ljust(length))  # the same length: two hex strings of 64 replaced
            fh.flush()
            os.fsync(fh.fileno())
        try:
            os.link(tmp, out)  # atomic, and never over a file that appeared meanwhile
        except FileExistsError:
            raise SSOTError(f"--out {out} appeared while the cache was built; it is kept. Pass another --out.") from None
    finally:
        tmp.unlink(missing_ok=True)
    return out


def header_checksum(header: dict[str, Any]) -> str:
    """SHA-256 of a header's content but its own checksum (``header_sha256``), as canonical JSON
    (sorted keys): the labels, counts, classes and the pixels' checksum are covered by it."""
    content = {k: v for k, v in header.items() if k != "header_sha256"}
    return hashlib.sha256(json.dumps(content, sort_keys=True, ensure_ascii=True).encode()).hexdigest()


def _decoded(jobs: list[tuple[str, int]], workers: int, progress: bool, name: str):
    """The decoded pixels of ``jobs``, in order (``workers`` processes)."""
    from tqdm.auto import tqdm

    with tqdm(total=len(jobs), desc=f"decode {name}", unit="img", disable=not progress, dynamic_ncols=True,
              file=sys.stderr) as bar:
        if workers <= 1:
            for job in jobs:
                yield _decode(job)
                bar.update(1)
            return
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(workers) as pool:
            for pixels in pool.map(_decode, jobs, chunksize=16):
                yield pixels
                bar.update(1)


# ------------------------------------------------------------------------------------ reading
@dataclass
class DecodedCache:
    """An opened, checked cache: its header and its pixels, memory-mapped ``(N, S, S, 3)`` uint8."""

    path: Path
    header: dict[str, Any]
    pixels: np.ndarray

    @property
    def size(self) -> int:
        return int(self.header["resize"]["size"])

    def side(self, side: str) -> tuple[np.ndarray, list[int]]:
        """The pixels and labels of ``"source"`` or ``"target"``."""
        n_s = int(self.header["count"]["source"])
        pixels = self.pixels[:n_s] if side == "source" else self.pixels[n_s:]
        return pixels, list(self.header["labels"][side])


def rebuild_command(path: str | Path, task: str | None = None, resize_size: int | None = None) -> str:
    """The command that writes the cache at ``path`` again (once the old file is removed:
    ``prepare`` never overwrites)."""
    size = f" --resize-size {resize_size}" if resize_size not in (None, 256) else ""
    return f"python -m ssot.data prepare --task {task or 'TASK'} --data-root DIR{size} --out {path}"


def read_header(path: str | Path, task: str | None = None, resize_size: int | None = None) -> tuple[dict[str, Any], int]:
    """The header of a cache file, checked (:func:`check_header`), and the offset of its pixels.

    ``task`` and ``resize_size`` (what the caller expects) only make the rebuild command of a
    refusal complete.

    Raises
    ------
    DataError
        One line naming the file, what is wrong and the command that rebuilds it.
    """
    path = Path(path)
    command = rebuild_command(path, task, resize_size)
    rebuild = f"Remove it and rebuild it: `{command}`."
    if not path.is_file():
        what = "is a folder, not a file" if path.is_dir() else "does not exist"
        raise DataError(f"Decoded-image cache {path} {what}. Build it with "
                        f"`python -m ssot.data prepare --task {task or 'TASK'} --data-root DIR --out {path}`.")
    size = path.stat().st_size
    with open(path, "rb") as fh:
        head = fh.read(16)
        if len(head) < 16 or head[:8] != MAGIC:
            raise DataError(f"{path} is not a decoded-image cache (no SSOTIMG header). Pass a file written by "
                            "`python -m ssot.data prepare`.")
        (length,) = struct.unpack("<Q", head[8:])
        if length > size - 16:  # a damaged length field: never read (or allocate) more than the file holds
            raise DataError(f"Decoded-image cache {path} has a damaged header (its length field says {length} bytes, the file "
                            f"holds {size}). {rebuild}")
        raw = fh.read(length)
    try:
        header = json.loads(raw.decode())
    except (UnicodeDecodeError, json.JSONDecodeError):
        header = None
    if not isinstance(header, dict):
        raise DataError(f"Decoded-image cache {path} has a damaged header (not a JSON object). {rebuild}")
    if header.get("format") not in READ_FORMATS:
        raise DataError(f"Decoded-image cache {path} has format {header.get('format')!r}; this version reads formats "
                        f"{', '.join(map(str, READ_FORMATS))}. {rebuild}")
    check_header(header, path, command)
    return header, 16 + length


def check_header(header: dict[str, Any], path: str | Path, command: str) -> None:
    """Refuse a header whose checksum (``header_sha256``, format 2) does not match it, or whose
    fields do not fit together: the task, the size, the counts, the class names, the target
    classes and every label (in range, one per image). A format-1 header (no checksum of its
    own) is accepted with a one-line warning per process, its fields still checked. ``command``
    rebuilds the cache (:func:`rebuild_command`)."""
    rebuild = f"Remove it and rebuild it: `{command}`."
    if header["format"] >= 2:
        recorded, found = header.get("header_sha256"), header_checksum(header)
        if recorded != found:
            raise DataError(f"Decoded-image cache {path} has a damaged header: its SHA-256 is {found}, expected {recorded}. "
                            f"{rebuild}")
    elif str(path) not in _WARNED:
        _WARNED.add(str(path))
        print(f"warning: decoded-image cache {path} is of format 1: its header (labels, classes) carries no checksum and "
              f"is only checked for plausibility; rebuild it to have it checked: `{command}`",
              file=sys.stderr, flush=True)
    problem = _header_problem(header)
    if problem:
        raise DataError(f"Decoded-image cache {path} has a damaged header ({problem}). {rebuild}")


def _header_problem(h: dict[str, Any]) -> str:
    """What does not fit in a header's fields, or ``""``."""
    def is_int(value: Any, low: int = 0) -> bool:
        return isinstance(value, int) and not isinstance(value, bool) and value >= low

    if not isinstance(h.get("task"), str) or not h["task"]:
        return "no task"
    if not isinstance(h.get("resize"), dict) or not is_int(h["resize"].get("size"), 1):
        return "no resize size"
    names = h.get("class_names")
    if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
        return "no class names"
    targets = h.get("target_classes")
    if not isinstance(targets, list) or not targets or not all(is_int(k) and k < len(names) for k in targets):
        return f"target_classes are not classes in [0, {len(names)})"
    if not isinstance(h.get("data_sha256"), str):
        return "no data_sha256"
    count, labels = h.get("count"), h.get("labels")
    if not isinstance(count, dict) or not isinstance(labels, dict):
        return "no counts or labels"
    for side, allowed in (("source", range(len(names))), ("target", set(targets))):
        n, values = count.get(side), labels.get(side)
        if not is_int(n, 1) or not isinstance(values, list) or len(values) != n:
            return f"{side}: count {n!r} and {len(values) if isinstance(values, list) else 'no'} labels"
        bad = next((v for v in values if not (is_int(v) and v in allowed)), None)
        if bad is not None:
            kind = "a class" if side == "source" else "a target class"
            return f"{side} label {bad!r} is not {kind} (the cache has {len(names)} classes, target classes {targets})"
    return ""


#: The paths whose format-1 header was already reported by this process (one warning each).
_WARNED: set[str] = set()


def open_cache(path: str | Path, task: str, resize_size: int, *, verify: bool = True) -> DecodedCache:
    """Open the cache at ``path`` for ``task`` at ``resize_size``: refused, in one line naming the
    command that rebuilds it, when its header is damaged (:func:`read_header`), of another task or
    size, truncated, or (``verify``) its pixels do not match their checksum."""
    path = Path(path).expanduser()
    header, offset = read_header(path, task, resize_size)
    rebuild = f"Remove it and rebuild it: `{rebuild_command(path, task, resize_size)}`."
    if header["task"] != task:
        raise DataError(f"Decoded-image cache {path} holds task {header['task']!r}, not {task!r}. Pass the cache of "
                        f"task {task!r} or build it: `python -m ssot.data prepare --task {task} --data-root DIR`.")
    size = int(header["resize"]["size"])
    if size != resize_size:
        raise DataError(f"Decoded-image cache {path} holds {size}x{size} images but the config's resize_size is "
                        f"{resize_size}. Pass --resize-size {size}, or build a cache with --resize-size {resize_size}.")
    n = int(header["count"]["source"]) + int(header["count"]["target"])
    expected = offset + n * size * size * 3
    actual = path.stat().st_size
    if actual != expected:
        raise DataError(f"Decoded-image cache {path} is truncated or damaged ({actual} bytes, expected {expected}). {rebuild}")
    if verify:
        found = pixels_checksum(path, offset)
        if found != header["data_sha256"]:
            raise DataError(f"Decoded-image cache {path} is damaged: the SHA-256 of its pixels is {found}, expected "
                            f"{header['data_sha256']}. {rebuild}")
    pixels = np.memmap(path, dtype=np.uint8, mode="r", offset=offset, shape=(n, size, size, 3))
    return DecodedCache(path, header, pixels)


def pixels_checksum(path: str | Path, offset: int) -> str:
    """SHA-256 of the file's bytes from ``offset`` on (the pixels), read in 64 MiB chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        fh.seek(offset)
        while chunk := fh.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()
