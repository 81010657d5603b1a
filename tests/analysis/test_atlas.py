"""`python analysis/atlas.py`: the atlas page and its figures, and bad input refused in one line."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from analysis import atlas
from analysis.dashboard.atlas import static_names
from ssot.results.transfer import DEFAULT_SOURCE
from tests.fixtures import REPO, first_group
from tests.fixtures.experiments import digest, write_atlas_results, write_transfer_results

TASKS = ("digits", "P2H", "H2P")
N = 12


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("atlas") / "results"
    folders = write_atlas_results(root, TASKS, n_trials=N)
    accuracy = {(s, t, seed): 0.5 + 0.1 * (s == t) + 0.01 * seed for s in [*TASKS, DEFAULT_SOURCE] for t in TASKS for seed in (0, 1)}
    write_transfer_results(root / "transfer", folders, accuracy)
    (root / ".digest.json").write_text(json.dumps(digest(root)))
    return root


@pytest.fixture(scope="module")
def page(results: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("page") / "atlas"
    assert atlas.main([str(results), "--out", str(out), "--bootstrap", "5"]) == 0
    return out


def test_the_page_and_its_figures(page: Path, results: Path) -> None:
    text = (page / "atlas.html").read_text(encoding="utf-8")
    assert not re.search(r"<script[^>]+src=", text) and len(text) > 3_000_000  # plotly.js inlined: opens offline
    for section in ("atlas-importance", "atlas-effects", "atlas-tunability", "atlas-transfer", "atlas-rungs", "atlas-coverage"):
        assert f'id="{section}"' in text, section
    figures = json.loads(first_group(r'<script type="application/json" id="atlas-figures">(.*?)</script>', text, re.S).replace("<\\/", "</"))
    divs = re.findall(r'<div class="atlas-plot" id="([^"]+)"', text)
    assert sorted(divs) == sorted(figures) and len(divs) == 8  # one group: 7 figures, and the transfer matrix
    written = sorted(p.name for p in (page / "figures").iterdir())
    assert written == sorted(n for n in static_names(["A"], ["pdf", "png"]))
    # every number states what it rests on
    assert f"{N} / {N}" in text and "1 seed per trial (seed 0)" in text and "5 bootstrap replicates" in text
    subtitles = [f["layout"]["title"]["text"] for f in figures.values()]
    assert sum(f"trials per task: H2P {N}, P2H {N}, digits {N}" in s for s in subtitles) == 4  # importance, tunability x2, coverage
    assert "seeds 0 1" in text and "Replays in <code>" in text
    # the inputs are never touched
    before = json.loads((results / ".digest.json").read_text())
    after = digest(results)
    del after[".digest.json"]
    assert after == before


def _one_line(capsys) -> str:
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and err.startswith("error: ") and "Traceback" not in err, err
    return err


def test_bad_input_is_one_line_and_exit_2_before_any_work(results: Path, page: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "o"
    assert atlas.main([str(tmp_path / "empty"), "--out", str(out)]) == 2
    assert "does not exist" in _one_line(capsys)
    (tmp_path / "empty").mkdir()
    assert atlas.main([str(tmp_path / "empty"), "--out", str(out)]) == 2
    assert "No experiment found" in _one_line(capsys)
    assert atlas.main([str(results / "atlas" / "P2H"), "--out", str(out)]) == 2
    assert "at least 2 tasks" in _one_line(capsys)
    before = (page / "atlas.html").read_bytes()
    assert atlas.main([str(results), "--out", str(page)]) == 2  # the output exists: never overwritten
    assert "atlas.html already exists" in _one_line(capsys) and (page / "atlas.html").read_bytes() == before
    for inside in (results / "atlas" / "digits", results / "transfer" / "x"):  # an output inside an input
        assert atlas.main([str(results), "--out", str(inside)]) == 2
        assert "one of the atlas's inputs" in _one_line(capsys)
    assert atlas.main([str(results), "--out", str(out), "--bootstrap", "-1"]) == 2
    assert "'--bootstrap' argument must be an int in [0, inf)" in _one_line(capsys)
    assert atlas.main([str(results), "--out", str(out), "--view", "epoch7"]) == 2
    assert "not a view of the search" in _one_line(capsys)
    assert atlas.main([str(results), "--out", str(out), "--transfer", str(tmp_path)]) == 2
    assert "holds no transfer.json" in _one_line(capsys)
    assert not out.exists() and not (results / "atlas" / "digits" / "atlas.html").exists()


def test_an_unfinished_search_is_refused(tmp_path: Path, capsys) -> None:
    write_atlas_results(tmp_path / "r", ("digits",), n_trials=4)
    write_atlas_results(tmp_path / "r", ("P2H",), n_trials=4, status="running")
    assert atlas.main([str(tmp_path / "r"), "--out", str(tmp_path / "o")]) == 2
    assert "(task P2H) is not finished: its status is 'running'" in _one_line(capsys)


def test_the_script_runs_as_a_file(results: Path, tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, str(REPO / "analysis" / "atlas.py"), str(tmp_path / "none"), "--out", str(tmp_path / "o")],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300, env={**os.environ, "PYTHONPATH": ""})
    assert proc.returncode == 2 and proc.stderr.startswith("error: ") and proc.stderr.count("\n") == 1
