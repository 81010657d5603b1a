"""`analysis/data/selection.py`: regret of label-free selection, known answers."""
from __future__ import annotations

from collections import Counter

import numpy as np
import pandas as pd
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


def _ensv_by_the_formula(predictions: list[list[int]]) -> list[float]:
    """EnsV as published, written out: the ensemble label of each sample is the class most
    candidates predict (ties: the lowest class), each candidate's score the share of samples where
    it agrees with the ensemble."""
    n = len(predictions[0])
    ensemble = []
    for i in range(n):
        counts = Counter(p[i] for p in predictions)
        ensemble.append(min(c for c in counts if counts[c] == max(counts.values())))
    return [sum(p[i] == ensemble[i] for i in range(n)) / n for p in predictions]


def test_ensv_is_the_published_formula_on_small_arrays():
    known = [[0, 1, 2, 2], [0, 1, 1, 2], [1, 1, 2, 0]]  # majority 0 1 2 2
    rng = np.random.default_rng(0)
    cases = [known, [[0, 1], [1, 0]]]  # a tie on every sample goes to the lowest class
    cases += [rng.integers(0, k, size=(c, n)).tolist() for c, n, k in [(2, 5, 3), (5, 40, 4), (7, 13, 10), (1, 6, 2)]]
    for preds in cases:
        final = pd.DataFrame({"target_pred": [" ".join(map(str, p)) for p in preds]}, index=[f"t{i}" for i in range(len(preds))])
        scores = S.ensv_scores(final)
        assert list(scores.index) == list(final.index)
        np.testing.assert_allclose(scores.to_numpy(), _ensv_by_the_formula(preds), rtol=0, atol=1e-12)
    np.testing.assert_allclose(S.ensv_scores(pd.DataFrame({"target_pred": ["0 1 2 2", "0 1 1 2", "1 1 2 0"]})), [1.0, 0.75, 0.5])
    uneven = S.ensv_scores(pd.DataFrame({"target_pred": ["0 1 2", "0 1"]}))  # not the same target set: no score
    assert uneven.isna().all() and len(uneven) == 2


def test_ensv_from_final_predictions():
    frame = selection_frame()
    preds = {"a": "0 1 2 2", "b": "0 1 1 2", "c": "1 1 2 0"}  # majority 0 1 2 2
    frame["target_pred"] = [preds[t] if e == 2 else None for t, e in zip(frame["trial_id"], frame["epoch"])]
    out = S.hyperparameter_selection(frame, SELECTION_DIRECTIONS).set_index("validator")
    assert out.loc["ensv", "picked_acc"] == 0.7 and out.loc["ensv", "direction"] == "max"


def _collapse_frame():
    """Four trials, two epochs each. Trial d collapses (one predicted class, 20 % accuracy) and has
    the best entropy and MixVal halves' inter score; the others predict 5 or 6 classes."""
    rows = []
    spec = {  # trial: (acc by epoch, entropy, mixval_inter, mixval_intra, n_pred)
        "a": ([0.60, 0.70], [0.50, 0.40], [0.50, 0.60], [0.90, 0.95], [6, 6]),
        "b": ([0.80, 0.75], [0.45, 0.45], [0.55, 0.55], [0.97, 0.99], [5, 5]),
        "c": ([0.65, 0.72], [0.60, 0.30], [0.70, 0.65], [0.80, 0.90], [6, 5]),
        "d": ([0.40, 0.20], [0.20, 0.01], [0.50, 0.90], [0.85, 1.00], [4, 1]),
    }
    for tid, (acc, ent, inter, intra, npred) in spec.items():
        for e in range(2):
            rows.append({"trial_id": tid, "epoch": e + 1, "status": "completed", "target_acc": acc[e], "entropy": ent[e],
                         "mixval_inter": inter[e], "mixval_intra": intra[e], "n_pred_classes": npred[e]})
    return pd.DataFrame(rows)


DIRS = {"target_acc": "max", "entropy": "min", "mixval_inter": "max", "mixval_intra": "max"}


def test_collapse_guard_drops_the_collapsed_pick():
    out = S.hyperparameter_selection(_collapse_frame(), DIRS).set_index("validator")
    # final epochs: entropy picks the collapsed d (0.01, 20 %); the oracle is b (75 %)
    assert out.loc["entropy", "picked_acc"] == 0.20 and out.loc["entropy", "regret"] == pytest.approx(55.0)
    # guarded: d predicts 1 class < 0.5 x 6 -> dropped; among a, b, c the lowest entropy is c (0.30, 72 %)
    assert out.loc["entropy_guarded", "picked_acc"] == 0.72 and out.loc["entropy_guarded", "regret"] == pytest.approx(3.0)
    assert out.loc["entropy_guarded", "direction"] == "max" and out.loc["entropy_guarded", "n"] == 3
    assert (out.loc["entropy", "picked_trial"], out.loc["entropy_guarded", "picked_trial"], out.loc["entropy", "oracle_trial"]) == ("d", "c", "b")
    # no guard without its column, no guard of a validator the experiment did not record
    plain = S.hyperparameter_selection(_collapse_frame().drop(columns="n_pred_classes"), DIRS)
    assert not plain["validator"].str.endswith("_guarded").any() and "bnm_guarded" not in out.index


