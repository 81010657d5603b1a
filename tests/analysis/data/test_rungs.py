"""`analysis/data/rungs.py`: rank correlation between each rung and the last epoch, on constructed searches."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from analysis.data.frames import trial_table
from analysis.data.rungs import MIN_RUNG_TRIALS, rung_correlations, rungs_frame, strength
from tests.fixtures.experiments import TPE_SPACE, loaded, trial_rows, with_meta, write_experiment


def _search(folder: Path, finals: list[float], at_rung: list[float], *, asha: bool, stopped: int = 0):
    """Trials whose accuracy is ``at_rung`` at epochs 1 and 2 and ``finals`` at epoch 4, and
    ``stopped`` more trials ASHA stopped at epoch 2."""
    rows = []
    for i, (a, f) in enumerate(zip(at_rung, finals, strict=True)):
        config = {"lambda_ot": 0.1 * (i + 1), "lambda_ent": 1.0, "eps": 1.0, "potential_width": 256}
        rows += trial_rows("T", "tpe", f"t{i:02d}", config, [a, a, 0.5 * (a + f), f], "completed")
    for i in range(stopped):
        config = {"lambda_ot": 5.0 + i, "lambda_ent": 1.0, "eps": 1.0, "potential_width": 256}
        rows += trial_rows("T", "tpe", f"s{i:02d}", config, [0.1, 0.1], "early-stopped")
    write_experiment(folder, rows, task="T", search="tpe", space=TPE_SPACE, max_epochs=4, dataset="digits")
    if asha:
        with_meta(folder, early_stop=True, grace_period=1, reduction_factor=2)
    else:
        with_meta(folder, early_stop=False)
    experiment = loaded(folder)
    return experiment, trial_table(experiment)


def test_spearman_between_each_rung_and_the_last_epoch(tmp_path: Path) -> None:
    finals = [0.5, 0.6, 0.7, 0.8, 0.9, 0.95]
    experiment, table = _search(tmp_path / "a", finals, [0.9, 0.8, 0.7, 0.6, 0.5, 0.4], asha=True, stopped=3)
    correlations = rung_correlations(experiment, table)
    # ASHA with grace 1, factor 2 on 4 epochs: rungs 1 and 2 (4 is the last epoch)
    assert [(c.rung, c.final_epoch, c.n, c.asha) for c in correlations] == [(1, 4, 6, True), (2, 4, 6, True)]
    assert all(c.rho == pytest.approx(-1.0) and c.strength == "not given" and not c.very_strong for c in correlations)
    experiment, table = _search(tmp_path / "b", finals, [0.1, 0.3, 0.2, 0.5, 0.4, 0.6], asha=False)
    correlations = rung_correlations(experiment, table)
    # no early stopping: every epoch below the last
    assert [c.rung for c in correlations] == [1, 2, 3] and not any(c.asha for c in correlations)
    ranks_rung, ranks_final = np.array([1, 3, 2, 5, 4, 6]), np.arange(1, 7)
    expected = np.corrcoef(ranks_rung, ranks_final)[0, 1]
    assert correlations[0].rho == pytest.approx(expected) and correlations[0].very_strong and correlations[0].strength == "very strong"
    assert correlations[0].low < correlations[0].rho < correlations[0].high
    frame = rungs_frame({"T": correlations})
    assert frame["n"].tolist() == [6, 6, 6] and frame["strength"].iloc[0] == "very strong"


def test_too_few_trials_at_both_are_not_computed(tmp_path: Path) -> None:
    few = MIN_RUNG_TRIALS - 1
    experiment, table = _search(tmp_path, [0.1 * i for i in range(few)], [0.1 * i for i in range(few)], asha=True, stopped=5)
    correlations = rung_correlations(experiment, table)
    assert all(math.isnan(c.rho) and c.n == few and f"at least {MIN_RUNG_TRIALS} needed" in c.note for c in correlations)


def test_deepcaves_words() -> None:
    assert [strength(r) for r in (0.95, 0.7, 0.69, 0.4, 0.3, 0.2, 0.1, -0.5)] == [
        "very strong", "very strong", "strong", "strong", "moderate", "weak", "not given", "not given"]
    assert strength(float("nan")) == ""
