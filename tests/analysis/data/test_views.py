"""`analysis/data/views.py`: ASHA rungs, the views and the default one."""
from __future__ import annotations

from pathlib import Path

import pytest

from analysis.data.experiments import load_experiment
from analysis.data.frames import trial_table
from analysis.data.views import View, asha_rungs, default_view, epoch_results, experiment_views, view_results
from tests.fixtures.experiments import ASHA, EDGE_EPOCHS, EDGE_TRIALS, MAX_EPOCHS, N_COMPLETED, N_TRIALS, TPE_SPACE, asha_experiment, trial_rows, truth, write_experiment


def test_rungs_are_rays() -> None:
    async_hyperband = pytest.importorskip("ray.tune.schedulers.async_hyperband")
    for grace, factor, max_t in [(5, 3, 15), (1, 2, 8), (1, 10, 1000), (2, 3, 50), (1, 3, 27), (4, 4, 5)]:
        bracket = async_hyperband._Bracket(min_t=grace, max_t=max_t, reduction_factor=factor, s=0)
        expected = tuple(sorted(int(r) for r, _ in bracket._rungs))
        meta = {"early_stop": True, "grace_period": grace, "reduction_factor": factor, "max_epochs": max_t}
        assert asha_rungs(meta) == expected, (grace, factor, max_t)
    assert asha_rungs({"early_stop": False, "max_epochs": 15}) == ()
    assert asha_rungs({**ASHA, "max_epochs": 5}) == ()  # tune/ uses no scheduler then
    assert asha_rungs({"max_epochs": 15}) is None  # not recorded: the reader falls back


def test_a_view_per_rung_compares_every_trial_at_that_epoch(views_results: Path) -> None:
    experiment, table = asha_experiment(views_results)
    views, chosen = experiment_views(experiment, table)
    assert [(v.key, v.n_trials, v.epoch) for v in views] == [
        ("epoch5", N_TRIALS, 5), ("final", N_COMPLETED, MAX_EPOCHS), ("best", N_TRIALS, None)]
    at5 = chosen["epoch5"].set_index("trial_id")
    expected = {row["trial_id"]: truth(row["lambda_ot"]) for row in table.to_dict("records")}
    assert at5["acc"].to_dict() == pytest.approx(expected, abs=6e-5)  # csv rounds to 4 digits
    # the value at epoch 5, not the completed trials' final (+0.10) or best accuracy
    assert chosen["best"].set_index("trial_id")["acc"].max() == pytest.approx(at5["acc"].max() + 0.10, abs=1e-4)
    assert default_view(views, len(table)) == "epoch5"
    with pytest.raises(ValueError, match="'view' parameter"):
        view_results(experiment, table, "epoch")


def test_default_view_rule() -> None:
    def views(*counts: tuple[str, int]) -> list[View]:
        return [View(key, key, n) for key, n in counts] + [View("best", "best", 99)]

    assert default_view(views(("epoch1", 20), ("epoch3", 10), ("final", 3)), 20) == "epoch3"
    assert default_view(views(("epoch1", 20), ("epoch3", 12), ("final", 10)), 20) == "final"
    assert default_view(views(("epoch1", 8), ("epoch3", 2), ("final", 1)), 20) == "epoch1"
    assert default_view(views(("final", 1)), 20) == "final"  # no rung: not an ASHA search


def test_old_folders_take_the_rungs_where_trials_stopped(tmp_path: Path) -> None:
    rows = [row for trial_id, ot, ent, eps, width, accuracies, status in EDGE_TRIALS
            for row in trial_rows("A2D", "tpe", trial_id, {"lambda_ot": ot, "lambda_ent": ent, "eps": eps,
                                  "potential_width": width}, accuracies, status)]
    folder = write_experiment(tmp_path / "tpe" / "A2D", rows, task="A2D", search="tpe", space=TPE_SPACE,
                              max_epochs=EDGE_EPOCHS, dataset="office31")  # no scheduler recorded
    experiment, _ = load_experiment(folder)
    table = trial_table(experiment)
    views, chosen = experiment_views(experiment, table)
    assert [v.key for v in views] == ["epoch2", "final", "best"]  # t4 was stopped after epoch 2
    # every trial that recorded epoch 2, whatever happened later; t5's placeholder epoch 2 is no
    # accuracy, and t6 errored after epoch 1
    assert sorted(chosen["epoch2"]["trial_id"]) == ["t0", "t1", "t2", "t3", "t4"]
    assert epoch_results(experiment, table, 1)["trial_id"].nunique() == 7
