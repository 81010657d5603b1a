"""`analysis/data/proxy.py`: a screen's ranking against end-to-end accuracies of the same configs."""
from __future__ import annotations

import math

import numpy as np
import pytest

from analysis.data.proxy import kendall_tau_b, proxy_info, spearman, summary_table
from ssot.results.experiment import read_experiment
from tests.fixtures.experiments import TPE_SPACE, trial_rows, write_experiment

#: (lambda_ot, width) of five configs and their end-to-end final accuracies.
CONFIGS = [(0.001, 64), (0.01, 128), (0.1, 256), (1.0, 512), (10.0, 1024)]
TRUE = [0.50, 0.90, 0.70, 0.80, 0.60]


def config(i: int) -> dict:
    return {"lambda_ot": CONFIGS[i][0], "lambda_ent": 0.5, "eps": 1.0, "potential_width": CONFIGS[i][1]}


def reference(folder):
    rows = [r for i, acc in enumerate(TRUE) for r in trial_rows("P2H", "random", f"r{i}", config(i), [0.3, acc], "completed")]
    return read_experiment(write_experiment(folder, rows, task="P2H", search="random", space=TPE_SPACE, max_epochs=2))


def screen(folder, finals, statuses=None, ids=None):
    """A 3-epoch screen of the same configs in another order (ids), with final values ``finals``."""
    rows = []
    for i, final in enumerate(finals):
        status = (statuses or ["completed"] * 5)[i]
        curve = {"completed": [0.2, 0.3, final], "early-stopped": [final], "diverged": [0.2, 0.0]}[status]
        rows += trial_rows("P2H", "tpe", (ids or [f"s{4 - i}" for i in range(5)])[i], config(i), curve, status)
    return read_experiment(write_experiment(folder, rows, task="P2H", search="tpe", space=TPE_SPACE, max_epochs=3,
                                            extra={"configs_from": {"path": "e2e/P2H"}}))


def test_rank_correlations_match_scipy_with_ties():
    stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(0)
    x, y = rng.integers(0, 5, 30).astype(float), rng.normal(size=30)
    y[:5] = y[5]  # ties on both sides
    assert spearman(x, y) == pytest.approx(stats.spearmanr(x, y).statistic, abs=1e-12)
    assert kendall_tau_b(x, y) == pytest.approx(stats.kendalltau(x, y).statistic, abs=1e-12)
    assert math.isnan(spearman([1, 1, 1], [1, 2, 3])) and math.isnan(kendall_tau_b([1], [2]))


def test_a_perfect_screen_has_correlation_one_and_no_regret(tmp_path):
    info = proxy_info(screen(tmp_path / "s", [v / 2 for v in TRUE]), reference(tmp_path / "r"))
    assert info.n == 5 and info.unmatched == 0 and info.spearman == pytest.approx(1) and info.kendall == pytest.approx(1)
    assert info.regret == {1: 0.0, 3: 0.0, 5: 0.0} and info.best_acc == 0.9
    assert info.random_regret == pytest.approx(100 * (0.9 - np.mean(TRUE)))
    assert list(info.pairs["reference_trial"]) == ["r1", "r3", "r2", "r4", "r0"]  # the screen's order, matched by config


def test_regret_of_the_screens_top_k_and_its_order_with_rungs_and_divergence(tmp_path):
    # screen finals: config 0 best (true 0.50), config 4 second (0.60), config 1 (true 0.90) stopped at a rung,
    # config 3 diverged: ranked last whatever its placeholder
    finals = [0.9, 0.8, 0.1, 0.95, 0.7]
    statuses = ["completed", "early-stopped", "completed", "diverged", "completed"]
    info = proxy_info(screen(tmp_path / "s", finals, statuses), reference(tmp_path / "r"))
    assert list(info.pairs["reference_trial"]) == ["r0", "r4", "r2", "r1", "r3"]
    assert info.regret[1] == pytest.approx(40.0) and info.regret[3] == pytest.approx(20.0) and info.regret[5] == pytest.approx(0.0)
    expected = [5, 4, 3, 2, 1]  # the screen's order as a score
    assert info.spearman == pytest.approx(spearman(expected, [0.5, 0.6, 0.7, 0.9, 0.8]))


def test_unmatched_configs_are_counted_and_seeds_are_averaged(tmp_path):
    ref = reference(tmp_path / "r")
    partial = screen(tmp_path / "s", [v / 2 for v in TRUE])
    partial.trials.loc[partial.trials["trial_id"] == "s4", "lambda_ot"] = 0.5  # a config the reference never ran
    info = proxy_info(partial, ref)
    assert info.n == 4 and info.unmatched == 2
    table = summary_table([info, proxy_info(screen(tmp_path / "t", [v / 2 for v in TRUE]), ref)])
    mean = table[table["screen"] == "mean"].iloc[0]
    assert mean["n"] == 4.5 and mean["spearman"] == pytest.approx(1.0) and mean["reference"] == "2 screens"
