"""`python tune/final.py`: final runs with reusable run records, the table beside the paper."""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

import ssot.trainer
from ssot.results import final_table as results
from tests.fixtures.experiments import write_export_searches
from tune import export, final


# ------------------------------------------------------------------------------------ final runs
def test_final_runs_write_records_and_tables_reuse_records_and_never_overwrite(searches, tmp_path, capsys, monkeypatch):
    configs, out = tmp_path / "configs", tmp_path / "final"
    assert export.main([str(searches["root"]), "--out", str(configs)]) == 0
    argv = [str(configs), "--seeds", "0", "1", "--device", "cpu", "--out", str(out)]
    assert final.main(argv) == 0
    printed = capsys.readouterr().out

    records = [json.loads((out / "runs" / f"digits_seed{s}.json").read_text()) for s in (0, 1)]
    assert [r["config"]["seed"] for r in records] == [0, 1] and all(r["config"]["lambda_ot"] == 0.5 for r in records)
    table = pd.read_csv(out / "results.csv", keep_default_na=False)
    assert list(table.columns) == list(results.COLUMNS) and len(table) == 1
    row = table.iloc[0]
    accs = [100 * r["epochs"][-1]["target_acc"] for r in records]
    assert row["task"] == "digits" and row["dataset"] == "digits" and row["seeds"] == "0 1"
    assert float(row["ssot_acc_mean"]) == pytest.approx(sum(accs) / 2)
    assert float(row["source_only_acc_mean"]) == pytest.approx(50 * sum(r["source_only_target_acc"] for r in records))
    assert row["paper_ssot_acc"] == row["delta_vs_paper"] == ""  # digits is not a paper task
    assert row["statuses"] == "completed completed"
    markdown = (out / "results.md").read_text()
    assert f"{sum(accs) / 2:.1f} ± " in markdown and "| digits | digits | 0 1 |" in markdown
    assert "wrote" in printed

    # An interrupted final run continues: the tables are gone, the records are reused, nothing trains.
    (out / "results.csv").unlink(); (out / "results.md").unlink()
    monkeypatch.setattr(ssot.trainer, "run", lambda *a, **k: pytest.fail("a reused seed was retrained"))
    assert final.main(argv) == 0
    assert capsys.readouterr().out.count("reused") == 2
    assert (out / "results.md").read_text() == markdown

    # Existing tables are never overwritten.
    assert final.main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "already exists" in err[0] and (out / "results.md").read_text() == markdown

    # A reused record must have run the requested config.
    (out / "results.csv").unlink(); (out / "results.md").unlink()
    assert final.main([*argv, "--epochs", "2"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "epochs=1 instead of 2" in err[0] and not (out / "results.csv").exists()


def test_final_user_errors_are_one_line(quick_config, tmp_path, capsys):
    assert final.main([str(tmp_path / "missing.json"), "--out", str(tmp_path / "o")]) == 2
    assert final.main([str(tmp_path), "--out", str(tmp_path / "o")]) == 2  # a folder without configs
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"task": "digits", "eps": -1}))
    assert final.main([str(bad), "--out", str(tmp_path / "o")]) == 2
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    quick_config().to_json(a); quick_config(seed=3).to_json(b)
    assert final.main([str(a), str(b), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 4 and all(line.startswith("error:") for line in err)
    assert "does not exist" in err[0] and "no *.json" in err[1] and "'eps'" in err[2] and "both for task" in err[3]


@pytest.fixture
def searches(tmp_path) -> dict[str, Path]:
    """The best, a worse and a running experiment of one task (:func:`write_export_searches`)."""
    return write_export_searches(tmp_path / "searches")
