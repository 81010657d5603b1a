"""`tune/options.py` and `tune/cluster.py` without Ray: options checked where they enter, a trial's
CPU share, ASHA's state said truthfully, the range of Ray and Optuna versions CI tests."""
from __future__ import annotations

import math

import pytest

from ssot.errors import ConfigError
from tests.fixtures import REPO
from tune.cluster import cpu_share
from tune.experiment import early_stopping, search_meta
from tune.options import SearchOptions, base_config


@pytest.mark.parametrize("field, flag", [("gpus_per_trial", "--gpus-per-trial"), ("cpus_per_trial", "--cpus-per-trial")])
@pytest.mark.parametrize("value", [math.nan, math.inf, -1.0])
def test_resources_that_are_not_numbers_are_refused_naming_the_flag(field, flag, value):
    """NaN passed the check before (`nan > gpus` is False) and the search hung asking Ray for nan GPUs."""
    with pytest.raises(ConfigError, match=f"^{flag} must be a number"):
        SearchOptions(task="digits", **{field: value}).validate()


def test_a_population_gets_its_share_of_the_machine_and_an_ordinary_trial_one_cpu():
    one = SearchOptions(task="P2H", num_samples=16, population=16)
    assert cpu_share(one, None, 2) == (2.0, "the 2 CPUs shared by 1 population(s) at a time")
    four = SearchOptions(task="P2H", num_samples=64, population=16)
    assert cpu_share(four, None, 2)[0] == 1.0 and cpu_share(four, None, 8)[0] == 2.0
    assert cpu_share(SearchOptions(task="P2H", num_samples=64, population=16, max_concurrent=1), None, 8)[0] == 8.0
    assert cpu_share(SearchOptions(task="digits", num_samples=16), None, 2)[0] == 1.0  # one config per trial
    assert cpu_share(SearchOptions(task="digits", cpus_per_trial=3.0), None, 2) == (3.0, "--cpus-per-trial")
    assert cpu_share(one, "auto", None)[0] == 1.0  # a cluster's nodes are unknown before joining it
    # the share becomes the trials' torch threads
    assert base_config(SearchOptions(task="digits"), 2.0).num_threads == 2


def test_early_stopping_is_recorded_as_it_runs_not_as_it_was_asked():
    """--epochs 3 below the grace period: ASHA has no rung, so experiment.json says early_stop false."""
    short = SearchOptions(task="digits", base={"epochs": 3})
    rungs, line = early_stopping(short, 3)
    assert rungs == () and "off (3 epochs <= --grace-period 5" in line
    meta = search_meta(short, base_config(short), "/tmp/x/exp", rungs=rungs)
    assert meta["early_stop"] is False and meta["rungs"] == [] and meta["elapsed_s"] == 0.0
    rungs, line = early_stopping(SearchOptions(task="digits", grace_period=1, reduction_factor=2), 8)
    assert rungs == (1, 2, 4, 8) and "ASHA at epochs 1, 2, 4 (keeps the top 1/2" in line
    assert early_stopping(SearchOptions(task="digits", early_stop=False), 8) == ((), "early stopping: off (--no-early-stop)")
    inside = early_stopping(SearchOptions(task="P2H", population=4, grace_period=1), 4)[1]
    assert "inside each population" in inside


def test_pyproject_allows_a_range_of_ray_and_optuna_and_ci_tests_both_ends():
    """Issue 38: Ray through its public API over at least two minor versions, Optuna bounded to what
    is tested; .ci/run runs the resume, contract and warm-start tests on the lowest versions (the
    full suite runs on the highest, the default install)."""
    import tomllib
    from packaging.requirements import Requirement
    from packaging.version import Version

    wanted = {r.name: r.specifier for r in map(Requirement, tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"])}
    ci = (REPO / ".ci" / "run").read_text()
    bounds = {name: {s.operator: Version(s.version) for s in wanted[name]} for name in ("ray", "optuna")}
    for name, extra in (("ray", "[tune]"), ("optuna", "")):
        assert set(bounds[name]) == {">=", "<"}, wanted[name]
        assert f'"{name}{extra}=={bounds[name][">="]}.0"' in ci, bounds[name]  # CI installs the lowest allowed
    assert bounds["ray"]["<"].minor - bounds["ray"][">="].minor >= 2, wanted["ray"]  # two minor versions at least


def test_image_cache_auto_and_off_are_not_made_paths_but_a_cache_path_is():
    from pathlib import Path

    assert base_config(SearchOptions(task="A2W", base={"data_root": "/d"})).image_cache == "auto"
    assert base_config(SearchOptions(task="A2W", base={"data_root": "/d", "image_cache": "off"})).image_cache == "off"
    assert base_config(SearchOptions(task="A2W", base={"data_root": "/d", "image_cache": "c.ssotimg"})).image_cache == \
        str(Path("c.ssotimg").resolve())
