"""`analysis/data/importance.py`: two Optuna evaluators, and when they cannot run."""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from analysis.data.experiments import ParamSpec, load_experiments
from analysis.data.frames import final_results, trial_table
from analysis.data.importance import (
    MIN_TRIALS,
    ImportanceInfo,
    bootstrap_importances,
    importance_disagreement,
    importance_info,
    importance_infos,
    ped_anova_evaluator,
)
from analysis.data.views import experiment_views
from tests.fixtures.experiments import N_TRIALS, asha_experiment


def test_importance_uses_optuna_and_explains_when_it_cannot(edge_results: Path) -> None:
    experiments, _ = load_experiments(edge_results)
    grid = next(e for e in experiments if e.search == "grid")
    res = final_results(trial_table(grid), "final")
    info = importance_info(res, grid.space)
    assert set(info.importances) == {"lambda_ot", "lambda_ent"}
    assert sum(info.importances.values()) == pytest.approx(1.0)
    assert info.importances["lambda_ot"] > info.importances["lambda_ent"]
    assert info.evaluator == "FanovaImportanceEvaluator" and info.note == ""
    few = importance_info(res.head(1), grid.space)
    assert few.importances == {} and f"at least {MIN_TRIALS} trials" in few.note


def test_both_evaluators_find_the_one_hyperparameter_that_matters(views_results: Path) -> None:
    experiment, table = asha_experiment(views_results)
    views, chosen = experiment_views(experiment, table)
    fanova, ped = importance_infos(chosen["epoch5"], experiment.space, n_boot=0)
    for info in (fanova, ped):
        assert info.n_trials == N_TRIALS and info.note == ""
        assert max(info.importances, key=lambda p: info.importances[p]) == "lambda_ot", info
        assert sum(info.importances.values()) == pytest.approx(1.0)
    assert fanova.importances["lambda_ot"] > 0.8
    assert fanova.label.startswith("fANOVA") and ped.label.startswith("PED-ANOVA")
    # the final-epoch view has 3 trials: nothing is fitted, and the reason is given
    for info in importance_infos(chosen["final"], experiment.space, n_boot=0):
        assert info.importances == {} and f"at least {MIN_TRIALS} trials" in info.note


def test_the_spread_of_importances_over_tasks() -> None:
    import numpy as np

    from analysis.data.importance import ImportanceInfo, importance_frame, importance_spread

    def pair(ot: float, n: int) -> tuple[ImportanceInfo, ImportanceInfo]:
        return (ImportanceInfo({"lambda_ot": ot, "eps": 1 - ot}, n, "F", label="fANOVA"),
                ImportanceInfo({"eps": 0.5, "lambda_ot": 0.5}, n, "P", label="PED"))

    infos = {"A": pair(0.9, 20), "B": pair(0.2, 30), "C": pair(0.5, 12), "D": (ImportanceInfo({}, 4, "F", "too few"),) * 2}
    frame = importance_frame(infos, order=["lambda_ot", "eps"])
    assert frame.loc[frame["task"] == "A", "param"].tolist() == ["lambda_ot", "eps", "lambda_ot", "eps"]  # the space's order
    assert frame.loc[frame["task"] == "D", ["param", "note", "n_trials"]].values.tolist() == [["", "too few", 4]] * 2
    spread = importance_spread(frame).set_index(["evaluator", "param"])
    ot = spread.loc[("fANOVA", "lambda_ot")]
    values = np.array([0.9, 0.2, 0.5])
    assert ot["n_tasks"] == 3 and ot["median"] == pytest.approx(0.5) and ot["min"] == 0.2 and ot["max"] == 0.9
    assert (ot["q1"], ot["q3"]) == pytest.approx(tuple(np.percentile(values, [25, 75])))
    assert ot["tasks"] == ["A", "C", "B"]  # most important first
    assert spread.loc[("PED-ANOVA", "eps"), "median"] == pytest.approx(0.5)


def _one_parameter_matters(n: int, seed: int = 0) -> tuple[pd.DataFrame, dict]:
    """``n`` random configs whose accuracy depends on lambda_OT alone (plus noise)."""
    space: dict[str, Any] = {p: ParamSpec(p, "log", low, 10.0) for p, low in (("lambda_ot", 1e-3), ("lambda_ent", 1e-3), ("eps", 1e-2))}
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({p: 10 ** rng.uniform(math.log10(s.low), math.log10(s.high), n) for p, s in space.items()})
    frame["acc"] = 0.6 + 0.05 * np.log10(frame["lambda_ot"]) + rng.normal(0, 0.02, n)
    return frame, space


