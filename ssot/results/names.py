"""Names that become folders: an experiment's ``--name`` (one folder under a storage path), checked
where it enters."""
from __future__ import annotations

import re

from ssot.errors import SSOTError

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
