"""Where an experiment's files live: local paths or any URI Ray accepts (through pyarrow)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def _fs(uri: str) -> tuple[Any, str]:
    """A pyarrow filesystem and path for a local path or any URI Ray accepts."""
    import pyarrow.fs

    if "://" in uri:
        return pyarrow.fs.FileSystem.from_uri(uri)
    return pyarrow.fs.LocalFileSystem(), str(Path(uri).resolve())


def exists(uri: str) -> bool:
    import pyarrow.fs

    fs, path = _fs(uri)
    return fs.get_file_info(path).type != pyarrow.fs.FileType.NotFound


def write_text(uri: str, text: str) -> None:
    fs, path = _fs(uri)
    fs.create_dir(path.rsplit("/", 1)[0], recursive=True)
    with fs.open_output_stream(path) as out:
        out.write(text.encode())


def write_text_atomic(uri: str, text: str) -> None:
    """Write a file so that a reader sees the old or the new text, never a part: a local file
    is written beside it then renamed over it (``os.replace``); an object store's upload is
    already all-or-nothing."""
    if "://" in uri:
        write_text(uri, text)
        return
    import os
    import uuid

    target = Path(uri).resolve()
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        with open(tmp, "x", encoding="utf-8") as out:
            out.write(text)
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def read_text(uri: str) -> str | None:
    """The file's text, or None when it does not exist."""
    if not exists(uri):
        return None
    fs, path = _fs(uri)
    with fs.open_input_stream(path) as fh:
        return fh.read().decode()


def read_json(uri: str) -> dict[str, Any] | None:
    """A JSON object, or None when the file is missing or not valid JSON."""
    text = read_text(uri)
    try:
        content = json.loads(text) if text is not None else None
    except json.JSONDecodeError:
        return None
    return content if isinstance(content, dict) else None


def join(root: str, *parts: str) -> str:
    return "/".join([root.rstrip("/"), *parts])
