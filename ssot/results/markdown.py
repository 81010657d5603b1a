"""The Markdown tables the commands write (``results.md``, ``confirmation.md``, ``ablation.md``,
``solvers.md``, ``selection.md``): one renderer, GitHub's table syntax."""
from __future__ import annotations

from collections.abc import Iterable, Sequence

__all__ = ["markdown_table"]


def markdown_table(header: Sequence[str], rows: Iterable[Sequence[object]], align: str = "") -> str:
    """A GitHub Markdown table, ending with a newline.

    Parameters
    ----------
    header : the column names.
    rows : the cells of each row (converted with ``str``; a ``|`` in a cell is escaped).
    align : one letter per column, ``"l"`` (left, the default for missing letters) or ``"r"`` (right).
    """
    sep = ["---:" if align[i:i + 1] == "r" else "---" for i in range(len(header))]
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(sep) + "|"]
    lines += ["| " + " | ".join(str(c).replace("|", "\\|") for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"
