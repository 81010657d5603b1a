"""`tune/options.py` and `tune/cluster.py` without Ray: options checked where they enter, a trial's
CPU share, ASHA's state said truthfully, the supported Ray versions."""
from __future__ import annotations

import math

import pytest

from ssot.errors import ConfigError, SSOTError
from tune.cluster import check_ray_version, cpu_share, supported_ray
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


def test_only_the_ray_versions_pyproject_allows_are_accepted():
    import ray

    allowed = supported_ray()
    assert allowed and "2.61" in allowed  # the range of pyproject.toml, read from the installed project
    check_ray_version(ray.__version__)  # the installed one is supported
    for version in ("2.9.0", "2.59.1", "2.61.0", "3.0.0"):
        with pytest.raises(SSOTError, match=rf"^Ray {version} is installed, but .*pip install 'ray\[tune\]"):
            check_ray_version(version)


def test_image_cache_auto_and_off_are_not_made_paths_but_a_cache_path_is():
    from pathlib import Path

    assert base_config(SearchOptions(task="A2W", base={"data_root": "/d"})).image_cache == "auto"
    assert base_config(SearchOptions(task="A2W", base={"data_root": "/d", "image_cache": "off"})).image_cache == "off"
    assert base_config(SearchOptions(task="A2W", base={"data_root": "/d", "image_cache": "c.ssotimg"})).image_cache == \
        str(Path("c.ssotimg").resolve())
