"""The front page and the manual: README.md stays a front page whose two commands come first and
unchanged; the manual builds with `mkdocs build --strict` (a broken link, anchor or missing page
fails); its command reference is generated from every entry point's parser and `ssot/cli.py`."""
from __future__ import annotations

import importlib
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ssot import cli
from tests.fixtures import REPO

README = REPO / "README.md"
#: The two commands a newcomer runs first (set-up + embedded run; the tests, as CI runs them).
FIRST_COMMANDS = [
    'python3 -m venv .venv && .venv/bin/pip install -e ".[test]" && .venv/bin/python -m ssot.train --task digits',
    ".venv/bin/python -m pytest -q",
]


def _hooks():
    spec = importlib.util.spec_from_file_location("manual_hooks", REPO / "docs" / "hooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_readme_is_a_front_page_with_the_two_commands_first():
    text = README.read_text()
    assert len(text.encode()) <= 12 * 1024
    blocks = re.findall(r"```\w*\n(.*?)```", text, flags=re.S)
    assert [b.strip() for b in blocks[:2]] == FIRST_COMMANDS
    assert "## " not in text[:text.index(FIRST_COMMANDS[1])]  # nothing comes before them
    assert ".venv/bin/python -m pytest -q" in (REPO / ".ci" / "run").read_text()  # what CI runs


def test_readme_links_point_into_the_repository():
    for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", README.read_text()):
        assert "://" not in target and (REPO / target).exists(), target


def test_no_file_outside_the_repository_is_named():
    tracked = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True).stdout.split()
    if not tracked:
        pytest.skip("not a git checkout")
    texts = [REPO / f for f in tracked if f.endswith((".md", ".py", ".toml", ".yml", ".txt")) and (REPO / f).is_file()]
    named = [str(p.relative_to(REPO)) for p in texts if "DESIGN.md" in p.read_text(errors="ignore")
             and p.name != "test_docs.py"]
    assert named == []


def test_the_command_reference_covers_every_entry_point():
    hooks = _hooks()
    scripts = hooks.commands()
    # ssot/cli.py's table of commands lists exactly the entry points of pyproject.toml
    assert [row[0].strip("`") for row in hooks.doc_commands(cli.__doc__)] == list(scripts)
    for name, module in scripts.items():
        parser = importlib.import_module(module).build_parser()
        assert parser.format_help().startswith("usage: ")
    # the exit statuses rendered are those ssot.cli returns, with the docstring's words
    rows = hooks.doc_exit_statuses(cli.__doc__)
    assert [int(r[0]) for r in rows] == sorted({cli.EXIT_OK, cli.EXIT_FAILED, cli.EXIT_USAGE, cli.EXIT_NO_RESULT,
                                                cli.EXIT_EXTERNAL, cli.EXIT_INTERRUPTED})
    assert rows[2][1].startswith("bad input") and "Every ``main``" not in rows[-1][1]


def test_the_manual_builds_strict(tmp_path):
    pytest.importorskip("mkdocs")
    pytest.importorskip("mkdocstrings")
    site = tmp_path / "site"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    commands = (site / "commands" / "index.html").read_text()
    for name, module in _hooks().commands().items():  # every entry point's help, generated from its parser
        prog = importlib.import_module(module).build_parser().prog
        assert f"usage: {prog}" in commands, name
    assert "--tracker {mlflow,tensorboard,wandb-offline}" in commands and "fetch" in commands
    assert "bad input, the user&#39;s to fix" in commands or "bad input, the user's to fix" in commands
    assert "ssot.config.SSOTConfig" in (site / "api" / "ssot" / "index.html").read_text()  # API pages from the docstrings
    for page in ("selection", "gpu", "screening", "reliability", "clusters", "tracking", "results/embedded"):
        assert (site / page / "index.html").exists(), page
