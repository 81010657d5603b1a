"""`examples/`: every example's commands parse with their own command's parser (``--dry-run``), on
an embedded and on a paper task; the quick mode of the cheapest runs and prints its table; a
paper task without its data exits 2 and says what is missing; every example is in the manual."""
from __future__ import annotations

import contextlib
import importlib
import io
import json
import re
import runpy
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fixtures import REPO

EXAMPLES = sorted(p for p in (REPO / "examples").glob("*.py") if p.name != "common.py")


def _run_in_process(example: Path, *args: str) -> tuple[int, str, str]:
    """Run an example in this process (its commands still run as subprocesses): status, stdout, stderr."""
    out, err = io.StringIO(), io.StringIO()
    argv = sys.argv
    sys.argv = [str(example), *args]
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), pytest.raises(SystemExit) as stop:
            runpy.run_path(str(example), run_name="__main__")
    finally:
        sys.argv = argv
    code = stop.value.code
    return code if isinstance(code, int) else (0 if code is None else 1), out.getvalue(), err.getvalue()


def _dry_run(example: Path, *args: str) -> list[list[str]]:
    """The commands ``example --dry-run`` prints, each as its words after ``$``."""
    code, out, err = _run_in_process(example, "--dry-run", "--out", "/nonexistent/out", *args)
    assert code == 0, out + err
    return [shlex.split(line[2:]) for line in out.splitlines() if line.startswith("$ ")]


def _module(words: list[str]) -> tuple[str, list[str]]:
    """``python -m ssot.train ...`` -> (``ssot.train``, args); ``python tune/search.py ...`` -> (``tune.search``, args)."""
    assert words[0] == "python"
    if words[1] == "-m":
        return ("ssot.data.__main__" if words[2] == "ssot.data" else words[2]), words[3:]
    return words[1].removesuffix(".py").replace("/", "."), words[2:]


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_every_command_of_an_example_parses_with_its_own_parser(example):
    tasks = [[], ["--smoke-test"]] + ([["--task", "P2I", "--data-root", "/data"]] if "--task" in example.read_text() else [])
    for args in tasks:
        commands = _dry_run(example, *args)
        assert commands, f"{example.name} {args} runs no command"
        for words in commands:
            module, rest = _module(words)
            parsed = importlib.import_module(module).build_parser().parse_args(rest)  # SystemExit on a bad flag
            if "--task" in rest:
                assert parsed.task == rest[rest.index("--task") + 1]


def test_a_paper_task_without_its_data_exits_2_and_says_what_is_missing(tmp_path, monkeypatch):
    monkeypatch.delenv("SSOT_DATA_ROOT", raising=False)
    code, out, err = _run_in_process(REPO / "examples" / "embedded_default.py", "--task", "P2I", "--data-root", str(tmp_path),
                                     "--out", str(tmp_path / "out"))
    assert code == 2, out + err
    assert "task P2I cannot run: the data of imageclef is missing" in err
    assert "python -m ssot.data fetch imageclef" in err and "Traceback" not in err
    assert not (tmp_path / "out").exists()


def test_the_quick_mode_prints_the_table_of_its_runs(tmp_path):
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, str(REPO / "examples" / "embedded_default.py"), "--smoke-test", "--out", str(out)],
                          capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    record = json.loads((out / "ssot.json").read_text())  # one seed in the quick mode: a run record
    final, source_only = record["epochs"][-1]["target_acc"], record["source_only_target_acc"]
    assert f"| SSOT, default config | {100 * final:.1f} ± 0.0 % |" in proc.stdout
    assert f"| source only | {100 * source_only:.1f} ± 0.0 % |" in proc.stdout
    assert re.search(r"\| reference \| \d+\.\d % \(source-only model, unshifted target, seed 0\) \|", proc.stdout)


def test_every_example_is_in_the_manual():
    listed = (REPO / "docs" / "examples.md").read_text()
    results = "".join(p.read_text() for p in (REPO / "docs" / "results").glob("*.md"))
    for example in EXAMPLES:
        assert f"python examples/{example.name}" in listed, example.name
        assert f"examples/{example.name}" in results, example.name


def test_the_grid_table_has_a_row_per_lambda_ot_and_a_column_per_lambda_ent(tmp_path):
    from tests.fixtures.experiments import EDGE_TRIALS, write_edge_tpe

    sys.path.insert(0, str(REPO / "examples"))
    try:
        grid = importlib.import_module("grid_vs_tpe")
    finally:
        sys.path.remove(str(REPO / "examples"))
    table = grid.grid_table(write_edge_tpe(tmp_path / "exp" / "A2D")).splitlines()
    ots, ents = sorted({t[1] for t in EDGE_TRIALS}), sorted({t[2] for t in EDGE_TRIALS})
    assert table[0].split("|")[1:-1] == [" lambda_OT \\ lambda_Ent ", *(f" {e:g} " for e in ents)]
    assert [line.split("|")[1].strip() for line in table[2:]] == [f"{o:g}" for o in ots]


def test_the_warm_start_report_compares_each_task_and_seed(tmp_path, capsys):
    """examples/warm_start.py's last stage on finished searches (its searches: --smoke-test, or the manual's run)."""
    from tests.fixtures.experiments import write_atlas_results

    sys.path.insert(0, str(REPO / "examples"))
    try:
        warm = importlib.import_module("warm_start")
    finally:
        sys.path.remove(str(REPO / "examples"))
    results = tmp_path / "ray_results"
    write_atlas_results(results, ("P2H", "H2P"), name="cold-s0", n_trials=12)
    write_atlas_results(results, ("P2H", "H2P"), name="warm-s0", n_trials=12)  # the same trials: needs what cold needs
    warm.report(tmp_path, results, ["P2H", "H2P", "S2H"], [0, 1])  # S2H and seed 1 never ran: left out
    rows = [line for line in (tmp_path / "warm_start.md").read_text().splitlines()[2:] if line]
    assert [r.split("|")[1:3] for r in rows[2:]] == [[" H2P ", " cold "], [" H2P ", " warm "], [" P2H ", " cold "], [" P2H ", " warm "]]
    assert rows[2].split("|")[5:7] == rows[3].split("|")[5:7] and (tmp_path / "warm_start.png").stat().st_size > 0