@pytest.mark.parametrize("evaluator", ["fanova", "ped-anova"])
def test_bootstrap_intervals_hold_the_estimate_and_narrow_with_more_trials(evaluator: str) -> None:
    widths = []
    for n in (12, 48):
        frame, space = _one_parameter_matters(n)
        chosen = None if evaluator == "fanova" else ped_anova_evaluator(n)[0]
        info = importance_info(frame, space, chosen, n_boot=20 if evaluator == "fanova" else 40, seed=1)
        assert info.top == "lambda_ot" and info.n_boot >= 10 and set(info.intervals) == set(info.importances)
        for param, (low, high) in info.intervals.items():
            assert 0 <= low <= info.importances[param] <= high <= 1, (n, param, info)
        widths.append(info.intervals["lambda_ot"][1] - info.intervals["lambda_ot"][0])
    assert widths[1] < 0.75 * widths[0], widths


def test_bootstrap_is_seeded_and_resamples_the_trials() -> None:
    frame, space = _one_parameter_matters(15)
    evaluator = ped_anova_evaluator(15)[0]
    first = bootstrap_importances(frame, space, evaluator, n_boot=8, seed=3)
    assert first.equals(bootstrap_importances(frame, space, evaluator, n_boot=8, seed=3))
    assert not first.equals(bootstrap_importances(frame, space, evaluator, n_boot=8, seed=4))
    assert first.shape == (8, 3) and np.allclose(first.sum(axis=1), 1.0)
    assert first["lambda_ot"].nunique() > 1  # each resample is another set of trials
    assert bootstrap_importances(frame.iloc[:0], space, evaluator, n_boot=3).empty
    with pytest.raises(ValueError, match="'n_boot' parameter"):
        bootstrap_importances(frame, space, evaluator, n_boot=-1)


def test_a_note_says_when_the_two_methods_disagree() -> None:
    def info(importances: dict[str, float], intervals: dict[str, tuple[float, float]], label: str) -> ImportanceInfo:
        return ImportanceInfo(importances, 20, label, label=label, intervals=intervals, n_boot=200)

    fanova = info({"lambda_ot": 0.88, "lambda_ent": 0.12}, {"lambda_ot": (0.7, 0.95), "lambda_ent": (0.02, 0.3)},
                  "fANOVA (random forest, seed 0)")
    ped = info({"lambda_ent": 0.55, "lambda_ot": 0.45}, {"lambda_ot": (0.2, 0.6), "lambda_ent": (0.4, 0.8)},
               "PED-ANOVA (top 25 % vs all)")
    note = importance_disagreement(fanova, ped)
    assert "fANOVA ranks lambda_ot 0.88 [0.70, 0.95] first, PED-ANOVA lambda_ent 0.55 [0.40, 0.80]" in note
    assert "do not overlap for lambda_ot" in note and "lambda_ent (fANOVA 0.12 [0.02, 0.30], PED-ANOVA" in note
    assert "answer different questions" in note and "not the chance of which trials were run" in note
    # same top, overlapping intervals: no note; same top but apart on one parameter: a note
    close = info({"lambda_ot": 0.8, "lambda_ent": 0.2}, {"lambda_ot": (0.5, 0.9), "lambda_ent": (0.1, 0.5)}, "PED-ANOVA")
    assert importance_disagreement(fanova, close) == ""
    apart = info({"lambda_ot": 0.6, "lambda_ent": 0.4}, {"lambda_ot": (0.5, 0.65), "lambda_ent": (0.35, 0.5)}, "PED-ANOVA")
    assert "do not overlap for lambda_ot" in importance_disagreement(fanova, apart)
    # the top differs but the intervals overlap: the data do not say which matters most
    unsure = info({"lambda_ent": 0.5, "lambda_ot": 0.5}, {"lambda_ot": (0.3, 0.8), "lambda_ent": (0.2, 0.7)}, "PED-ANOVA")
    assert "with 20 trials the data do not say" in importance_disagreement(fanova, unsure)
    assert importance_disagreement(fanova, ImportanceInfo({}, 3, "PED", "too few")) == ""
