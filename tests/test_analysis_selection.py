"""Regret of validator-based selection on synthetic frames with known answers."""
from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from analysis.data import selection as S

REPO = Path(__file__).resolve().parents[1]

DIRS = {"target_acc": "max", "snd": "max", "entropy": "min"}


def _frame():
    # trial a: acc 0.5 -> 0.7 ; trial b: 0.9 -> 0.6 ; trial c: 0.8 -> 0.8 ; trial d early-stopped (ignored)
    rows = []
    for tid, accs, snds, ents in [("a", [0.5, 0.7], [1.0, 3.0], [0.9, 0.2]), ("b", [0.9, 0.6], [5.0, 2.0], [0.1, 0.5]),
                                  ("c", [0.8, 0.8], [0.0, 1.0], [0.3, 0.3])]:
        for e, (acc, s, h) in enumerate(zip(accs, snds, ents), 1):
            rows.append({"trial_id": tid, "epoch": e, "status": "completed", "target_acc": acc, "snd": s, "entropy": h})
    rows.append({"trial_id": "d", "epoch": 1, "status": "early-stopped", "target_acc": 0.99, "snd": 99.0, "entropy": 0.0})
    return pd.DataFrame(rows)


def test_hyperparameter_selection_known_answer():
    out = S.hyperparameter_selection(_frame(), DIRS).set_index("validator")
    # finals: a 0.7 (snd 3, ent 0.2), b 0.6 (snd 2, ent 0.5), c 0.8 (snd 1, ent 0.3); oracle c 0.8
    assert out.loc["snd", "picked_acc"] == 0.7 and out.loc["snd", "regret"] == pytest.approx(10.0)
    assert out.loc["entropy", "picked_acc"] == 0.7 and out.loc["entropy", "oracle_acc"] == 0.8
    # snd ranks a > b > c, accuracy c > a > b: Spearman = 1 - 6 * (4 + 1 + 1) / 24 = -0.5
    assert out.loc["snd", "spearman"] == pytest.approx(-0.5)
    assert out.loc["snd", "kendall"] == pytest.approx(-1 / 3)
    assert "target_acc" not in out.index and out.loc["snd", "n"] == 3


def test_epoch_selection_known_answer():
    out = S.epoch_selection(_frame(), DIRS).set_index("validator")
    # last epoch: a 0.7 (best 0.7), b 0.6 (best 0.9), c 0.8 (best 0.8): regret mean 10 points
    assert out.loc["last_epoch", "regret"] == pytest.approx(10.0)
    # snd picks a:2 (0.7), b:1 (0.9), c:2 (0.8): zero regret; entropy picks a:2, b:1, c: tie -> first (0.8)
    assert out.loc["snd", "regret"] == pytest.approx(0.0) and out.loc["entropy", "regret"] == pytest.approx(0.0)
    assert out.loc["snd", "oracle_acc"] == pytest.approx((0.7 + 0.9 + 0.8) / 3)


def test_ensv_from_final_predictions():
    frame = _frame()
    preds = {"a": "0 1 2 2", "b": "0 1 1 2", "c": "1 1 2 0"}  # majority 0 1 2 2
    frame["target_pred"] = [preds[t] if e == 2 else None for t, e in zip(frame["trial_id"], frame["epoch"])]
    out = S.hyperparameter_selection(frame, DIRS).set_index("validator")
    assert out.loc["ensv", "picked_acc"] == 0.7 and out.loc["ensv", "direction"] == "max"


def test_summary_and_cli(tmp_path):
    for seed in (0, 1):
        folder = tmp_path / f"s{seed}" / "digits"
        folder.mkdir(parents=True)
        (folder / "experiment.json").write_text(json.dumps({"task": "digits", "name": f"s{seed}", "validator_directions": DIRS}))
        _frame().to_csv(folder / "trials.csv", index=False)
    table = S.selection_table(S.read_experiments(tmp_path))
    summ = S.summary(table).set_index(["selection", "validator"])
    assert summ.loc[("hyperparameter", "snd"), "regret_mean"] == pytest.approx(10.0)
    assert summ.loc[("hyperparameter", "snd"), "experiments"] == 2 and summ.loc[("hyperparameter", "snd"), "regret_std"] == 0
    script = REPO / "analysis" / "selection.py"
    done = subprocess.run([sys.executable, str(script), str(tmp_path)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "selection.csv").is_file() and "| digits | epoch | last_epoch | 2 | 10.0" in (tmp_path / "selection.md").read_text()
    again = subprocess.run([sys.executable, str(script), str(tmp_path)], capture_output=True, text=True)
    assert again.returncode == 2 and "already exists" in again.stderr and again.stderr.count("\n") == 1


def test_analysis_selection_does_not_import_torch():
    code = "import sys; import analysis.selection; assert not {'torch', 'ray', 'tune'} & set(sys.modules), sorted(sys.modules)"
    root = REPO
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=root, env={"PYTHONPATH": str(root)})
    assert done.returncode == 0, done.stderr[-500:]


def test_dashboard_block_only_for_experiments_with_validators():
    from analysis.dashboard.regret import regret_html

    frame = pd.DataFrame({"trial_id": ["a", "a", "b", "b"], "epoch": [1, 2, 1, 2], "status": ["completed"] * 4,
                          "target_acc": [0.5, 0.6, 0.9, 0.8], "entropy": [0.3, 0.2, 0.5, 0.4]})
    block = regret_html({"validator_directions": {"entropy": "min"}}, frame)
    # entropy picks trial a (0.2 < 0.4): 60 % against the oracle's 80 %, 20 points of regret
    assert "<td>entropy</td><td>min</td><td>2</td><td>60.0</td><td>80.0</td><td>20.0</td>" in block
    assert regret_html({}, frame) == ""
