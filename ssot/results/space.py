"""The search space: which config fields a search draws and how, as plain specs written into
``experiment.json``, and as Optuna distributions.

A space is a dict ``{config_field: spec}``; a spec is one of::

    {"type": "loguniform", "low": 1e-3, "high": 10.0}
    {"type": "uniform", "low": 0.0, "high": 1.0}
    {"type": "choice", "values": [64, 128, 256, 512, 1024]}
    {"type": "grid", "values": [1e-3, 1e-2, 1e-1, 1.0, 10.0]}
    {"type": "fixed", "value": 1.0}

The one owner of the spec: ``tune`` builds and checks a search's space here (:func:`validate_space`
where it enters), samples it through :func:`optuna_space` (a grid through :func:`grid_points`); ``analysis`` reads it back from
``experiment.json`` with the same rule for a bad spec (:func:`check_spec`) and turns it into the
distributions its importance evaluators need (:func:`distribution`, widened to the values
observed). No torch, no Ray; Optuna is imported only to build
distributions. Any field of :class:`ssot.config.SSOTConfig` may be searched; the command line
exposes the four of the paper.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any, TypeGuard

from ssot.errors import ConfigError

Spec = dict[str, Any]
Space = dict[str, Spec]

#: The kinds of spec (the ``type`` of each entry of ``experiment.json``'s ``space``).
KINDS: tuple[str, ...] = ("loguniform", "uniform", "choice", "grid", "fixed")
#: The kinds drawn from a range ``[low, high]``, and the kinds that list their ``values``.
RANGES: tuple[str, ...] = ("loguniform", "uniform")
LISTS: tuple[str, ...] = ("choice", "grid")

#: The paper's grid of lambda_OT and lambda_Ent, and the potential-net widths searched by default.
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


# ------------------------------------------------------------------------------------ the rule of a spec
def _number(value: Any) -> TypeGuard[float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def check_spec(name: str, spec: Any) -> Spec:
    """``spec`` if it is a well-formed spec of field ``name``: the one rule for a bad spec, for
    the search that writes it and the analysis that reads it back.

    A range has numbers ``low < high`` (``0 < low`` on a log scale); a choice or a grid a
    non-empty list of ``values``; a fixed spec a ``value``.

    Raises
    ------
    ConfigError
        One line naming the field, the rule and what it got.
    """
    if not isinstance(spec, Mapping):
        raise ConfigError(f"The spec of '{name}' must be an object with a 'type'. Got {spec!r} instead.")
    kind = spec.get("type")
    if kind not in KINDS:
        raise ConfigError(f"The spec type of '{name}' must be one of {', '.join(KINDS)}. Got {kind!r} instead.")
    if kind in RANGES:
        low, high = spec.get("low"), spec.get("high")
        floor = "0 < " if kind == "loguniform" else ""
        if not (_number(low) and _number(high) and low < high and (kind != "loguniform" or low > 0)):
            raise ConfigError(f"The range of '{name}' must satisfy {floor}low < high. Got low={low!r}, high={high!r} instead.")
    elif kind in LISTS:
        values = spec.get("values")
        if not isinstance(values, list) or not values:
            raise ConfigError(f"The values of '{name}' must be a non-empty list. Got {values!r} instead.")
    elif "value" not in spec:
        raise ConfigError(f"The fixed spec of '{name}' must have a 'value'. Got {dict(spec)!r} instead.")
    return dict(spec)


def validate_space(space: Mapping[str, Any]) -> None:
    """A search's space where it enters: every key a config field, every spec well-formed
    (:func:`check_spec`), every value it can draw a valid config; errors name the field and value."""
    from ssot.config import CONFIG_FIELDS, SSOTConfig

    for name, spec in space.items():
        if name not in CONFIG_FIELDS:
            raise ConfigError(f"Search space field '{name}' is not a config field. Valid fields: {', '.join(CONFIG_FIELDS)}.")
        check_spec(name, spec)
        for value in _examples(spec):  # every value must make a valid config
            SSOTConfig().replace(**{name: value})


def _examples(spec: Spec) -> list[Any]:
    if spec["type"] in RANGES:
        return [spec["low"], spec["high"]]
    if spec["type"] == "fixed":
        return [spec["value"]]
    return list(spec["values"])


def is_grid(space: Space) -> bool:
    return any(spec["type"] == "grid" for spec in space.values())


def fixed_values(space: Space) -> dict[str, Any]:
    return {k: s["value"] for k, s in space.items() if s["type"] == "fixed"}


def default_point(space: Space, base: Any) -> dict[str, Any]:
    """The default config ``base`` restricted to the sampled fields (evaluated first).

    A default outside a user-narrowed range is clipped into it, a categorical default not in
    the choices is replaced by the nearest choice.
    """
    point: dict[str, Any] = {}
    for name, spec in space.items():
        value = getattr(base, name)
        if spec["type"] in RANGES:
            point[name] = min(max(float(value), spec["low"]), spec["high"])
        elif spec["type"] == "choice":
            values = list(spec["values"])
            point[name] = value if value in values else min(values, key=lambda v: abs(v - value) if isinstance(v, (int, float)) else 0)
    return point


# ------------------------------------------------------------------------------------ Optuna distributions
def distribution(spec: Spec, observed: Iterable[Any] = ()) -> Any:
    """The Optuna distribution of one spec, widened to cover the ``observed`` values (a search
    samples the spec's own range; the analysis fits on what its trials drew).

    A range becomes a ``FloatDistribution`` (``log=True`` for ``loguniform``); a choice a
    ``CategoricalDistribution``; a numeric grid a ``FloatDistribution`` over its values (log when
    they are positive and span more than a decade), so that an importance evaluator sees their
    order, and any other grid a ``CategoricalDistribution``. A fixed spec, or a range without
    width, gives None.
    """
    import optuna.distributions as od

    kind = spec["type"]
    if kind == "fixed":
        return None
    if kind == "choice":
        return od.CategoricalDistribution(list(spec["values"]))
    seen = [float(v) for v in observed if _number(v)]
    if kind == "grid":
        if not all(_number(v) for v in spec["values"]):
            return od.CategoricalDistribution(list(spec["values"]))
        points = [float(v) for v in spec["values"]] + seen
        low, high = min(points), max(points)
        log = low > 0 and high / low > 10
    else:
        low, high = min([float(spec["low"]), *seen]), max([float(spec["high"]), *seen])
        log = kind == "loguniform"
    if high <= low:
        return None
    return od.FloatDistribution(low, high, log=log)


def optuna_space(space: Space) -> dict[str, Any]:
    """The sampled part of ``space`` as Optuna distributions (the searcher's, the warm start's)."""
    out: dict[str, Any] = {}
    for name, spec in space.items():
        if spec["type"] == "grid":
            raise ConfigError(f"'{name}' has a grid spec; a grid is run with --search grid, not with a sampler.")
        dist = distribution(spec)
        if dist is not None:
            out[name] = dist
    return out


def grid_distributions(space: Space) -> dict[str, Any]:
    """The grid fields of ``space`` as Optuna distributions: a choice among the grid's values (the
    study of a ``--search grid``, which asks every cell in turn, :func:`grid_points`)."""
    import optuna.distributions as od

    return {name: od.CategoricalDistribution(list(spec["values"])) for name, spec in space.items() if spec["type"] == "grid"}


def grid_points(space: Space) -> list[dict[str, Any]]:
    """Every cell of the grid of ``space`` (the grid fields' values; the first field varies slowest)."""
    import itertools

    names = [name for name, spec in space.items() if spec["type"] == "grid"]
    return [dict(zip(names, cell)) for cell in itertools.product(*(space[name]["values"] for name in names))]
