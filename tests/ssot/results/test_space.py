"""`ssot/results/space.py`: the search space's specs, the one rule for a bad spec, Optuna distributions."""
from __future__ import annotations

import json

import optuna.distributions as od
import pytest

from ssot.config import SSOTConfig
from ssot.errors import ConfigError
from ssot.results import space as spaces


def test_the_default_space_and_the_paper_grid():
    grid = spaces.paper_grid_space()
    assert grid["lambda_ot"]["values"] == grid["lambda_ent"]["values"] == [1e-3, 1e-2, 1e-1, 1.0, 10.0]
    assert grid["eps"] == {"type": "fixed", "value": 1.0} and grid["potential_width"] == {"type": "fixed", "value": 256}
    assert spaces.is_grid(grid) and not spaces.is_grid(spaces.default_space())
    assert spaces.fixed_values(grid) == {"eps": 1.0, "potential_width": 256}
    for space in (grid, spaces.default_space()):
        spaces.validate_space(space)
        assert json.loads(json.dumps(space)) == space  # what experiment.json holds, read back the same


@pytest.mark.parametrize(("spec", "message"), [
    ({"type": "normal"}, "The spec type of 'eps' must be one of loguniform, uniform, choice, grid, fixed. Got 'normal' instead."),
    ([1, 2], "The spec of 'eps' must be an object with a 'type'. Got \\[1, 2\\] instead."),
    ({"type": "loguniform", "low": 0, "high": 1}, "The range of 'eps' must satisfy 0 < low < high. Got low=0, high=1 instead."),
    ({"type": "loguniform", "low": 1.0, "high": 0.1}, "must satisfy 0 < low < high. Got low=1.0, high=0.1"),  # never swapped
    ({"type": "loguniform", "low": 0.1}, "Got low=0.1, high=None"),
    ({"type": "loguniform", "low": 0.1, "high": float("inf")}, "Got low=0.1, high=inf"),
    ({"type": "loguniform", "low": "0.1", "high": 1}, "Got low='0.1', high=1"),
    ({"type": "uniform", "low": 2, "high": 2}, "The range of 'eps' must satisfy low < high. Got low=2, high=2 instead."),
    ({"type": "choice", "values": []}, "The values of 'eps' must be a non-empty list. Got \\[\\] instead."),
    ({"type": "grid", "values": "1 2"}, "The values of 'eps' must be a non-empty list. Got '1 2' instead."),
    ({"type": "fixed"}, "The fixed spec of 'eps' must have a 'value'."),
])
def test_one_rule_for_a_bad_spec(spec, message):
    with pytest.raises(ConfigError, match=message):
        spaces.check_spec("eps", spec)
    with pytest.raises(ConfigError, match=message):
        spaces.validate_space({"eps": spec})


def test_a_space_where_it_enters_names_fields_and_values_of_the_config():
    with pytest.raises(ConfigError, match="'lambda_OT' is not a config field"):
        spaces.validate_space({"lambda_OT": {"type": "fixed", "value": 1}})
    with pytest.raises(ConfigError, match="eps"):  # a value the config refuses
        spaces.validate_space({"eps": {"type": "choice", "values": [1.0, -1.0]}})
    spaces.validate_space({"eps": {"type": "uniform", "low": 0.5, "high": 2.0}})


def test_the_default_point_is_clipped_into_a_narrowed_space():
    base = SSOTConfig()
    space = {"lambda_ot": {"type": "loguniform", "low": 2.0, "high": 5.0}, "eps": {"type": "uniform", "low": 0.1, "high": 0.5},
             "potential_width": {"type": "choice", "values": [64, 1024]}, "lambda_ent": {"type": "fixed", "value": 0.3}}
    assert (base.lambda_ot, base.eps, base.potential_width) == (1.0, 1.0, 256)  # the paper's defaults
    assert spaces.default_point(space, base) == {"lambda_ot": 2.0, "eps": 0.5, "potential_width": 64}  # the nearest choice


def test_distributions_of_each_kind():
    log = spaces.distribution({"type": "loguniform", "low": 1e-3, "high": 10.0})
    assert log == od.FloatDistribution(1e-3, 10.0, log=True)
    assert spaces.distribution({"type": "loguniform", "low": 1e-3, "high": 10.0}, [20.0, 1e-4, float("nan"), "x"]) == \
        od.FloatDistribution(1e-4, 20.0, log=True)  # widened to what the trials drew
    assert spaces.distribution({"type": "uniform", "low": 0.0, "high": 1.0}) == od.FloatDistribution(0.0, 1.0)
    assert spaces.distribution({"type": "choice", "values": [64, 128]}) == od.CategoricalDistribution([64, 128])
    assert spaces.distribution({"type": "grid", "values": [1e-3, 1e-2, 1.0]}) == od.FloatDistribution(1e-3, 1.0, log=True)
    assert spaces.distribution({"type": "grid", "values": [1, 2, 3]}) == od.FloatDistribution(1.0, 3.0)  # within a decade
    assert spaces.distribution({"type": "grid", "values": ["a", "b"]}) == od.CategoricalDistribution(["a", "b"])
    assert spaces.distribution({"type": "fixed", "value": 1.0}) is None
    assert spaces.distribution({"type": "grid", "values": [2.0]}) is None  # no width


def test_the_sampled_space_for_optuna():
    sampled = spaces.optuna_space(spaces.default_space())
    assert sampled == {"lambda_ot": od.FloatDistribution(1e-3, 10.0, log=True), "lambda_ent": od.FloatDistribution(1e-3, 10.0, log=True),
                       "eps": od.FloatDistribution(1e-2, 10.0, log=True),
                       "potential_width": od.CategoricalDistribution([64, 128, 256, 512, 1024])}
    assert "eps" not in spaces.optuna_space({"eps": {"type": "fixed", "value": 1.0}})
    with pytest.raises(ConfigError, match="'lambda_ot' has a grid spec"):
        spaces.optuna_space(spaces.paper_grid_space())
