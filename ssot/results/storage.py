"""Where an experiment's files live: local paths or any URI Ray accepts (through pyarrow).

Object storage (``s3://bucket/prefix``) goes through :class:`pyarrow.fs.S3FileSystem`, as Ray
Tune's own ``storage_path`` does, so both find the store and the credentials the same way, from
the standard AWS environment variables (checked with pyarrow 26, tests/test_object_storage.py):
``AWS_ENDPOINT_URL_S3`` or ``AWS_ENDPOINT_URL`` (an S3-compatible server such as MinIO or moto;
unset for AWS itself), ``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY`` (or a profile of
``~/.aws``) and ``AWS_DEFAULT_REGION`` (or ``AWS_REGION``). Every node of a Ray cluster writes
there itself, so every node needs them (set them before ``ray start``).

One path or URI in, its bytes out or in: reading, writing (whole files at once,
:mod:`ssot.results.atomic`), listing, removing, and the probe that a storage can be written
(:func:`check_storage`). This module imports no Ray nor torch. Built on it: the check of every
output location (:mod:`ssot.results.outputs`) and the reader of every experiment under a root
(:mod:`ssot.results.discovery`).
"""
from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import Any

from ssot.errors import ExternalError
from ssot.results import atomic

#: The environment variables that locate and open S3-compatible storage (the manual: docs/clusters.md).
S3_ENV = ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_DEFAULT_REGION")


class StorageError(ExternalError, OSError):
    """The storage of experiments cannot be reached, opened or written (a one-line message)."""


def is_uri(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a URI (``s3://...``, ``gs://...``, ``file://...``) rather than a local path."""
    return "://" in str(path)


def filesystem(uri: str) -> tuple[Any, str]:
    """The pyarrow filesystem of a local path or URI, and the path on it (what Ray's own storage
    uses: ``(LocalFileSystem, absolute path)``, ``(S3FileSystem, "bucket/prefix")``)."""
    import pyarrow.fs

    if is_uri(uri):
        return pyarrow.fs.FileSystem.from_uri(uri)
    return pyarrow.fs.LocalFileSystem(), str(Path(uri).resolve())


def join(root: str, *parts: str) -> str:
    """``root/part/...`` for a local path or a URI."""
    return "/".join([root.rstrip("/"), *parts])


def exists(uri: str) -> bool:
    import pyarrow.fs

    fs, path = filesystem(uri)
    return fs.get_file_info(path).type != pyarrow.fs.FileType.NotFound


def write_text(uri: str, text: str) -> None:
    write_bytes(uri, text.encode())


def write_bytes(uri: str, data: bytes) -> None:
    """Write a whole file at once: readers never see half of it (:mod:`ssot.results.atomic`)."""
    if is_uri(uri):
        atomic.write_whole(*filesystem(uri), data)
    else:
        atomic.write_local(Path(uri), data)


def read_file(fs: Any, path: str) -> bytes | None:
    """The content of ``path`` on the pyarrow filesystem ``fs``, or None when it does not exist."""
    import pyarrow.fs

    if fs.get_file_info(path).type == pyarrow.fs.FileType.NotFound:
        return None
    with fs.open_input_stream(path) as fh:
        return fh.read()


def read_bytes(uri: str) -> bytes | None:
    """The file's content, or None when it does not exist."""
    return read_file(*filesystem(uri))


def read_text(uri: str) -> str | None:
    """The file's text, or None when it does not exist."""
    data = read_bytes(uri)
    return None if data is None else data.decode()


def read_json(uri: str) -> dict[str, Any] | None:
    """A JSON object, or None when the file is missing or not valid JSON."""
    import json

    text = read_text(uri)
    try:
        content = json.loads(text) if text is not None else None
    except json.JSONDecodeError:
        return None
    return content if isinstance(content, dict) else None


def remove(uri: str) -> None:
    """Delete a file (local or an object); nothing when it does not exist."""
    if not is_uri(uri):
        Path(uri).unlink(missing_ok=True)
        return
    fs, path = filesystem(uri)
    try:
        fs.delete_file(path)
    except FileNotFoundError:
        pass


def entries(uri: str) -> list[str]:
    """The names directly under a folder (local or a prefix of object storage); none when it
    does not exist."""
    import pyarrow.fs

    fs, path = filesystem(uri)
    return sorted(info.base_name for info in fs.get_file_info(pyarrow.fs.FileSelector(path, allow_not_found=True)))


def reason(exc: BaseException) -> str:
    """What a storage's exception says, in one line (at most 300 characters)."""
    return " ".join(str(exc).split())[:300].rstrip(". ") or type(exc).__name__


def write_problem(folder: str) -> str | None:
    """Why a file cannot be written into ``folder`` now (local or a URI), or None when it can:
    a small probe file is written and removed (``os.access`` would pass for root on a read-only
    file system)."""
    probe = join(folder, f"ssot-write-check-{uuid.uuid4().hex}")
    try:
        write_bytes(probe, b"ok")
        remove(probe)
    except (OSError, ValueError) as exc:
        return getattr(exc, "strerror", None) or reason(exc)
    return None


def check_storage(uri: str, what: str = "--storage-path") -> None:
    """Refuse within seconds a storage URI that cannot be written, before any trial starts.

    Writes and deletes a small probe object under ``uri``: an unreachable endpoint, a missing
    bucket, missing or wrong credentials and a read-only store all fail here, in one line.
    Local paths are checked by :func:`ssot.results.outputs.check_output`.

    Raises
    ------
    StorageError
        Naming the URI, the reason and the environment variables to check.
    """
    if not is_uri(uri):
        return
    import pyarrow.fs

    hint = (f"Check the endpoint ({' or '.join(S3_ENV[:2])}), the credentials ({', '.join(S3_ENV[2:4])}) "
            "and the region (AWS_DEFAULT_REGION), and that the bucket exists" if uri.startswith("s3://")
            else "Check the URI and the credentials of its filesystem")
    try:
        fs, path = filesystem(uri)
        bucket = path.split("/", 1)[0]
        if isinstance(fs, pyarrow.fs.S3FileSystem) and fs.get_file_info(bucket).type == pyarrow.fs.FileType.NotFound:
            raise StorageError(f"{what} {uri}: the bucket {bucket!r} does not exist. Create it "
                               f"(e.g. `aws s3 mb s3://{bucket}`) or choose another {what}.")
        probe = join(path, f".ssot-write-check-{uuid.uuid4().hex}")
        fs.create_dir(path, recursive=True)
        with fs.open_output_stream(probe) as out:
            out.write(b"ok")
        fs.delete_file(probe)
    except StorageError:
        raise
    except (OSError, ValueError) as exc:  # pyarrow: OSError (network, auth), ValueError (bad URI)
        raise StorageError(f"{what} {uri} cannot be written: {reason(exc)}. {hint}.") from None
