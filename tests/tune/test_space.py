"""A grid search's cells (:func:`ssot.results.space.grid_points`) and how many trials a space makes."""
from __future__ import annotations

import itertools

import pytest

from ssot.errors import ConfigError
from ssot.results import space as spaces
from tune.outputs import expected_trials


def test_the_paper_grid_is_every_cell_of_5x5_once_the_first_field_slowest():
    grid = spaces.paper_grid_space()
    points = spaces.grid_points(grid)
    wanted = [{"lambda_ot": a, "lambda_ent": b} for a, b in itertools.product(spaces.PAPER_GRID, spaces.PAPER_GRID)]
    assert points == wanted and len(points) == 25
    assert spaces.fixed_values(grid) == {"eps": 1.0, "potential_width": 256}  # fixed values are not cells
    dists = spaces.grid_distributions(grid)
    assert set(dists) == {"lambda_ot", "lambda_ent"} and all(d.choices == tuple(spaces.PAPER_GRID) for d in dists.values())
    assert expected_trials({"space": grid, "num_samples": 2}) == 50
    assert expected_trials({"space": spaces.default_space(), "num_samples": 20}) == 20


def test_a_grid_is_not_sampled():
    with pytest.raises(ConfigError, match="'lambda_ot' has a grid spec; a grid is run with --search grid"):
        spaces.optuna_space(spaces.paper_grid_space())
