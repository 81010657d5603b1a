"""`analysis/data/selection.py`: regret of label-free selection, known answers."""
from __future__ import annotations

import pytest

from analysis.data import selection as S
from tests.fixtures.experiments import SELECTION_DIRECTIONS, selection_frame


def test_hyperparameter_selection_known_answer():
    out = S.hyperparameter_selection(selection_frame(), SELECTION_DIRECTIONS).set_index("validator")
    # finals: a 0.7 (snd 3, ent 0.2), b 0.6 (snd 2, ent 0.5), c 0.8 (snd 1, ent 0.3); oracle c 0.8
    assert out.loc["snd", "picked_acc"] == 0.7 and out.loc["snd", "regret"] == pytest.approx(10.0)
    assert out.loc["entropy", "picked_acc"] == 0.7 and out.loc["entropy", "oracle_acc"] == 0.8
    # snd ranks a > b > c, accuracy c > a > b: Spearman = 1 - 6 * (4 + 1 + 1) / 24 = -0.5
    assert out.loc["snd", "spearman"] == pytest.approx(-0.5)
    assert out.loc["snd", "kendall"] == pytest.approx(-1 / 3)
    assert "target_acc" not in out.index and out.loc["snd", "n"] == 3


def test_epoch_selection_known_answer():
    out = S.epoch_selection(selection_frame(), SELECTION_DIRECTIONS).set_index("validator")
    # last epoch: a 0.7 (best 0.7), b 0.6 (best 0.9), c 0.8 (best 0.8): regret mean 10 points
    assert out.loc["last_epoch", "regret"] == pytest.approx(10.0)
    # snd picks a:2 (0.7), b:1 (0.9), c:2 (0.8): zero regret; entropy picks a:2, b:1, c: tie -> first (0.8)
    assert out.loc["snd", "regret"] == pytest.approx(0.0) and out.loc["entropy", "regret"] == pytest.approx(0.0)
    assert out.loc["snd", "oracle_acc"] == pytest.approx((0.7 + 0.9 + 0.8) / 3)


def test_ensv_from_final_predictions():
    frame = selection_frame()
    preds = {"a": "0 1 2 2", "b": "0 1 1 2", "c": "1 1 2 0"}  # majority 0 1 2 2
    frame["target_pred"] = [preds[t] if e == 2 else None for t, e in zip(frame["trial_id"], frame["epoch"])]
    out = S.hyperparameter_selection(frame, SELECTION_DIRECTIONS).set_index("validator")
    assert out.loc["ensv", "picked_acc"] == 0.7 and out.loc["ensv", "direction"] == "max"
