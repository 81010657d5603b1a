"""`tune/export.py`, `tune/final.py` and `tune/results.py`: best-config export from experiment
folders, final multi-seed runs with reusable run records, and the table beside the paper."""
from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import ssot.trainer
from ssot.config import SSOTConfig
from ssot.errors import ResultsError
from ssot.results import final_table as results
from ssot.results import paper as paper_numbers
from tune import export, final

REPO = Path(__file__).resolve().parent.parent
TRIAL_COLUMNS = ["task", "trial_id", "search", "lambda_ot", "lambda_ent", "eps", "potential_width", "epoch",
                 "target_acc", "source_acc", "loss_total", "loss_ce", "loss_ot", "loss_ent", "ot_value",
                 "outlier_mass", "n_pred_classes", "status", "reason"]


def tiny_config(**overrides) -> SSOTConfig:
    return SSOTConfig.for_task("digits", epochs=1, pretrain_epochs=1, iters_per_epoch=3, **overrides)


def write_experiment(folder: Path, *, status: str = "finished", best_acc: float = 0.8, lambda_ot: float = 1.0,
                     task: str = "digits") -> Path:
    """An experiment folder as tune/ writes it: a completed trial reaching ``best_acc`` at its last
    epoch (higher before), an early-stopped trial that was higher still, and a diverged trial."""
    folder.mkdir(parents=True)
    (folder / "experiment.json").write_text(json.dumps({
        "task": task, "dataset": "digits", "name": folder.parent.name, "search": "tpe", "metric": "target_acc",
        "mode": "max", "max_epochs": 3, "num_samples": 3, "space": {}, "status": status,
        "started": "2024-01-01T00:00:00", "finished": None if status == "running" else "2024-01-01T01:00:00"}))
    trials = {  # trial_id -> (status, accuracy per epoch, reason)
        "t_completed": ("completed", [0.5, best_acc + 0.1, best_acc], ""),
        "t_stopped": ("early-stopped", [best_acc + 0.15], "asha"),
        "t_diverged": ("diverged", [0.3, float("nan")], "non-finite loss_total"),
    }
    rows = []
    for trial_id, (trial_status, accs, reason) in trials.items():
        for epoch, acc in enumerate(accs, start=1):
            rows.append({"task": task, "trial_id": trial_id, "search": "tpe", "lambda_ot": lambda_ot, "lambda_ent": 1.0,
                         "eps": 1.0, "potential_width": 256, "epoch": epoch, "target_acc": acc, "source_acc": 0.9,
                         "loss_total": 1.0, "loss_ce": 0.5, "loss_ot": 0.1, "loss_ent": 0.4, "ot_value": 0.1,
                         "outlier_mass": 0.05, "n_pred_classes": 5, "status": trial_status, "reason": reason})
    pd.DataFrame(rows, columns=TRIAL_COLUMNS).to_csv(folder / "trials.csv", index=False)
    tiny_config(lambda_ot=lambda_ot).to_json(folder / "best_config.json")
    return folder


@pytest.fixture
def searches(tmp_path) -> dict[str, Path]:
    root = tmp_path / "searches"
    return {
        "root": root,
        "best": write_experiment(root / "exp_a" / "digits", best_acc=0.8, lambda_ot=0.5),
        "worse": write_experiment(root / "exp_b" / "digits", best_acc=0.6, lambda_ot=2.0),
        "running": write_experiment(root / "exp_c" / "digits", status="running", best_acc=0.99, lambda_ot=7.0),
    }


# ------------------------------------------------------------------------------------ export
def test_best_trial_uses_the_final_epoch_of_trials_that_reached_it(searches):
    from ssot.results.experiment import read_experiment
    from ssot.results.trials import best_trial, trial_table

    files = read_experiment(searches["best"])
    table = trial_table(files.trials, files.max_epochs)
    best = best_trial(table)
    assert best["trial_id"] == "t_completed" and best["target_acc"] == pytest.approx(0.8)  # not 0.9 (earlier epoch), not 0.95 (early-stopped)
    assert best_trial(table[table["status"] != "completed"]) is None


