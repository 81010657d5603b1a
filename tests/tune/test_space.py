"""`tune/space.py`: the search space."""
from __future__ import annotations

from tune import space as spaces


def test_paper_grid_space_is_the_5x5_grid():
    from tune.outputs import expected_trials

    grid = spaces.paper_grid_space()
    assert expected_trials({"space": grid, "num_samples": 2}) == 50
    assert expected_trials({"space": spaces.default_space(), "num_samples": 20}) == 20
    assert grid["lambda_ot"]["values"] == grid["lambda_ent"]["values"] == [1e-3, 1e-2, 1e-1, 1.0, 10.0]
    assert grid["eps"] == {"type": "fixed", "value": 1.0}
