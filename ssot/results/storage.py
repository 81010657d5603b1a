"""Where an experiment's files live: local paths or any URI Ray accepts (through pyarrow).

Object storage (``s3://bucket/prefix``) goes through :class:`pyarrow.fs.S3FileSystem`, as Ray
Tune's own ``storage_path`` does, so both find the store and the credentials the same way, from
the standard AWS environment variables (checked with pyarrow 26, tests/test_object_storage.py):
``AWS_ENDPOINT_URL_S3`` or ``AWS_ENDPOINT_URL`` (an S3-compatible server such as MinIO or moto;
unset for AWS itself), ``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY`` (or a profile of
``~/.aws``) and ``AWS_DEFAULT_REGION`` (or ``AWS_REGION``). Every node of a Ray cluster writes
there itself, so every node needs them (set them before ``ray start``).

It also owns the check of every output location before a command works (:func:`check_output`,
local paths and URIs; the commands reach it as ``ssot.cli.check_output``). This module imports no
Ray nor torch: ``analysis`` reads remote experiments through :func:`read_experiments`.
"""
from __future__ import annotations

import dataclasses
import errno
import os
import re
import shutil
import tempfile
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ssot.errors import ExternalError, ResultsError, SSOTError
from ssot.results import experiment as files

#: The environment variables that locate and open S3-compatible storage (the manual: docs/clusters.md).
S3_ENV = ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_DEFAULT_REGION")


class StorageError(ExternalError, OSError):
    """The storage of experiments cannot be reached, opened or written (a one-line message)."""


