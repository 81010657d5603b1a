"""`ssot/results/study.py`: a study's record (study.json) and folder layout."""
from __future__ import annotations

import json
import os

import pytest

from ssot.errors import ResultsError
from ssot.results.study import (
    ALL_TASKS,
    STUDY_FILE,
    StudyPaths,
    StudyRecord,
    is_study,
    read_study,
    stage_of,
    step_key,
    write_study,
)


def _record() -> StudyRecord:
    record = StudyRecord(settings={"tasks": ["P2H", "H2P"], "seeds": [3, 4], "base": {"epochs": 2}},
                         plan={"machine": "m", "rates": "r", "steps": [
                             {"task": "P2H", "step": "screen", "seconds": 10.0}, {"task": "P2H", "step": "dashboard", "seconds": 2.0},
                             {"task": ALL_TASKS, "step": "atlas", "seconds": 3.0}]})
    record.finish("P2H", "screen", 12.5)
    record.finish("P2H", "dashboard", 1.0)
    record.finish(ALL_TASKS, "atlas", 4.0, reused=True)
    return record


def test_the_record_survives_a_round_trip_and_says_what_is_done(tmp_path):
    record = _record()
    record.confirmations["P2H"] = [{"trial_id": "t1", "search_rank": 1, "mean": 0.7, "std": None, "confirmed": True}]
    write_study(tmp_path, record)
    back = read_study(tmp_path)
    assert is_study(tmp_path) and back.to_dict() == record.to_dict()
    assert back.done("P2H", "screen") and not back.done("H2P", "screen") and back.tasks == ["P2H", "H2P"]
    assert back.steps[step_key("P2H", "screen")]["seconds"] == 12.5 and back.steps["*/atlas"]["reused"] is True


def test_measured_and_predicted_are_summed_per_task_and_stage_the_report_steps_as_one():
    record = _record()
    assert [stage_of(s) for s in ("features", "confirm", "table", "dashboard", "atlas", "index")] == \
           ["features", "confirm", "report", "report", "report", "report"]
    assert record.measured() == {("P2H", "screen"): 12.5, ("P2H", "report"): 1.0, (ALL_TASKS, "report"): 4.0}
    assert record.predicted() == {("P2H", "screen"): 10.0, ("P2H", "report"): 2.0, (ALL_TASKS, "report"): 3.0}


def test_the_record_is_replaced_whole_never_left_half_written(tmp_path, monkeypatch):
    write_study(tmp_path, _record())
    before = (tmp_path / STUDY_FILE).read_bytes()
    bigger = _record()
    bigger.settings["note"] = "x" * 10_000

    def full_disk(src, dst):  # the rename that makes the new record visible fails: the old one stays whole
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", full_disk)
    with pytest.raises(OSError):
        write_study(tmp_path, bigger)
    assert (tmp_path / STUDY_FILE).read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == [STUDY_FILE]  # no temporary file left behind


@pytest.mark.parametrize("content, says", [
    ("{not json", "not valid JSON"),
    (json.dumps({"kind": "something else"}), "not the record of a study"),
    (json.dumps({"kind": "ssot-study", "format": 99, "settings": {}, "steps": {}, "status": "running"}), "format 99"),
    (json.dumps({"kind": "ssot-study", "format": 1, "settings": [], "steps": {}, "status": "running"}), "lacks its settings"),
])
def test_a_damaged_or_foreign_record_is_refused_in_one_line(tmp_path, content, says):
    (tmp_path / STUDY_FILE).write_text(content)
    with pytest.raises(ResultsError, match=says) as exc:
        read_study(tmp_path)
    assert "\n" not in str(exc.value)


def test_a_missing_record_names_the_command_that_starts_one(tmp_path):
    with pytest.raises(ResultsError, match="tune/study.py"):
        read_study(tmp_path)


def test_differences_name_each_setting_that_changed():
    record = _record()
    assert record.differences({"tasks": ["P2H", "H2P"], "seeds": (3, 4), "base": {"epochs": 2}}) == []  # tuples read as lists
    assert record.differences({"tasks": ["P2H", "H2P"], "seeds": [3, 5], "base": {"epochs": 2}}) == ["seeds: [3, 4] -> [3, 5]"]


def test_the_layout_puts_every_output_in_the_study_folder(tmp_path):
    paths = StudyPaths(tmp_path)
    outputs = [paths.record, paths.features("P2H"), paths.screen("P2H"), paths.confirm("P2H"), paths.final, paths.dashboard("P2H"),
               paths.atlas, paths.index, *paths.agreement]
    assert all(tmp_path in p.parents for p in outputs)
    assert paths.screen("P2H").parent == paths.screen_root == paths.screens / paths.SCREEN_NAME
