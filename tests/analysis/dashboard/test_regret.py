"""`analysis/dashboard/regret.py`: the dashboard's regret block."""
from __future__ import annotations

import pandas as pd


def test_dashboard_block_only_for_experiments_with_validators():
    from analysis.dashboard.regret import regret_html

    frame = pd.DataFrame({"trial_id": ["a", "a", "b", "b"], "epoch": [1, 2, 1, 2], "status": ["completed"] * 4,
                          "target_acc": [0.5, 0.6, 0.9, 0.8], "entropy": [0.3, 0.2, 0.5, 0.4]})
    block = regret_html({"validator_directions": {"entropy": "min"}}, frame)
    # entropy picks trial a (0.2 < 0.4): 60 % against the oracle's 80 %, 20 points of regret
    assert "<td>entropy</td><td>lower</td><td>2</td><td>60.0</td><td>80.0</td><td>20.0</td>" in block
    assert regret_html({}, frame) == ""
    # the block states the recommended recipe, its selector included
    from analysis.data.selection import RECIPE

    assert "Recommended label-free recipe" in block and f"--metric {RECIPE.selector}" in block
