"""Finding the experiments under a root, a local folder or a URI (object storage), and reading them
all: the one entry point of every reader of experiments (:func:`read_experiments`).

An experiment is a folder holding ``experiment.json``; folders nested in one (Ray's trial folders)
and hidden folders are not searched. Each experiment is read with
:func:`ssot.results.experiment.read_experiment`.
"""
from __future__ import annotations

import dataclasses
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ssot.errors import ResultsError
from ssot.results import experiment as files
from ssot.results.storage import S3_ENV, StorageError, filesystem, is_uri, join, read_file, reason


def find_experiments(root: str | os.PathLike[str]) -> list[Path]:
    """Every folder under the local ``root`` (itself included) holding ``experiment.json``, sorted;
    the walk does not descend into an experiment folder (Ray's trial folders) nor into hidden folders."""
    found: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root):
        if files.EXPERIMENT_FILE in filenames:
            found.append(Path(dirpath))
            dirnames[:] = []
        else:
            dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
    return sorted(found)


def _experiment_folders(fs: Any, base: str) -> list[str]:
    """The folders under ``base`` holding ``experiment.json``, not those nested in another one
    (Ray's trial folders), nor hidden ones."""
    import pyarrow.fs

    found = sorted(info.path.rsplit("/", 1)[0] for info in fs.get_file_info(pyarrow.fs.FileSelector(base, recursive=True, allow_not_found=True))
                   if info.base_name == files.EXPERIMENT_FILE and info.type == pyarrow.fs.FileType.File)
    folders: list[str] = []
    for folder in found:
        inner = folder[len(base):].strip("/")
        if any(part.startswith(".") for part in inner.split("/") if part):
            continue
        if not any(folder.startswith(outer + "/") for outer in folders):
            folders.append(folder)
    return folders


def shown_path(root: str | os.PathLike[str], local: Path, folder: Path) -> Path | str:
    """Where ``folder``, found under ``local`` (what :func:`local_experiments` yielded for
    ``root``), really lives: its URI when ``root`` is one, else ``folder`` itself. Readers show and
    record this path, never the temporary copy's."""
    return join(str(root), folder.relative_to(local).as_posix()) if is_uri(root) else folder


@contextmanager
def local_experiments(root: str | os.PathLike[str]) -> Iterator[Path]:
    """The experiments under ``root`` (a local folder or a URI) as a local folder to read.

    The one entry point of every reader of experiments (through :func:`read_experiments`): a
    local ``root`` is yielded as it is; under a URI, the small files of
    every experiment (``experiment.json``, ``trials.csv``, ``best_config.json``) are copied, in
    the same layout, into a temporary folder that is removed on exit, and read from there with
    :func:`ssot.results.experiment.read_experiment` like any local experiment.

    Raises
    ------
    StorageError
        When the storage cannot be listed or read.
    """
    if not is_uri(root):
        yield Path(root)
        return
    uri = str(root)
    tmp = Path(tempfile.mkdtemp(prefix="ssot-experiments-"))
    try:
        try:
            fs, base = filesystem(uri)
            base = base.rstrip("/")
            for folder in _experiment_folders(fs, base):
                local = tmp.joinpath(*folder[len(base):].strip("/").split("/")) if folder != base else tmp
                local.mkdir(parents=True, exist_ok=True)
                for name in files.FILES:
                    data = read_file(fs, join(folder, name))
                    if data is not None:
                        (local / name).write_bytes(data)
        except (OSError, ValueError) as exc:
            if isinstance(exc, StorageError):
                raise
            raise StorageError(f"Cannot read the experiments under {uri}: {reason(exc)}. Check the URI and, "
                               f"for s3://, {', '.join(S3_ENV)}.") from None
        yield tmp
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def experiment_inputs(root: str | os.PathLike[str]) -> list[Path]:
    """The files the readers of experiments (:func:`read_experiments`) read under a local
    ``root``: each experiment's ``experiment.json``, ``trials.csv`` and ``best_config.json``;
    none under a URI (a command's outputs are local). The ``inputs`` of a reader's
    :func:`ssot.results.outputs.check_output`."""
    if is_uri(root) or not Path(root).is_dir():
        return []
    return [folder / name for folder in find_experiments(root) for name in files.FILES if (folder / name).is_file()]


def read_experiments(root: str | os.PathLike[str]) -> list[files.Experiment]:
    """Every experiment under ``root`` (a local folder, searched recursively, or a URI such as
    ``s3://bucket/prefix``), read with :func:`ssot.results.experiment.read_experiment`.

    Each experiment's ``path`` and its problems' paths are where its files really live (the URI
    under object storage, never the temporary local copy). Sorted by path; an empty list when
    none is found.

    Raises
    ------
    ResultsError
        If ``root`` is a local path that is not a folder.
    StorageError
        When the storage cannot be listed or read.
    """
    if not is_uri(root) and not Path(root).is_dir():
        raise ResultsError(f"The results folder {root} does not exist or is not a folder. Pass the folder the search "
                           "wrote its experiments to.")
    found: list[files.Experiment] = []
    with local_experiments(root) as local:
        for folder in find_experiments(local):
            experiment = files.read_experiment(folder)
            problems = [dataclasses.replace(p, path=shown_path(root, local, Path(p.path))) for p in experiment.problems]
            found.append(dataclasses.replace(experiment, path=shown_path(root, local, folder), problems=problems))
    return found
