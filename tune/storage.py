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
