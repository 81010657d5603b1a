"""Errors that are the user's to fix.

Every exception raised for bad input derives from :class:`SSOTError`. Command-line entry points
catch it and print its message as one line (no traceback) with a non-zero exit code, so the
message itself must name the argument or path, the value, and what to do; a mistyped name gets
the closest valid one (:func:`closest`).
"""
import difflib
from collections.abc import Iterable


class SSOTError(Exception):
    """Base class of every user-facing error of this project."""


class ConfigError(SSOTError, ValueError):
    """A configuration value is invalid (names the field, the value and the valid range)."""


class DataError(SSOTError):
    """A dataset, folder, list file or image is missing or unreadable (names the path)."""


class ResultsError(SSOTError):
    """A results folder, experiment, run record or output path that the user has to fix (names the path)."""


class ExternalError(SSOTError):
    """An external service failed while a command worked: a download, an object store (names the
    service, the reason and what to retry or check)."""


class DivergedError(SSOTError, ArithmeticError):
    """Training produced a non-finite loss or metric; ``reason`` says which and when."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def one_line(exc: BaseException | str) -> str:
    """The single line a command prints for a user error.

    White space is folded to one line. When a DataLoader worker re-raised the error, PyTorch put
    the worker's traceback in the message; the original message is its last line, after
    ``ssot.errors.DataError: ``, and only that is kept.
    """
    text = str(exc).strip()
    if isinstance(exc, BaseException) and "Traceback" in text:
        last = text.splitlines()[-1]
        prefix = f"{type(exc).__module__}.{type(exc).__name__}: "
        text = last[len(prefix):] if last.startswith(prefix) else last
    return " ".join(text.split())


def closest(value: object, names: Iterable[object]) -> str | None:
    """The valid name closest to a mistyped ``value`` (case-insensitive, :mod:`difflib`'s ratio of
    at least 0.6), as it is spelt in ``names``; ``None`` when none is close (``digit`` ->
    ``digits``, ``X2Y`` -> none)."""
    spelt = {str(name).lower(): str(name) for name in names}
    found = difflib.get_close_matches(str(value).lower(), list(spelt), n=1, cutoff=0.6)
    return spelt[found[0]] if found else None


def did_you_mean(value: object, names: Iterable[object]) -> str:
    """``" Did you mean 'digits'?"`` for a mistyped ``value`` (:func:`closest`), else ``""``: the
    sentence an error message adds."""
    found = closest(value, names)
    return f" Did you mean {found!r}?" if found is not None else ""