def test_mixval_rank_is_the_mean_of_the_two_ranks():
    out = S.hyperparameter_selection(_collapse_frame(), DIRS).set_index("validator")
    # final inter: a .60 b .55 c .65 d .90 -> ranks a2 b1 c3 d4; intra: a .95 b .99 c .90 d 1.0 -> a2 b3 c1 d4
    # means: a 2, b 2, c 2, d 4: d (20 %) is picked, 55 points below the oracle
    assert out.loc["mixval_rank", "picked_acc"] == 0.20 and out.loc["mixval_rank", "regret"] == pytest.approx(55.0)
    scores = S.ranks(_collapse_frame().groupby("trial_id").tail(1), ("mixval_inter", "mixval_intra"), DIRS)
    assert scores.tolist() == [2.0, 2.0, 2.0, 4.0]
    # a missing score ranks last, a "min" validator is turned before ranking
    frame = pd.DataFrame({"entropy": [0.3, None, 0.1], "mixval_inter": [0.5, 0.9, 0.1]})
    assert S.ranks(frame, ("entropy", "mixval_inter"), DIRS).tolist() == [2.0, 2.0, 2.0]


def test_guarded_epoch_selection_skips_the_collapsed_epoch():
    out = S.epoch_selection(_collapse_frame(), DIRS).set_index("validator")
    # entropy picks: a e2 (.70), b tie -> e1 (.80), c e2 (.72), d e2 (.20, collapsed); best: .70 .80 .72 .40
    assert out.loc["entropy", "regret"] == pytest.approx(100 * (0.20 / 4))
    # guarded within d: epoch 2 predicts 1 < 0.5 x 4 classes -> epoch 1 (.40); no regret left
    assert out.loc["entropy_guarded", "regret"] == pytest.approx(0.0)


def test_summary_median_and_worst_over_search_seeds():
    table = pd.DataFrame({"task": ["P2H"] * 3, "experiment": ["s0", "s1", "s2"], "selection": ["hyperparameter"] * 3,
                          "validator": ["bnm"] * 3, "direction": ["max"] * 3, "n": [32] * 3, "picked_acc": [0.6, 0.5, 0.7],
                          "oracle_acc": [0.7] * 3, "regret": [10.0, 20.0, 0.0], "spearman": [0.1, 0.2, 0.3], "kendall": [0.0] * 3})
    row = S.summary(table).iloc[0]
    assert (row.regret_median, row.regret_worst, row.experiments) == (10.0, 20.0, 3)
    assert row.spearman == pytest.approx(0.2)
    assert "| P2H | hyperparameter | bnm | 3 | 10.0 | 20.0 | 0.20 | 0.00 |" in S.to_markdown(S.summary(table))


def test_task_tables_put_both_selections_side_by_side():
    frames = [({"task": "P2H", "name": f"s{i}", "validator_directions": DIRS}, _collapse_frame()) for i in range(2)]
    text = S.task_tables(S.summary(S.selection_table(frames)))
    assert text.startswith("**P2H** (2 experiments;")
    lines = text.splitlines()
    # hyperparameter regret of entropy 55 (collapsed pick), epoch regret 5 (d's collapsed last epoch)
    assert "| entropy | 55.0 | 55.0 |" in text and any(line.startswith("| entropy |") and line.endswith("| 5.0 | 5.0 |") for line in lines)
    assert any(line.startswith("| last_epoch |  |  |  |  |") for line in lines)  # an epoch-only selector
    rows = [line.split(" | ")[0].strip("| ") for line in lines if line.startswith("| ") and not line.startswith("| selector")]
    assert rows.index("entropy_guarded") < rows.index("entropy")  # sorted by the hyperparameter median


def test_recipe_regret_is_its_selectors_hyperparameter_row():
    frames = [({"task": "P2H", "name": f"s{i}", "validator_directions": DIRS}, _collapse_frame()) for i in range(2)]
    table = S.selection_table(frames)
    recipe = S.Recipe(selector="entropy_guarded", lines=("pick by guarded entropy",))
    regret = S.recipe_regret(table, recipe)
    assert regret["regret"].tolist() == pytest.approx([3.0, 3.0]) and regret["experiment"].tolist() == ["s0", "s1"]
    text = S.recipe_markdown(table, recipe)
    assert "| P2H | 3.0 | 3.0 | s0 3.0 (72.0 vs 75.0 %), s1 3.0 (72.0 vs 75.0 %) |" in text
    assert S.recipe_markdown(table, S.Recipe(selector="bnm", lines=())) == ""  # not recorded: nothing to say
    from ssot.results.metrics import EPOCH_VALIDATORS

    assert S.RECIPE.selector in EPOCH_VALIDATORS  # the recipe searches with --metric on it: a per-epoch validator
