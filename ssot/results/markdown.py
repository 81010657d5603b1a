"""The Markdown tables the commands write (``results.md``, ``confirmation.md``, ``ablation.md``,
``solvers.md``, ``selection.md``): one renderer, GitHub's table syntax."""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

__all__ = ["markdown_table", "write_new_tables"]


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


def write_new_tables(folder: Path, table: Any, csv_name: str, text: str, markdown_name: str) -> tuple[Path, Path]:
    """Write a command's table as CSV (``table``, a DataFrame) and as Markdown (``text``) into
    ``folder`` (created); an existing file is never overwritten (``FileExistsError``: the command
    checked its outputs first). Returns the two paths."""
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / csv_name, "x", newline="") as fh:
        table.to_csv(fh, index=False)
    with open(folder / markdown_name, "x") as fh:
        fh.write(text)
    return folder / csv_name, folder / markdown_name
