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
``data_sha256`` (the checksum of the pixels) and ``created``. A cache is written to a temporary
file and linked into place, never over an existing file. Opening one checks, in one line each:
that it is a cache of this format, of this task and of this ``resize_size``, that it is not
truncated, and its checksum (which reads the whole file once: about a second per GB).
The cache does not look at the data root again: rebuild it when the images change.
"""
from __future__ import annotations

import hashlib
import json
import os
import struct
import sys
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.utils.data import Dataset

from ssot.data import augment
from ssot.data.base import TaskData
from ssot.errors import DataError, SSOTError

FORMAT = 1
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
    out : the cache file (default :func:`default_path`); it must not exist.
    resize_size : the side of the stored square images (the config's ``resize_size``).
    workers : processes decoding in parallel.
    progress : a progress bar.

    Raises
    ------
    ConfigError : unknown task, not a benchmark task, bad size.
    DataError : the data root or the task's images are missing or unreadable.
    SSOTError : ``out`` exists or cannot be written.
    """
    from ssot.cli import check_output
    from ssot.data.benchmarks import benchmark_task, resolve_data_root, task_samples

    spec_task = benchmark_task(task)
    if not isinstance(resize_size, int) or resize_size < 1:
        raise SSOTError(f"The '--resize-size' argument must be an int >= 1. Got {resize_size!r} instead.")
    root = resolve_data_root(data_root)
    out = Path(out).expanduser() if out else default_path(spec_task.name, root, resize_size)
    check_output(out, "--out", folder=False)
    spec, source, target = task_samples(spec_task, root)
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
        "files_sha256": _files_digest(files, labels), "data_sha256": _PLACEHOLDER,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
    text = json.dumps(header)
    length = -(-(16 + len(text.encode())) // _ALIGN) * _ALIGN - 16
    jobs = [(str(p), resize_size) for p, _ in source + target]
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    digest = hashlib.sha256()
    try:
        with open(tmp, "wb") as fh:
            fh.write(MAGIC + struct.pack("<Q", length) + text.encode().ljust(length))
            for pixels in _decoded(jobs, workers, progress, spec_task.name):
                fh.write(pixels)
                digest.update(pixels)
            fh.seek(16)
            fh.write(text.replace(f'"data_sha256": "{_PLACEHOLDER}"', f'"data_sha256": "{digest.hexdigest()}"', 1)
                     .encode().ljust(length))
            fh.flush()
            os.fsync(fh.fileno())
        try:
            os.link(tmp, out)  # atomic, and never over a file that appeared meanwhile
        except FileExistsError:
            raise SSOTError(f"--out {out} appeared while the cache was built; it is kept. Pass another --out.") from None
    finally:
        tmp.unlink(missing_ok=True)
    return out


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


def read_header(path: str | Path) -> tuple[dict[str, Any], int]:
    """The header of a cache file and the offset of its pixels (one-line :class:`DataError` otherwise)."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"Decoded-image cache {path} does not exist. Build it with "
                        f"`python -m ssot.data prepare --task TASK --data-root DIR --out {path}`.")
    with open(path, "rb") as fh:
        head = fh.read(16)
        if len(head) < 16 or head[:8] != MAGIC:
            raise DataError(f"{path} is not a decoded-image cache (no SSOTIMG header). Pass a file written by "
                            "`python -m ssot.data prepare`.")
        (length,) = struct.unpack("<Q", head[8:])
        raw = fh.read(length)
    try:
        header = json.loads(raw.decode()) if len(raw) == length else None
    except (UnicodeDecodeError, json.JSONDecodeError):
        header = None
    if not isinstance(header, dict):
        raise DataError(f"Decoded-image cache {path} has a damaged header. Rebuild it with `python -m ssot.data prepare`.")
    if header.get("format") != FORMAT:
        raise DataError(f"Decoded-image cache {path} has format {header.get('format')!r}; this version reads format "
                        f"{FORMAT}. Rebuild it with `python -m ssot.data prepare`.")
    return header, 16 + length


def open_cache(path: str | Path, task: str, resize_size: int, *, verify: bool = True) -> DecodedCache:
    """Open the cache at ``path`` for ``task`` at ``resize_size``: refused, in one line, when it is of
    another task or size, truncated, or (``verify``) its pixels do not match their checksum."""
    path = Path(path).expanduser()
    header, offset = read_header(path)
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
        raise DataError(f"Decoded-image cache {path} is truncated or damaged ({actual} bytes, expected {expected}). "
                        "Remove it and rebuild it with `python -m ssot.data prepare`.")
    if verify:
        digest = hashlib.sha256()
        with open(path, "rb") as fh:
            fh.seek(offset)
            while chunk := fh.read(_CHUNK):
                digest.update(chunk)
        if digest.hexdigest() != header["data_sha256"]:
            raise DataError(f"Decoded-image cache {path} is damaged (checksum mismatch). Remove it and rebuild it "
                            "with `python -m ssot.data prepare`.")
    pixels = np.memmap(path, dtype=np.uint8, mode="r", offset=offset, shape=(n, size, size, 3))
    return DecodedCache(path, header, pixels)


class DecodedImages(Dataset):
    """One side of a cache with its transform: training (random resized crop + flip, or the
    ``paper`` centre crop) or evaluation (centre crop).

    The trainer reads it by batches (:meth:`gather`, then :meth:`to_input` on the device); item
    ``i`` (``ds[i]``) applies the same transform to one image on the CPU (random draws from
    torch's global generator, like the JPEG transforms).
    """

    def __init__(self, cache: DecodedCache, side: str, *, train: bool, image_size: int, transform: str):
        self.cache = cache
        self.images, self.targets = cache.side(side)
        self.labels = torch.tensor(self.targets, dtype=torch.long)
        self.train, self.image_size, self.transform_name = train, image_size, transform

    def __len__(self) -> int:
        return len(self.targets)

    def __repr__(self) -> str:
        how = "random resized crop + flip" if self.train and self.transform_name == "default" else "centre crop"
        return (f"DecodedImages({self.cache.path.name}, {len(self)} images {self.cache.size}x{self.cache.size}, "
                f"{how} {self.image_size}, transform={self.transform_name!r})")

    @property
    def transform(self) -> str:
        """What is done to each image (the provenance of a feature cache built from it)."""
        return repr(self)

    def gather(self, positions: torch.Tensor, *, pin: bool = False) -> torch.Tensor:
        """The uint8 pixels ``(B, S, S, 3)`` of the images at ``positions`` (a CPU tensor),
        in page-locked memory when ``pin`` (for an asynchronous copy to the GPU)."""
        index = positions.numpy()
        s = self.cache.size
        out = torch.empty((len(index), s, s, 3), dtype=torch.uint8, pin_memory=pin)
        np.take(self.images, index, axis=0, out=out.numpy())
        return out

    def to_input(self, images: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
        """The network's input ``(B, 3, s, s)`` float32 from uint8 ``images`` on any device; the
        random draws (training, ``default``) come from ``generator``."""
        if self.train:
            return augment.train_batch(images, self.image_size, self.transform_name, generator)
        return augment.eval_batch(images, self.image_size)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        images = torch.from_numpy(np.array(self.images[index : index + 1]))
        return self.to_input(images)[0], self.targets[index]


def load_decoded_task(path: str | Path, task: str, *, image_size: int = 224, resize_size: int = 256,
                      transform: str = "default") -> TaskData:
    """The :class:`TaskData` of a cache (:func:`open_cache`'s checks), each side twice: with the
    training and with the evaluation transform."""
    from ssot.data.benchmarks import check_sizes

    check_sizes(image_size, resize_size)
    cache = open_cache(path, task, resize_size)
    h = cache.header

    def side(name: str, train: bool) -> DecodedImages:
        return DecodedImages(cache, name, train=train, image_size=image_size, transform=transform)

    return TaskData(name=h["task"], source=side("source", True), source_eval=side("source", False),
                    target=side("target", True), target_eval=side("target", False), class_names=list(h["class_names"]),
                    target_classes=sorted(h["target_classes"]), input_shape=(3, image_size, image_size))