def test_export_picks_the_best_experiment_skips_running_and_refuses_overwrite(searches, tmp_path, capsys):
    out = tmp_path / "configs"
    assert export.main([str(searches["root"]), "--out", str(out)]) == 0
    captured = capsys.readouterr()
    assert [p.name for p in out.iterdir()] == ["digits.json"]
    exported = SSOTConfig.from_json(out / "digits.json")
    assert exported == tiny_config(lambda_ot=0.5)  # exp_a, not the worse exp_b nor the running exp_c
    assert json.loads((out / "digits.json").read_text()) == exported.to_dict()
    printed = captured.out.strip().splitlines()
    assert len(printed) == 1 and "digits" in printed[0] and "0.8000" in printed[0]
    assert str(searches["best"]) in printed[0] and "best of 2" in printed[0]
    warnings = captured.err.strip().splitlines()
    assert len(warnings) == 1 and str(searches["running"]) in warnings[0] and "running" in warnings[0]

    before = (out / "digits.json").read_text()
    assert export.main([str(searches["root"]), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("error:") and "already exists" in err[-1] and "--overwrite" in err[-1]
    assert "Traceback" not in "\n".join(err) and (out / "digits.json").read_text() == before
    (out / "digits.json").write_text("{}")
    assert export.main([str(searches["root"]), "--out", str(out), "--overwrite"]) == 0
    assert SSOTConfig.from_json(out / "digits.json") == exported


def test_export_without_finished_experiments_is_a_one_line_error(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    assert export.main([str(tmp_path / "empty"), "--out", str(tmp_path / "c")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "No experiment" in err[0]
    write_experiment(tmp_path / "only_running" / "digits", status="running")
    assert export.main([str(tmp_path / "only_running"), "--out", str(tmp_path / "c")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[0].startswith("warning:") and err[1].startswith("error:") and len(err) == 2
    assert not (tmp_path / "c").exists()


def test_export_runs_as_a_script_from_the_repo_root(searches, tmp_path):
    out = tmp_path / "script_configs"
    proc = subprocess.run([sys.executable, "tune/export.py", str(searches["root"]), "--out", str(out)],
                          cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert SSOTConfig.from_json(out / "digits.json").lambda_ot == 0.5


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


def test_final_user_errors_are_one_line(tmp_path, capsys):
    assert final.main([str(tmp_path / "missing.json"), "--out", str(tmp_path / "o")]) == 2
    assert final.main([str(tmp_path), "--out", str(tmp_path / "o")]) == 2  # a folder without configs
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"task": "digits", "eps": -1}))
    assert final.main([str(bad), "--out", str(tmp_path / "o")]) == 2
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    tiny_config().to_json(a); tiny_config(seed=3).to_json(b)
    assert final.main([str(a), str(b), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 4 and all(line.startswith("error:") for line in err)
    assert "does not exist" in err[0] and "no *.json" in err[1] and "'eps'" in err[2] and "both for task" in err[3]


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


def test_paper_accuracy_comes_from_the_installed_package():
    import ssot

    assert paper_numbers.paper_accuracy_path() == Path(ssot.__file__).parent / "paper_accuracy.csv"
    paper = paper_numbers.read_paper_accuracy()
    assert len(paper) == 26 and paper.loc["A2W", "ssot_acc"] == 97.3


def test_a_run_that_diverged_in_pretraining_has_no_accuracy():
    record = {"config": {"task": "digits", "seed": 0}, "epochs": [], "source_only_target_acc": None,
              "status": "diverged", "reason": "non-finite pretraining loss"}
    row = results.task_row("digits", [record])
    assert math.isnan(row["ssot_acc_mean"]) and row["statuses"] == "diverged"
    assert "|  |  |" in results.to_markdown(pd.DataFrame([row]))


def test_a_binary_config_file_is_a_one_line_error(tmp_path, capsys):
    from ssot.errors import ConfigError

    binary = tmp_path / "weights.pt"
    binary.write_bytes(b"\x80\x02\xff\xfe\x00binary")
    with pytest.raises(ConfigError, match="is not valid JSON .*UnicodeDecodeError"):
        SSOTConfig.from_json(binary)
    proc = subprocess.run([sys.executable, "-m", "ssot.train", "--config", str(binary)], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr
