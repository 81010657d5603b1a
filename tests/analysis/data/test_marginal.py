"""`analysis/data/marginal.py`: partial dependence follows the truth."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from analysis.data.importance import MIN_TRIALS
from analysis.data.marginal import marginal_infos
from analysis.data.views import experiment_views
from tests.fixtures.experiments import N_TRIALS, asha_experiment, truth


def test_marginal_effect_follows_the_truth(views_results: Path) -> None:
    experiment, table = asha_experiment(views_results)
    _, chosen = experiment_views(experiment, table)
    infos = {i.param: i for i in marginal_infos(chosen["epoch5"], experiment.space)}
    assert set(infos) == {"lambda_ot", "lambda_ent", "eps", "potential_width"}
    effect = infos["lambda_ot"]
    assert effect.kind == "log" and effect.n_trials == N_TRIALS and effect.note == ""
    grid = np.asarray(effect.grid)
    truths = np.array([truth(x) for x in grid])
    inside = (grid >= effect.trial_values.min()) & (grid <= effect.trial_values.max())
    assert np.corrcoef(effect.estimate[inside], truths[inside])[0, 1] > 0.95
    assert np.abs(effect.estimate[inside] - truths[inside]).max() < 0.05
    assert np.all(np.diff(effect.estimate) >= -0.01)  # monotone up to forest noise
    spread = np.ptp(effect.estimate)
    for other in ("lambda_ent", "eps", "potential_width"):
        assert np.ptp(infos[other].estimate) < spread / 3, other
    few = marginal_infos(chosen["final"], experiment.space)
    assert all(len(i.estimate) == 0 and f"at least {MIN_TRIALS}" in i.note for i in few)


def test_a_categorical_axis_keeps_its_order_without_an_estimate(views_results: Path) -> None:
    from analysis.charts.marginal import marginal_figure

    experiment, table = asha_experiment(views_results)
    _, chosen = experiment_views(experiment, table)
    few = {i.param: i for i in marginal_infos(chosen["final"], experiment.space)}  # 3 trials: no estimate
    assert few["potential_width"].grid == [64, 128, 256, 512, 1024] and len(few["potential_width"].estimate) == 0
    layout = marginal_figure(list(few.values()), "final").to_plotly_json()["layout"]
    axis = next(a for a in layout.values() if isinstance(a, dict) and a.get("type") == "category")
    assert axis["categoryarray"] == ["64", "128", "256", "512", "1024"]  # not the trials' order (1024 before 256)
