"""The Markdown the commands write (``results.md``, ``confirmation.md``, ``ablation.md``,
``solvers.md``, ``selection.md``, ``proxy.md``): one renderer of tables, GitHub's syntax, and the
one escaping of user-controlled text (:func:`escape`).

Experiment names, task names, paths and trial ids come from folders and files anyone may have
written: they are escaped in every cell, so that a name never becomes raw HTML, a link, code,
emphasis or a new table column in the page a Markdown viewer shows. A cell that is Markdown on
purpose (the confirmed config's bold mean) is a :class:`Markdown` string, built with :func:`escape`
for its user-controlled parts.
"""
from __future__ import annotations

import html
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

__all__ = ["Markdown", "escape", "bold", "markdown_table", "write_new_tables"]

#: Characters that start Markdown syntax anywhere in a line: escaped with a backslash.
_SYNTAX = re.compile(r"([\\`*\[\]|])")
#: An underscore that can open or close emphasis (not between two letters or digits, where
#: GitHub's Markdown reads it literally: ``last_epoch`` stays as it is).
_UNDERSCORE = re.compile(r"(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")


class Markdown(str):
    """Text that is Markdown already: :func:`markdown_table` inserts it as it is."""


def escape(text: object) -> str:
    """``text`` (any value, as ``str``) shown literally by a Markdown viewer, on one line.

    ``&``, ``<`` and ``>`` become HTML entities (no raw HTML, no autolink); ``\\``, ``` ` ```,
    ``*``, ``[``, ``]`` and ``|`` get a backslash, and so does an underscore that could
    open or close emphasis; line breaks become spaces. Numbers, task names, ``last_epoch`` and
    plain paths come out unchanged.
    """
    one_line = " ".join(str(text).split("\n")).replace("\r", " ")
    return _UNDERSCORE.sub(r"\\_", _SYNTAX.sub(r"\\\1", html.escape(one_line, quote=False)))


def bold(text: object) -> Markdown:
    """``text`` escaped (:func:`escape`), in bold."""
    return Markdown(f"**{escape(text)}**")


def markdown_table(header: Sequence[str], rows: Iterable[Sequence[object]], align: str = "") -> str:
    """A GitHub Markdown table, ending with a newline.

    Parameters
    ----------
    header : the column names (the project's own words, inserted as they are).
    rows : the cells of each row: escaped with :func:`escape` (user-controlled text), except
        :class:`Markdown` cells.
    align : one letter per column, ``"l"`` (left, the default for missing letters) or ``"r"`` (right).
    """
    sep = ["---:" if align[i:i + 1] == "r" else "---" for i in range(len(header))]
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(sep) + "|"]
    lines += ["| " + " | ".join(c if isinstance(c, Markdown) else escape(c) for c in row) + " |" for row in rows]
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
