"""Where a command writes, checked before any work: every output location is tried (local paths
by creating them, URIs by writing a probe object), results are never overwritten, and an output is
never one of the command's inputs. Every command calls :func:`check_output` before it works.
"""
from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ssot.errors import ResultsError, SSOTError
from ssot.results.storage import StorageError, check_storage, is_uri


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
        (:func:`ssot.results.storage.check_storage`).
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