def is_uri(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a URI (``s3://...``, ``gs://...``, ``file://...``) rather than a local path."""
    return "://" in str(path)


def _fs(uri: str) -> tuple[Any, str]:
    """A pyarrow filesystem and path for a local path or any URI Ray accepts."""
    import pyarrow.fs

    if is_uri(uri):
        return pyarrow.fs.FileSystem.from_uri(uri)
    return pyarrow.fs.LocalFileSystem(), str(Path(uri).resolve())


def filesystem(uri: str) -> tuple[Any, str]:
    """The pyarrow filesystem of a local path or URI, and the path on it (what Ray's own storage
    uses: ``(LocalFileSystem, absolute path)``, ``(S3FileSystem, "bucket/prefix")``)."""
    return _fs(uri)


def exists(uri: str) -> bool:
    import pyarrow.fs

    fs, path = _fs(uri)
    return fs.get_file_info(path).type != pyarrow.fs.FileType.NotFound


def write_text(uri: str, text: str) -> None:
    write_bytes(uri, text.encode())


def write_bytes(uri: str, data: bytes) -> None:
    """Write a whole file at once: readers never see half of it (a local file is written beside
    and renamed; an object store stores an object in one piece)."""
    if is_uri(uri):
        write_whole(*_fs(uri), data)
    else:
        _write_local(Path(uri), data)


def write_whole(fs: Any, path: str, data: bytes) -> None:
    """:func:`write_bytes` at ``path`` of the pyarrow filesystem ``fs`` (:func:`filesystem`)."""
    import pyarrow.fs

    if isinstance(fs, pyarrow.fs.LocalFileSystem):
        _write_local(Path(path), data)
        return
    fs.create_dir(path.rsplit("/", 1)[0], recursive=True)
    with fs.open_output_stream(path) as out:
        out.write(data)


def _write_local(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, path)
    except BaseException:  # a full disk: no half-written file left behind
        tmp.unlink(missing_ok=True)
        raise


def read_bytes(uri: str) -> bytes | None:
    """The file's content, or None when it does not exist."""
    return _read(*_fs(uri))


def remove(uri: str) -> None:
    """Delete a file (local or an object); nothing when it does not exist."""
    if not is_uri(uri):
        Path(uri).unlink(missing_ok=True)
        return
    fs, path = _fs(uri)
    try:
        fs.delete_file(path)
    except FileNotFoundError:
        pass


def entries(uri: str) -> list[str]:
    """The names directly under a folder (local or a prefix of object storage); none when it
    does not exist."""
    import pyarrow.fs

    fs, path = _fs(uri)
    return sorted(info.base_name for info in fs.get_file_info(pyarrow.fs.FileSelector(path, allow_not_found=True)))


def _read(fs: Any, path: str) -> bytes | None:
    import pyarrow.fs

    if fs.get_file_info(path).type == pyarrow.fs.FileType.NotFound:
        return None
    with fs.open_input_stream(path) as fh:
        return fh.read()


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


def join(root: str, *parts: str) -> str:
    return "/".join([root.rstrip("/"), *parts])


def _reason(exc: BaseException) -> str:
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
        return getattr(exc, "strerror", None) or _reason(exc)
    return None


#: errno values of a storage that fails (read-only, full, over quota, I/O error).
STORAGE_ERRNOS = frozenset({errno.EROFS, errno.ENOSPC, errno.EDQUOT, errno.EIO})


def failed_storage(exc: BaseException) -> str | None:
    """Why ``exc`` (or an exception it was raised from) says the file system failed - read-only,
    full, over quota, an I/O error - in one line; None when it does not."""
    causes: list[BaseException] = []
    seen: BaseException | None = exc
    while seen is not None and len(causes) < 20:
        causes.append(seen)
        seen = seen.__cause__ or seen.__context__
    failed = next((c for c in causes if isinstance(c, OSError) and c.errno in STORAGE_ERRNOS), None)
    return " ".join(str(failed).split())[:200] if failed is not None else None


def check_storage(uri: str, what: str = "--storage-path") -> None:
    """Refuse within seconds a storage URI that cannot be written, before any trial starts.

    Writes and deletes a small probe object under ``uri``: an unreachable endpoint, a missing
    bucket, missing or wrong credentials and a read-only store all fail here, in one line.
    Local paths are checked by :func:`check_output`.

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
        fs, path = _fs(uri)
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
        raise StorageError(f"{what} {uri} cannot be written: {_reason(exc)}. {hint}.") from None


# ------------------------------------------------------------------------------------ names
#: A name that becomes one folder (an experiment's ``--name``): letters, digits and ``._-+=@,``,
#: not starting with ``.`` (hidden: readers skip it) or ``-`` (read as a flag), at most 100 characters.
NAME_PATTERN = re.compile(r"[A-Za-z0-9_+=@,][A-Za-z0-9._+=@,-]{0,99}")


def check_name(name: str, what: str = "--name") -> str:
    """``name`` if it can name one folder under a storage path (:data:`NAME_PATTERN`): never a
    path (``../x``, ``a/b``), never hidden, never longer than a file system accepts.

    Raises
    ------
    SSOTError
        One line naming the argument, the rule and the value.
    """
    if not isinstance(name, str) or not NAME_PATTERN.fullmatch(name):
        shown = repr(name) if len(str(name)) <= 60 else f"{str(name)[:40]!r}... ({len(str(name))} characters)"
        raise SSOTError(f"The '{what}' argument must be one folder name: 1 to 100 letters, digits or . _ - + = @ , "
                        f"(no '/', not starting with '.' or '-'). Got {shown} instead.")
    return name


# ------------------------------------------------------------------------------------ output locations
def check_output(location: str | os.PathLike[str], what: str, *, folder: bool, new: Iterable[str | os.PathLike[str]] = (),
                 exists_ok: bool = False, hint: str | None = None, inputs: Iterable[str | os.PathLike[str]] = ()) -> None:
    """Refuse, before any work, an output location that cannot be used, by trying to create it,
    or that is one of the command's inputs.

    The folders missing on the way are created to try, and removed again, so a refused command
    leaves nothing behind. Unlike ``os.access``, the try also fails for root on a read-only file
    system. An output is never one of the command's own inputs, with or without ``exists_ok``
    (``--overwrite``): :func:`check_not_input`.

    Parameters
    ----------
    location : path-like or URI
        Where the command writes: a folder (``folder=True``) or a file; it may not exist yet. A URI
        (``s3://...``) is probed by writing and deleting an object
        (:func:`check_storage`).
    what : str
        The argument that named it, for the messages (e.g. ``"--out"``).
    folder : bool
        Whether ``location`` is a folder.
    new : iterable of path-like
        Files the command will create (inside ``location`` when relative): each must not exist
        yet, results are never overwritten.
    exists_ok : bool
        A file ``location``, or the files of ``new``, may exist already (e.g. a database the
        command continues, a file ``--overwrite`` replaces); for a folder ``location`` without
        ``new``: the command may replace files in it (names not known beforehand).
    hint : str, optional
        What to do about an existing file of ``new`` (default: move it away or choose another ``what``).
    inputs : iterable of path-like
        Every file the command reads. None of them may be what the command writes
        (:func:`check_not_input`).

    Raises
    ------
    SSOTError
        One line naming the location, what is in the way, and what to do.
    """
    if is_uri(location):
        try:
            check_storage(str(location), what)
        except StorageError as exc:  # the user's to fix before any work: a usage error
            raise SSOTError(str(exc)) from None
        return
    target = Path(location).expanduser().absolute()
    written = [target] if not folder else [target / p for p in map(Path, new)]
    check_not_input(written, inputs, what, location, replaced_folder=target if folder and exists_ok and not written else None)
    existing = next(p for p in (target, *target.parents) if p.exists())
    if existing != target and not existing.is_dir():
        raise SSOTError(f"{what} {location} cannot be created: {existing} is a file, not a folder. Choose another {what}.")
    if folder and existing == target and not target.is_dir():
        raise SSOTError(f"{what} {location} is a file, not a folder. Choose another {what}.")
    if not folder and existing == target:
        if target.is_dir():
            raise SSOTError(f"{what} {location} is a folder, not a file. Choose another {what}.")
        if not exists_ok:
            raise SSOTError(f"{what} {location} already exists; choose another {what} or move the old one away "
                            "(results are never overwritten).")
    base = target if folder else target.parent
    paths = [base / p for p in map(Path, new)]
    taken = [p for p in paths if p.exists() and not exists_ok]
    if taken:
        more = f" (and {len(taken) - 1} more)" if len(taken) > 1 else ""
        raise ResultsError(f"{taken[0]} already exists{more}; "
                           f"{hint or f'move the old files away or choose another {what} (results are never overwritten)'}.")
    _try_to_create(target, folder, what, location)


def check_not_input(written: Iterable[str | os.PathLike[str]], inputs: Iterable[str | os.PathLike[str]], what: str,
                    shown: Any = None, *, replaced_folder: str | os.PathLike[str] | None = None) -> None:
    """Refuse an output that is one of the command's inputs: an output is never read and
    written by the same command, with or without ``--overwrite``.

    Paths are compared as the file system resolves them: through symlinks (either side), ``..``
    and hard links (the same file under two names). Only outputs that exist can be inputs (every
    input exists), so a command whose outputs are all new pays nothing for the check.

    Parameters
    ----------
    written : the files the command writes (they may not exist yet).
    inputs : the files it reads (a folder among them is skipped: pass the files read in it).
    what, shown : the argument and the value that named the output, for the message.
    replaced_folder : a folder in which the command may replace files whose names are not known
        beforehand (the dashboard's figures with ``--overwrite``): it may hold no input.

    Raises
    ------
    SSOTError
        One line naming the output, the input it is, and what to do.
    """
    present = [Path(w).expanduser() for w in written if os.path.lexists(Path(w).expanduser())]
    folder = Path(replaced_folder).expanduser() if replaced_folder is not None else None
    if not present and (folder is None or not folder.is_dir()):
        return
    resolved = {p.resolve(): p for p in present}
    for raw in inputs:
        source = Path(raw).expanduser()
        if not source.is_file():
            continue
        real = source.resolve()
        for out_real, out in resolved.items():
            if out_real == real or _same_file(out, source):
                given = Path(shown).expanduser().absolute() if shown is not None else None
                named = (f"{what} {shown}" if given == out.absolute() else
                         f"{out} (written into {what} {shown})" if shown is not None else f"{what} {out}")
                raise SSOTError(f"{named} is one of the command's inputs ({source}): an output never replaces what the "
                                f"command reads. Choose another {what}.")
        if folder is not None and folder.is_dir() and real.parent == folder.resolve():
            raise SSOTError(f"{what} {shown if shown is not None else folder} holds {source}, one of the command's inputs, "
                            f"among the files it may replace. Choose another {what}.")


def _same_file(a: Path, b: Path) -> bool:
    """Whether two existing paths are the same file (hard links included)."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _try_to_create(target: Path, folder: bool, what: str, shown: Any) -> None:
    """Create ``target`` (a folder, or an empty file) and remove it again, with the folders
    missing on the way; a folder or file that exists already gets a probe file written beside."""
    base = target if folder else target.parent
    missing = [p for p in (base, *base.parents) if not p.exists()]  # deepest first
    try:
        for path in reversed(missing):
            path.mkdir()
        if folder or target.exists():
            fd, probe = tempfile.mkstemp(prefix=".ssot-write-check-", dir=base)
            os.close(fd)
            os.unlink(probe)
        else:
            with open(target, "x"):
                pass
            target.unlink()
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise SSOTError(f"{what} {shown} cannot be written: {reason} ({exc.filename or target}). Choose another {what}.") from None
    finally:
        for path in missing:  # leave nothing behind
            try:
                path.rmdir()
            except OSError:
                pass


# ------------------------------------------------------------------------------------ reading experiments
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
            fs, base = _fs(uri)
            base = base.rstrip("/")
            for folder in _experiment_folders(fs, base):
                local = tmp.joinpath(*folder[len(base):].strip("/").split("/")) if folder != base else tmp
                local.mkdir(parents=True, exist_ok=True)
                for name in files.FILES:
                    data = _read(fs, join(folder, name))
                    if data is not None:
                        (local / name).write_bytes(data)
        except (OSError, ValueError) as exc:
            if isinstance(exc, StorageError):
                raise
            raise StorageError(f"Cannot read the experiments under {uri}: {_reason(exc)}. Check the URI and, "
                               f"for s3://, {', '.join(S3_ENV)}.") from None
        yield tmp
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def experiment_inputs(root: str | os.PathLike[str]) -> list[Path]:
    """The files the readers of experiments (:func:`read_experiments`) read under a local
    ``root``: each experiment's ``experiment.json``, ``trials.csv`` and ``best_config.json``;
    none under a URI (a command's outputs are local). The ``inputs`` of a reader's
    :func:`check_output`."""
    if is_uri(root) or not Path(root).is_dir():
        return []
    return [folder / name for folder in files.find_experiments(root) for name in files.FILES if (folder / name).is_file()]


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
        for folder in files.find_experiments(local):
            experiment = files.read_experiment(folder)
            problems = [dataclasses.replace(p, path=shown_path(root, local, Path(p.path))) for p in experiment.problems]
            found.append(dataclasses.replace(experiment, path=shown_path(root, local, folder), problems=problems))
    return found
