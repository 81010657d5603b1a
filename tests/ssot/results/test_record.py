"""`ssot/results/record.py`: the run record, its final-accuracy and score rules, its files."""
from __future__ import annotations

import json
import math
import statistics

import pytest

from ssot.errors import ResultsError
from ssot.results.record import RunRecord, is_run_record, mean_std, read_record, read_reusable, run_path, summarize, write_new


def _record(accs: list[float], status: str = "completed", seed: int = 0, source_only: float | None = 0.5, **metrics) -> dict:
    epochs = [{"epoch": e, "target_acc": a, **{k: v[e - 1] for k, v in metrics.items()}} for e, a in enumerate(accs, 1)]
    return {"config": {"task": "digits", "seed": seed, "lambda_ot": 1.0}, "epochs": epochs, "source_only_target_acc": source_only,
            "status": status, "reason": None if status == "completed" else "non-finite loss_ot", "task": {"name": "digits"}}


def test_the_final_accuracy_is_the_last_epochs_or_the_source_only_one():
    assert RunRecord.from_dict(_record([0.6, 0.8])).final_acc == 0.8
    assert RunRecord.from_dict(_record([0.6, 0.7], "diverged")).final_acc == 0.7  # a diverged run: its last finished epoch
    assert RunRecord.from_dict(_record([], source_only=0.55)).final_acc == 0.55  # --epochs 0
    assert RunRecord.from_dict(_record([], "diverged", source_only=None)).final_acc is None


def test_the_score_is_the_metric_at_the_last_epoch_of_a_completed_run_else_the_worst():
    done = RunRecord.from_dict(_record([0.6, 0.8], entropy=[0.4, 0.3]))
    assert done.score("target_acc") == 0.8 and done.score("entropy") == 0.3
    diverged = RunRecord.from_dict(_record([0.6, 0.8], "diverged", entropy=[0.4, 0.3]))
    assert diverged.score("target_acc") == 0.0 and diverged.score("entropy") == 1e3 and diverged.score("snd") == -1e3
    assert RunRecord.from_dict(_record([0.6, math.nan])).score("target_acc") == 0.0


def test_mean_and_sample_std_over_seeds():
    assert mean_std([0.8]) == (0.8, 0.0)
    values = [0.5, 0.7, 0.9]
    assert mean_std(values) == (statistics.fmean(values), pytest.approx(math.sqrt(sum((v - 0.7) ** 2 for v in values) / 2)))
    summary = summarize([_record([0.6, 0.8], seed=0), _record([0.9], "diverged", seed=1), _record([], seed=2, source_only=0.7)])
    assert summary["seeds"] == [0, 1, 2] and summary["statuses"] == ["completed", "diverged", "completed"]
    assert summary["target_acc"]["mean"] == pytest.approx((0.8 + 0.9 + 0.7) / 3)
    assert summarize([_record([0.6], source_only=None)])["source_only_target_acc"] is None  # an unlabeled target


def test_a_record_is_written_whole_and_never_overwritten(tmp_path):
    path = run_path(tmp_path, "digits", 3)
    assert path == tmp_path / "runs" / "digits_seed3.json"
    record = RunRecord.from_dict(_record([0.6, 0.8]))
    write_new(path, record)
    assert read_record(path) == record and json.loads(path.read_text())["task"] == {"name": "digits"}
    with pytest.raises(ResultsError, match="appeared meanwhile; the new run is kept in"):
        write_new(path, _record([0.1]))
    assert read_record(path) == record and len(list(path.parent.glob(f".{path.name}.*.tmp"))) == 1  # the new one, kept aside


def test_reading_refuses_what_is_not_a_record_and_a_record_of_another_config(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    with pytest.raises(ResultsError, match=f"The run record {bad} cannot be read .*; move it away"):
        read_record(bad, "move it away")
    bad.write_text(json.dumps({"lambda_ot": 1.0}))
    assert not is_run_record(json.loads(bad.read_text()))
    with pytest.raises(ResultsError, match="is not a run record \\(no config and epochs\\)"):
        read_record(bad)
    good = write_new(tmp_path / "r.json", _record([0.6]))
    expected = {"task": "digits", "seed": 0, "lambda_ot": 0.5, "device": "cuda"}
    with pytest.raises(ResultsError, match="was trained with lambda_ot=1.0 instead of 0.5"):
        read_reusable(good, expected, ignore=("device",))
    assert read_reusable(good, {**expected, "lambda_ot": 1.0}, ignore=("device",)).final_acc == 0.6
