"""Which errors say that the file system failed (read-only, full, over quota, an I/O error), as
opposed to a mistake of the code or of the user: a search that meets one stops with the storage's
error (``tune/experiment.py``), its results kept."""
from __future__ import annotations

import errno

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
