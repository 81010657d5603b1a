"""Writing a whole file at once: a reader never sees half of it.

A local file is written beside its place under a temporary name and renamed over it
(:func:`write_local`), or linked into place where it must not replace a file (:func:`write_new`);
an object store stores an object in one piece (:func:`write_whole` on a pyarrow filesystem).
:func:`ssot.results.storage.write_bytes` picks the right one for a local path or a URI.
"""
from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import Any

from ssot.errors import ResultsError


def _temporary(path: Path) -> Path:
    """A hidden name beside ``path``, unique to this process and call."""
    return path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")


def write_local(path: Path, data: bytes) -> None:
    """Write ``data`` to the local file ``path`` (replacing it), through a temporary file renamed
    into place; a failed write (a full disk) leaves no half-written file behind."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = _temporary(path)
    try:
        tmp.write_bytes(data)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_whole(fs: Any, path: str, data: bytes) -> None:
    """Write ``data`` at ``path`` of the pyarrow filesystem ``fs``
    (:func:`ssot.results.storage.filesystem`) in one piece: :func:`write_local` on a local one,
    one object on an object store."""
    import pyarrow.fs

    if isinstance(fs, pyarrow.fs.LocalFileSystem):
        write_local(Path(path), data)
        return
    fs.create_dir(path.rsplit("/", 1)[0], recursive=True)
    with fs.open_output_stream(path) as out:
        out.write(data)


def write_new(path: Path, data: bytes, what: str = "the new content") -> Path:
    """Write ``data`` to the local file ``path``, which must not exist: a temporary file is linked
    into place, which fails when ``path`` appeared meanwhile (where the file system has no hard
    links, it is renamed after a check).

    Raises
    ------
    ResultsError
        If ``path`` exists (``what`` is kept beside it, in the file the message names).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = _temporary(path)
    tmp.write_bytes(data)
    try:
        os.link(tmp, path)  # fails if path exists
    except FileExistsError:
        raise ResultsError(f"{path} appeared meanwhile; {what} is kept in {tmp}.") from None
    except OSError:  # a file system without hard links
        if path.exists():
            raise ResultsError(f"{path} appeared meanwhile; {what} is kept in {tmp}.") from None
        os.replace(tmp, path)
        return path
    tmp.unlink()
    return path
