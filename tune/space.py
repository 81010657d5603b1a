"""The search space: the ranges of the search (below), as plain specs, Optuna distributions or a grid's cells.

A space is a dict ``{config_field: spec}``; a spec is one of::

    {"type": "loguniform", "low": 1e-3, "high": 10.0}
    {"type": "choice", "values": [64, 128, 256, 512, 1024]}
    {"type": "grid", "values": [1e-3, 1e-2, 1e-1, 1.0, 10.0]}
    {"type": "fixed", "value": 1.0}

The same dict is written to ``experiment.json`` so that the dashboards know the axes.
Any field of :class:`ssot.config.SSOTConfig` may be searched; the command line exposes the four
of the paper.
"""
from __future__ import annotations

import math
from typing import Any

from ssot.config import CONFIG_FIELDS, SSOTConfig
from ssot.errors import ConfigError

Spec = dict[str, Any]
Space = dict[str, Spec]

PAPER_GRID = [1e-3, 1e-2, 1e-1, 1.0, 10.0]
WIDTHS = [64, 128, 256, 512, 1024]


def default_space() -> Space:
    """The default space: lambdas log-uniform on [1e-3, 10] (around the paper's grid {1e-3, ..., 10}), eps on [1e-2, 10], width in 64..1024."""
    return {
        "lambda_ot": {"type": "loguniform", "low": 1e-3, "high": 10.0},
        "lambda_ent": {"type": "loguniform", "low": 1e-3, "high": 10.0},
        "eps": {"type": "loguniform", "low": 1e-2, "high": 10.0},
        "potential_width": {"type": "choice", "values": list(WIDTHS)},
    }


def paper_grid_space(eps: float = 1.0, potential_width: int = 256) -> Space:
    """The paper's sensitivity grid: lambda_OT x lambda_Ent in {1e-3, ..., 10}, eps and width fixed."""
    return {
        "lambda_ot": {"type": "grid", "values": list(PAPER_GRID)},
        "lambda_ent": {"type": "grid", "values": list(PAPER_GRID)},
        "eps": {"type": "fixed", "value": float(eps)},
        "potential_width": {"type": "fixed", "value": int(potential_width)},
    }


def validate_space(space: Space) -> None:
    """Every key is a config field, every spec well-formed; errors name the field and value."""
    for name, spec in space.items():
        if name not in CONFIG_FIELDS:
            raise ConfigError(f"Search space field '{name}' is not a config field. Valid fields: {', '.join(CONFIG_FIELDS)}.")
        kind = spec.get("type")
        if kind == "loguniform":
            low, high = spec.get("low"), spec.get("high")
            if not (isinstance(low, (int, float)) and isinstance(high, (int, float)) and 0 < low < high and math.isfinite(high)):
                raise ConfigError(f"The range of '{name}' must satisfy 0 < low < high. Got low={low!r}, high={high!r} instead.")
        elif kind in ("choice", "grid"):
            if not spec.get("values"):
                raise ConfigError(f"The values of '{name}' must be a non-empty list. Got {spec.get('values')!r} instead.")
        elif kind != "fixed":
            raise ConfigError(f"The spec type of '{name}' must be loguniform, choice, grid or fixed. Got {kind!r} instead.")
        for value in _examples(spec):  # every value must make a valid config
            SSOTConfig().replace(**{name: value})


def _examples(spec: Spec) -> list[Any]:
    if spec["type"] == "loguniform":
        return [spec["low"], spec["high"]]
    if spec["type"] == "fixed":
        return [spec["value"]]
    return list(spec["values"])


def is_grid(space: Space) -> bool:
    return any(spec["type"] == "grid" for spec in space.values())


def fixed_values(space: Space) -> dict[str, Any]:
    return {k: s["value"] for k, s in space.items() if s["type"] == "fixed"}


def optuna_space(space: Space) -> dict[str, Any]:
    """The sampled part of ``space`` as Optuna distributions (the search's study, :mod:`tune.record`)."""
    import optuna.distributions as od

    out: dict[str, Any] = {}
    for name, spec in space.items():
        if spec["type"] == "loguniform":
            out[name] = od.FloatDistribution(float(spec["low"]), float(spec["high"]), log=True)
        elif spec["type"] == "choice":
            out[name] = od.CategoricalDistribution(list(spec["values"]))
        elif spec["type"] == "grid":
            raise ConfigError(f"'{name}' has a grid spec; a grid is run with --search grid, not with a sampler.")
    return out


def grid_distributions(space: Space) -> dict[str, Any]:
    """The grid fields of ``space`` as Optuna distributions (a choice among the grid's values)."""
    import optuna.distributions as od

    return {name: od.CategoricalDistribution(list(spec["values"])) for name, spec in space.items() if spec["type"] == "grid"}


def grid_points(space: Space) -> list[dict[str, Any]]:
    """Every cell of the grid of ``space`` (the grid fields' values; the first field varies slowest)."""
    import itertools

    names = [name for name, spec in space.items() if spec["type"] == "grid"]
    return [dict(zip(names, cell)) for cell in itertools.product(*(space[name]["values"] for name in names))]


def default_point(space: Space, base: SSOTConfig) -> dict[str, Any]:
    """The paper's default config restricted to the sampled fields (evaluated first).

    A default outside a user-narrowed range is clipped into it, a categorical default not in
    the choices is replaced by the nearest choice.
    """
    point: dict[str, Any] = {}
    for name, spec in space.items():
        value = getattr(base, name)
        if spec["type"] == "loguniform":
            point[name] = min(max(float(value), spec["low"]), spec["high"])
        elif spec["type"] == "choice":
            values = list(spec["values"])
            point[name] = value if value in values else min(values, key=lambda v: abs(v - value) if isinstance(v, (int, float)) else 0)
    return point
