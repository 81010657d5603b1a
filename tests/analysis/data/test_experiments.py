"""`analysis/data/experiments.py`: reading experiments, their specs and problems."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analysis.data.experiments import NoExperimentsError, ParamSpec, Problem, load_experiment, load_experiments
from ssot.results.discovery import find_experiments as find_experiment_dirs
from ssot.results.experiment import parse_trials
from tests.fixtures.experiments import EDGE_TRIALS, write_edge_tpe


def _by_task(experiments: list, task: str):
    return next(e for e in experiments if e.task == task)


def test_load_experiments_reads_the_good_and_reports_the_bad(edge_results: Path) -> None:
    experiments, problems = load_experiments(edge_results)
    assert sorted(e.task for e in experiments) == ["A2D", "I2P", "P2I", "P2I"]
    text = "\n".join(str(p) for p in problems)
    assert str(edge_results / "broken" / "C2I" / "experiment.json") in text
    assert str(edge_results / "tpe-exp" / "P2I" / "trials.csv") in text
    assert "malformed row" in text
    assert str(edge_results / "run-exp" / "I2P" / "experiment.json") in text
    assert "still running" in text
    # a running search has no best_config.json yet: that is not a problem
    assert "best_config.json" not in text
    assert all(isinstance(p, Problem) for p in problems)


def test_truncated_trials_keep_the_complete_rows(edge_results: Path) -> None:
    problems: list[Problem] = []
    path = edge_results / "tpe-exp" / "P2I" / "trials.csv"
    frame = parse_trials(path.read_text(), path, problems)
    assert frame is not None
    n_rows = sum(len(t[5]) for t in EDGE_TRIALS)
    assert len(frame) == n_rows - 1  # only the cut row is gone
    assert len(problems) == 1 and problems[0].path == path
    assert "t6" in problems[0].message  # names the trial of the cut row


def test_corrupt_and_missing_files_are_problems_not_crashes(tmp_path: Path) -> None:
    folder = write_edge_tpe(tmp_path / "x" / "A2D")
    (folder / "trials.csv").write_bytes(b"\x00\xff\xfe garbage\n\x01")
    experiment, problems = load_experiment(folder)
    assert experiment is None
    assert problems and problems[0].path == folder / "trials.csv"
    (folder / "trials.csv").write_text("a,b\n1,2\n")
    experiment, problems = load_experiment(folder)
    assert experiment is None and "lacks the column" in problems[0].message
    (folder / "trials.csv").unlink()
    experiment, problems = load_experiment(folder)
    assert experiment is None and "missing" in problems[0].message
    (folder / "trials.csv").write_text("")
    experiment, problems = load_experiment(folder)
    assert experiment is None and "empty" in problems[0].message


def test_missing_best_config_of_a_finished_search_is_reported(tmp_path: Path) -> None:
    folder = write_edge_tpe(tmp_path / "x" / "A2D")
    (folder / "best_config.json").unlink()
    experiment, problems = load_experiment(folder)
    assert experiment is not None and experiment.best_config is None
    assert [p.path for p in problems] == [folder / "best_config.json"]


def test_repeated_rows_of_a_resumed_trial_keep_the_last(tmp_path: Path) -> None:
    folder = write_edge_tpe(tmp_path / "x" / "A2D")
    frame = pd.read_csv(folder / "trials.csv")
    again = frame[frame["trial_id"] == "t0"].tail(1).assign(target_acc=0.63)
    pd.concat([frame, again]).to_csv(folder / "trials.csv", index=False)
    experiment, problems = load_experiment(folder)
    assert experiment is not None
    t0 = experiment.trials[experiment.trials["trial_id"] == "t0"]
    assert t0["epoch"].tolist() == [1, 2, 3, 4] and t0["target_acc"].iloc[-1] == 0.63
    assert any("repeated" in p.message for p in problems)


def test_no_experiment_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(NoExperimentsError, match="No experiment found under"):
        load_experiments(tmp_path)
    with pytest.raises(NoExperimentsError, match="does not exist"):
        load_experiments(tmp_path / "nope")
    (tmp_path / "e").mkdir()
    (tmp_path / "e" / "experiment.json").write_text("not json")
    with pytest.raises(NoExperimentsError, match="could be read"):
        load_experiments(tmp_path)


def test_discovery_does_not_descend_into_experiments(tmp_path: Path) -> None:
    outer = write_edge_tpe(tmp_path / "a" / "A2D")
    write_edge_tpe(outer / "trial_0001" / "inner")  # e.g. a Ray trial folder
    write_edge_tpe(tmp_path / ".hidden" / "X")
    assert find_experiment_dirs(tmp_path) == [outer]


def test_param_spec_from_json_and_errors() -> None:
    spec = ParamSpec.from_json("lambda_ot", {"type": "loguniform", "low": 0.001, "high": 10})
    assert (spec.kind, spec.low, spec.high) == ("log", 0.001, 10.0)
    grid = ParamSpec.from_json("lambda_ot", {"type": "grid", "values": [10, 0.1, 1]})
    assert grid.kind == "grid" and grid.values == (0.1, 1, 10)
    assert not ParamSpec.from_json("eps", {"type": "fixed", "value": 1.0}).searched
    with pytest.raises(ValueError, match="unknown type"):
        ParamSpec.from_json("eps", {"type": "normal"})
    with pytest.raises(ValueError, match="not > 0"):
        ParamSpec.from_json("eps", {"type": "loguniform", "low": 0, "high": 1})
    inferred = ParamSpec.infer("eps", pd.Series(np.logspace(-2, 1, 30)))
    assert inferred.kind == "log" and inferred.inferred
