"""`analysis/data/warmstart.py`: trials needed and regrets of cold and warm searches, on known trials."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from analysis.data.warmstart import best_so_far, compare
from ssot.results.experiment import read_experiment
from tests.fixtures.experiments import TPE_SPACE, trial_rows, write_experiment

CONFIG = {"lambda_ot": 1.0, "lambda_ent": 1.0, "eps": 1.0, "potential_width": 256}


def _search(folder, finals: list[tuple[float, str]]):
    """A 2-epoch search whose trial i (proposed i-th) ends with ``finals[i]``: (accuracy, status)."""
    rows = [r for i, (acc, status) in enumerate(finals)
            for r in trial_rows("P2H", "tpe", f"p{i // 2:02d}-m{i % 2:02d}-r", {**CONFIG, "lambda_ot": 0.1 + i},
                                [acc - 0.1] if status == "early-stopped" else [acc - 0.1, acc], status)]
    return read_experiment(write_experiment(folder, rows, task="P2H", search="tpe", space=TPE_SPACE, max_epochs=2))


def test_trials_needed_and_regrets_in_proposal_order(tmp_path):
    # cold: its best (0.80) at trial 4; an early-stopped trial finds nothing whatever its value
    cold = _search(tmp_path / "cold" / "P2H", [(0.5, "completed"), (0.95, "early-stopped"), (0.6, "completed"),
                                              (0.80, "completed"), (0.7, "completed")])
    warm = _search(tmp_path / "warm" / "P2H", [(0.795, "completed"), (0.6, "completed")])
    never = _search(tmp_path / "never" / "P2H", [(0.3, "completed"), (0.2, "early-stopped"), (0.7, "completed")])
    assert np.allclose(best_so_far(cold), [0.5, 0.5, 0.6, 0.8, 0.8])
    assert np.allclose(best_so_far(never), [0.3, 0.3, 0.7])
    result = compare({("P2H", 0): cold, ("P2H", 1): cold}, {("P2H", 0): warm, ("P2H", 1): never}, at=(1, 3))
    table = result.table.set_index(["seed", "kind"])
    assert table.loc[(0, "cold"), "trials_needed"] == 4 and table.loc[(0, "warm"), "trials_needed"] == 1  # within 1 point
    assert abs(table.loc[(0, "cold"), "regret@1"] - 30.0) < 1e-9 and abs(table.loc[(0, "cold"), "regret@3"] - 20.0) < 1e-9
    assert abs(table.loc[(0, "warm"), "regret@1"] - 0.5) < 1e-9 and math.isnan(table.loc[(0, "warm"), "regret@3"])  # 2 trials only
    assert pd.isna(table.loc[(1, "warm"), "trials_needed"])  # never within 1 point (censored)
    summary = result.summary().set_index("kind")
    assert summary.loc["warm", "reached"] == 1 and summary.loc["warm", "median_trials_needed"] == (1 + 4) / 2  # 3 + 1 counted
    assert np.allclose(result.curves[("P2H", 0, "cold")], [30, 30, 20, 0, 0])
    from analysis.mpl.warmstart import regret_figure

    figure = regret_figure(result)  # one panel per task, a line per search and the means
    assert [ax.get_title() for ax in figure.axes if ax.get_visible()] == ["P2H"] and len(figure.axes[0].lines) == 2 + 2 + 2 + 1
