"""MkDocs hooks of the manual: the command reference is generated while the site builds, so it
cannot go stale.

A page may hold these markers, each replaced by Markdown built from the code:

``<!-- commands-table -->``
    the table of commands of :mod:`ssot.cli`'s docstring ("Commands");
``<!-- exit-statuses -->``
    the exit statuses of :mod:`ssot.cli`'s docstring, the one table every command follows;
``<!-- command-help -->``
    for every entry point of ``pyproject.toml``'s ``[project.scripts]``, the ``--help`` of the
    parser its module builds (``build_parser()``), sub-commands included.

:func:`commands`, :func:`doc_commands` and :func:`doc_exit_statuses` are also what ``tests/test_docs.py`` checks the page with.
"""
from __future__ import annotations

import argparse
import importlib
import os
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MARKERS = ("<!-- commands-table -->", "<!-- exit-statuses -->", "<!-- command-help -->")
HELP_COLUMNS = "100"  # argparse wraps help to $COLUMNS: fixed, so the page does not depend on the terminal


def commands() -> dict[str, str]:
    """``[project.scripts]`` of ``pyproject.toml``: entry point name -> its module (``tune.search``)."""
    import tomllib

    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    return {name: target.split(":", 1)[0] for name, target in scripts.items()}


def parser_of(module: str) -> argparse.ArgumentParser:
    """The command-line parser of an entry point's module (every command module has ``build_parser()``)."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    return importlib.import_module(module).build_parser()


def _section(doc: str, title: str) -> list[str]:
    """The lines of a docstring section (``title`` underlined with dashes), up to the next section."""
    lines = doc.splitlines()
    start = lines.index(title) + 2
    end = next((i - 1 for i in range(start + 1, len(lines)) if re.fullmatch(r"-{3,}", lines[i])), len(lines))
    return lines[start:end]


def doc_commands(doc: str) -> list[list[str]]:
    """The rows of the table of commands in :mod:`ssot.cli`'s docstring: entry point, module or file, what it does."""
    rows = []
    for line in _section(doc, "Commands"):
        match = re.match(r"``([\w-]+)``\s+``([^`]+)``\s+(.+)$", line)
        if match:
            name, form, what = match.groups()
            rows.append([f"``{name}``", f"``{form}``", what])
    return rows


def doc_exit_statuses(doc: str) -> list[list[str]]:
    """The rows of the exit-status table in :mod:`ssot.cli`'s docstring: status, meaning (continuation lines joined)."""
    rows: list[list[str]] = []
    borders = 0
    for line in _section(doc, "Exit statuses (the same for every command)"):
        borders += line.startswith("=")
        match = re.match(r"\s*(\d+)\s+(.+)$", line)
        if borders >= 2:  # the table's closing border
            break
        if match:
            rows.append(list(match.groups()))
        elif rows and line.strip():
            rows[-1][1] += " " + line.strip()
    return rows


def _markdown(rows: list[list[str]], header: list[str]) -> str:
    def cell(text: str) -> str:
        return re.sub(r":\w+:`([^`]+)`", r"`\1`", text.replace("``", "`")).replace("|", "\\|")

    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def _cli_doc() -> str:
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    return importlib.import_module("ssot.cli").__doc__ or ""


def commands_table() -> str:
    return _markdown(doc_commands(_cli_doc()), ["entry point", "module / file", "what it does"])


def exit_statuses() -> str:
    return _markdown(doc_exit_statuses(_cli_doc()), ["status", "meaning"])


def _help(parser: argparse.ArgumentParser) -> str:
    previous = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = HELP_COLUMNS
    try:
        return parser.format_help()
    finally:
        if previous is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = previous


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    return {name: sub for action in parser._actions if isinstance(action, argparse._SubParsersAction)
            for name, sub in action.choices.items()}


def command_help() -> str:
    parts = []
    for name, module in commands().items():
        parser = parser_of(module)
        parts += [f"### `{name}`", "", f"`{parser.prog}` (or `{name}`), module `{module}`.", "",
                  "```text", _help(parser).rstrip(), "```", ""]
        for sub_name, sub in _subcommands(parser).items():
            parts += [f"#### `{name} {sub_name}`", "", "```text", _help(sub).rstrip(), "```", ""]
    return "\n".join(parts)


def on_page_markdown(markdown: str, **kwargs: object) -> str:
    """MkDocs hook: replace the markers of a page by what the code says."""
    if not any(marker in markdown for marker in MARKERS):
        return markdown
    for marker, render in zip(MARKERS, (commands_table, exit_statuses, command_help)):
        if marker in markdown:
            markdown = markdown.replace(marker, render())
    return markdown
