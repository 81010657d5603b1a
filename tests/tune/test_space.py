"""`tune/space.py`: a grid space as Ray Tune's grid search."""
from __future__ import annotations

import pytest

from ssot.errors import ConfigError
from ssot.results import space as spaces
from tune.outputs import expected_trials
from tune.space import ray_grid_space


def test_the_paper_grid_is_a_5x5_ray_grid():
    grid = ray_grid_space(spaces.paper_grid_space())
    assert grid["lambda_ot"] == grid["lambda_ent"] == {"grid_search": [1e-3, 1e-2, 1e-1, 1.0, 10.0]}
    assert (grid["eps"], grid["potential_width"]) == (1.0, 256)  # fixed values pass through
    assert expected_trials({"space": spaces.paper_grid_space(), "num_samples": 2}) == 50
    assert expected_trials({"space": spaces.default_space(), "num_samples": 20}) == 20


def test_a_sampled_spec_is_not_a_grid():
    with pytest.raises(ConfigError, match="'eps' is sampled \\(loguniform\\); --search grid needs grid or fixed specs only"):
        ray_grid_space({"eps": {"type": "loguniform", "low": 0.1, "high": 1.0}})
