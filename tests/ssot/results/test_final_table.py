"""`ssot/results/final_table.py`: our accuracies beside the paper's."""
from __future__ import annotations

import math

import pandas as pd
import pytest

from ssot.errors import ResultsError
from ssot.results import final_table as results


# ------------------------------------------------------------------------------------ the table
def fake_record(task: str, seed: int, acc: float, source_only: float, status: str = "completed") -> dict:
    return {"config": {"task": task, "seed": seed}, "epochs": [{"epoch": 1, "target_acc": 0.1}, {"epoch": 2, "target_acc": acc}],
            "source_only_target_acc": source_only, "status": status, "reason": None}


def test_results_table_joins_the_paper_in_percent(tmp_path):
    records = {
        "P2I": [fake_record("P2I", 0, 0.95, 0.85), fake_record("P2I", 1, 0.97, 0.87, status="diverged")],
        "digits": [fake_record("digits", 0, 0.9, 0.6)],
    }
    table = results.results_table(records)
    p2i, digits = table.iloc[0], table.iloc[1]
    assert p2i["dataset"] == "imageclef" and p2i["seeds"] == "0 1" and p2i["statuses"] == "completed diverged"
    assert p2i["ssot_acc_mean"] == pytest.approx(96.0) and p2i["ssot_acc_std"] == pytest.approx(math.sqrt(2))
    assert p2i["source_only_acc_mean"] == pytest.approx(86.0)
    assert p2i["paper_ssot_acc"] == 96.7 and p2i["paper_source_only_acc"] == 86.9
    assert p2i["delta_vs_paper"] == pytest.approx(96.0 - 96.7)
    assert digits["dataset"] == "digits" and digits["ssot_acc_std"] == 0.0
    assert math.isnan(digits["paper_ssot_acc"]) and math.isnan(digits["delta_vs_paper"])

    lines = results.to_markdown(table).splitlines()
    assert lines[2] == "| P2I | imageclef | 0 1 | 96.0 ± 1.4 | 86.0 ± 1.4 | 96.7 | 86.9 | -0.7 | completed diverged |"
    assert lines[3] == "| digits | digits | 0 | 90.0 ± 0.0 | 60.0 ± 0.0 |  |  |  | completed |"

    csv_path, md_path = results.write_results(table, tmp_path / "t")
    written = pd.read_csv(csv_path)
    assert written.loc[1, "delta_vs_paper"] != written.loc[1, "delta_vs_paper"]  # empty -> NaN
    assert written.loc[0, "delta_vs_paper"] == pytest.approx(-0.7)
    with pytest.raises(ResultsError, match="already exists"):
        results.write_results(table, tmp_path / "t")


def test_a_run_that_diverged_in_pretraining_has_no_accuracy():
    record = {"config": {"task": "digits", "seed": 0}, "epochs": [], "source_only_target_acc": None,
              "status": "diverged", "reason": "non-finite pretraining loss"}
    row = results.task_row("digits", [record])
    assert math.isnan(row["ssot_acc_mean"]) and row["statuses"] == "diverged"
    assert "|  |  |" in results.to_markdown(pd.DataFrame([row]))
