"""`analysis/data/importance.py`: two Optuna evaluators, and when they cannot run."""
from __future__ import annotations

from pathlib import Path

import pytest

from analysis.data.experiments import load_experiments
from analysis.data.frames import final_results, trial_table
from analysis.data.importance import MIN_TRIALS, importance_info, importance_infos
from analysis.data.views import experiment_views
from tests.fixtures.experiments import N_TRIALS, asha_experiment


def _by_task(experiments: list, task: str):
    return next(e for e in experiments if e.task == task)


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
    fanova, ped = importance_infos(chosen["epoch5"], experiment.space)
    for info in (fanova, ped):
        assert info.n_trials == N_TRIALS and info.note == ""
        assert max(info.importances, key=info.importances.get) == "lambda_ot", info
        assert sum(info.importances.values()) == pytest.approx(1.0)
    assert fanova.importances["lambda_ot"] > 0.8
    assert fanova.label.startswith("fANOVA") and ped.label.startswith("PED-ANOVA")
    # the final-epoch view has 3 trials: nothing is fitted, and the reason is given
    for info in importance_infos(chosen["final"], experiment.space):
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
