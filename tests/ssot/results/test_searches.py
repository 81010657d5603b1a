"""`ssot/results/searches.py`: one finished search per task, strictly (a command) or leniently (the dashboard)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from ssot.errors import ResultsError
from ssot.results.discovery import read_experiments
from ssot.results.searches import choose_searches, task_searches
from tests.fixtures.experiments import write_atlas_results


def test_one_search_per_task(tmp_path: Path) -> None:
    write_atlas_results(tmp_path, ("digits", "P2H"), n_trials=5)
    chosen = task_searches(read_experiments(tmp_path))
    assert [s.task for s in chosen] == ["P2H", "digits"]
    assert choose_searches(read_experiments(tmp_path)).left_out == []


def test_bad_input_is_one_line_naming_the_fix(tmp_path: Path) -> None:
    folders = write_atlas_results(tmp_path / "r", ("digits", "P2H"), n_trials=5)
    write_atlas_results(tmp_path / "r", ("P2H",), name="again", n_trials=7)
    found = read_experiments(tmp_path / "r")
    with pytest.raises(ResultsError, match=r"Two searches of task P2H under R: .* Choose one search per task with --name"):
        task_searches(found, where="R")
    assert [s.name for s in task_searches(found, "atlas")] == ["atlas", "atlas"]
    with pytest.raises(ResultsError, match=r"No search named 'nope' under R \(names found: again, atlas\)"):
        task_searches(found, "nope", where="R")
    with pytest.raises(ResultsError, match=r"needs the searches of at least 2 tasks; R holds one task only \(P2H\)"):
        task_searches(found, "again", where="R", what="The atlas")
    lenient = choose_searches(found)
    assert [(s.task, s.name) for s in lenient.searches] == [("P2H", "again"), ("digits", "atlas")]  # the most trials
    assert len(lenient.left_out) == 1 and "another search of task P2H" in lenient.left_out[0]
    meta = folders["digits"] / "experiment.json"
    meta.write_text(json.dumps({**json.loads(meta.read_text()), "status": "running"}))
    with pytest.raises(ResultsError, match=r"digits\) is not finished: its status is 'running', not 'finished'"):
        task_searches(read_experiments(tmp_path / "r"), "atlas")
    lenient = choose_searches(read_experiments(tmp_path / "r"), "atlas")
    assert [s.task for s in lenient.searches] == ["P2H"] and "not finished" in lenient.left_out[0]
    with pytest.raises(ResultsError, match="No readable search"):
        task_searches([])
