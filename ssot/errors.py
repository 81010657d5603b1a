"""Errors that are the user's to fix.

Every exception raised for bad input derives from :class:`SSOTError`. Command-line entry points
catch it and print its message as one line (no traceback) with a non-zero exit code, so the
message itself must name the argument or path, the value, and what to do.
"""


class SSOTError(Exception):
    """Base class of every user-facing error of this project."""


class ConfigError(SSOTError, ValueError):
    """A configuration value is invalid (names the field, the value and the valid range)."""


class DataError(SSOTError):
    """A dataset, folder, list file or image is missing or unreadable (names the path)."""


class DivergedError(SSOTError, ArithmeticError):
    """Training produced a non-finite loss or metric; ``reason`` says which and when."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason
