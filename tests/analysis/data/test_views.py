"""`analysis/data/views.py`: ASHA rungs, the views and the default one."""
from __future__ import annotations

from pathlib import Path

import pytest

from analysis.data.frames import trial_table
from analysis.data.views import (
    View,
    asha_rungs,
    default_view,
    epoch_results,
    experiment_views,
    view_results,
)
from tests.fixtures.experiments import (
    ASHA,
    EDGE_EPOCHS,
    EDGE_TRIALS,
    MAX_EPOCHS,
    N_COMPLETED,
    N_TRIALS,
    TPE_SPACE,
    asha_experiment,
    loaded,
    trial_rows,
    truth,
    with_meta,
    write_experiment,
)


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
    assert default_view(views) == "final"  # the tables' view, though only 3 trials reached it
    with pytest.raises(ValueError, match="'view' parameter"):
        view_results(experiment, table, "epoch")


def test_default_view_is_the_final_epoch_unless_no_trial_reached_it() -> None:
    def views(*counts: tuple[str, int]) -> list[View]:
        return [View(key, key, n) for key, n in counts] + [View("best", "best", 99)]

    assert default_view(views(("epoch1", 20), ("epoch3", 10), ("final", 3))) == "final"
    assert default_view(views(("epoch1", 20), ("epoch3", 12), ("final", 1))) == "final"
    assert default_view(views(("final", 1))) == "final"  # no rung: not an ASHA search
    # a search still running whose trials have not reached the last epoch: its highest rung with trials
    assert default_view(views(("epoch1", 8), ("epoch3", 2), ("final", 0))) == "epoch3"
    assert default_view(views(("epoch1", 0), ("final", 0))) == "best"


def _rung_experiment(tmp_path: Path, at: dict[int, list[float]], stopped: int = 1) -> Path:
    """Six completed trials with the given accuracy per epoch (epochs 1, 2 and 4: rungs at 1 and 2,
    grace 1, factor 2, 4 epochs) and ``stopped`` trials cut at epoch 2 (they never reach the end)."""
    rows = []
    for i in range(6):
        curve = [at[1][i], at[2][i], 0.5, at[4][i]]
        rows += trial_rows("A2D", "tpe", f"t{i}", {"lambda_ot": 10.0 ** -i, "lambda_ent": 1.0, "eps": 1.0,
                                                   "potential_width": 64}, curve, "completed")
    for j in range(stopped):
        rows += trial_rows("A2D", "tpe", f"s{j}", {"lambda_ot": 1.0, "lambda_ent": 1.0, "eps": 1.0,
                                                   "potential_width": 64}, [0.9, 0.9], "early-stopped")
    folder = write_experiment(tmp_path / "tpe" / "A2D", rows, task="A2D", search="tpe", space=TPE_SPACE,
                              max_epochs=4, dataset="office31")
    return with_meta(folder, early_stop=True, grace_period=1, reduction_factor=2)


def test_rung_correlation_against_a_known_spearman(tmp_path: Path) -> None:
    """The dashboard's block and the atlas share analysis.data.rungs: checked here on a search
    whose ASHA rungs rank six trials in a known order."""
    from analysis.data.rungs import rung_correlations, strength

    # epoch 2 ranks the six trials 1..6, the final epoch 2 1 4 3 6 5: every rank moves by one,
    # rho = 1 - 6 * sum(d^2) / (n (n^2 - 1)) = 1 - 36 / 210; epoch 1 ranks them in reverse
    at = {2: [0.1, 0.2, 0.3, 0.4, 0.5, 0.6], 4: [0.2, 0.1, 0.4, 0.3, 0.6, 0.5], 1: [0.6, 0.5, 0.4, 0.3, 0.2, 0.1]}
    experiment = loaded(_rung_experiment(tmp_path, at))
    rows = rung_correlations(experiment, trial_table(experiment))
    assert [c.rung for c in rows if c.asha] == [1, 2] and [c.n for c in rows] == [6, 6]  # the stopped trial is in neither
    assert [c.rho for c in rows] == pytest.approx([-(1 - 36 / 210), 1 - 36 / 210])
    assert all(c.low <= c.rho <= c.high for c in rows)
    assert strength(1 - 36 / 210) == "very strong" and [strength(r) for r in (0.5, 0.35, 0.25, 0.1)] == [
        "strong", "moderate", "weak", "not given"]


def test_old_folders_take_the_rungs_where_trials_stopped(tmp_path: Path) -> None:
    rows = [row for trial_id, ot, ent, eps, width, accuracies, status in EDGE_TRIALS
            for row in trial_rows("A2D", "tpe", trial_id, {"lambda_ot": ot, "lambda_ent": ent, "eps": eps,
                                  "potential_width": width}, accuracies, status)]
    folder = write_experiment(tmp_path / "tpe" / "A2D", rows, task="A2D", search="tpe", space=TPE_SPACE,
                              max_epochs=EDGE_EPOCHS, dataset="office31")  # no scheduler recorded
    experiment = loaded(folder)
    table = trial_table(experiment)
    views, chosen = experiment_views(experiment, table)
    assert [v.key for v in views] == ["epoch2", "final", "best"]  # t4 was stopped after epoch 2
    # every trial that recorded epoch 2, whatever happened later; t5's placeholder epoch 2 is no
    # accuracy, and t6 errored after epoch 1
    assert sorted(chosen["epoch2"]["trial_id"]) == ["t0", "t1", "t2", "t3", "t4"]
    assert epoch_results(experiment, table, 1)["trial_id"].nunique() == 7
