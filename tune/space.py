"""A grid space as Ray Tune's ``grid_search`` (``--search grid``): the one part of the search space
that needs Ray. The space itself, its specs, their checks and their Optuna distributions are
:mod:`ssot.results.space`.
"""
from __future__ import annotations

from typing import Any

from ssot.errors import ConfigError
from ssot.results.space import Space


def ray_grid_space(space: Space) -> dict[str, Any]:
    """The grid part of ``space`` as Ray ``grid_search`` entries (fixed values pass through)."""
    from ray import tune

    out: dict[str, Any] = {}
    for name, spec in space.items():
        if spec["type"] == "grid":
            out[name] = tune.grid_search(list(spec["values"]))
        elif spec["type"] == "fixed":
            out[name] = spec["value"]
        else:
            raise ConfigError(f"'{name}' is sampled ({spec['type']}); --search grid needs grid or fixed specs only.")
    return out
