"""`tune/replay.py` and the search's refusals around populations and replays (no Ray started)."""
from __future__ import annotations

import pytest

from ssot.errors import ConfigError, ResultsError
from tests.fixtures.experiments import TPE_SPACE, trial_rows, write_experiment
from tune.experiment import run_search
from tune.options import SearchOptions
from tune.replay import read_reference


def test_a_reference_gives_its_configs_in_trial_order_with_their_types(tmp_path):
    rows = [r for tid, lam, width in (("t1", 0.5, 128), ("t0", 0.01, 64)) for r in trial_rows(
        "P2H", "random", tid, {"lambda_ot": lam, "lambda_ent": 1.0, "eps": 0.1, "potential_width": width}, [0.5, 0.6], "completed")]
    folder = write_experiment(tmp_path / "e2e" / "P2H", rows, task="P2H", search="random", space=TPE_SPACE, max_epochs=2)
    reference = read_reference(str(folder), "P2H")
    assert reference.configs == [{"lambda_ot": 0.01, "lambda_ent": 1.0, "eps": 0.1, "potential_width": 64},
                                 {"lambda_ot": 0.5, "lambda_ent": 1.0, "eps": 0.1, "potential_width": 128}]
    assert isinstance(reference.configs[0]["potential_width"], int) and reference.space == TPE_SPACE
    assert reference.meta()["n_configs"] == 2 and reference.meta()["path"] == str(folder)
    with pytest.raises(ResultsError, match="holds a search of task 'P2H', not 'H2P'"):
        read_reference(str(folder), "H2P")
    with pytest.raises(ResultsError, match="no readable experiment there"):
        read_reference(str(tmp_path / "nothing"), "P2H")
    import json

    meta = json.loads((folder / "experiment.json").read_text())
    (folder / "experiment.json").write_text(json.dumps({**meta, "status": "running"}))
    with pytest.raises(ResultsError, match=r"--configs-from .*Pass a finished search"):
        read_reference(str(folder), "P2H")


def test_populations_need_a_cache_and_a_sampler_and_are_refused_before_ray_starts(tmp_path):
    with pytest.raises(ConfigError, match="--population trains configs on a feature cache; pass --features"):
        run_search(SearchOptions(task="digits", population=4, storage_path=str(tmp_path / "r")))
    with pytest.raises(ConfigError, match="--population screens sampled configs: use --search tpe or random"):
        SearchOptions(task="digits", population=4, search="grid", space={}).validate()
    with pytest.raises(ConfigError, match="--population must be an int >= 1"):
        SearchOptions(task="digits", population=0).validate()
    assert not (tmp_path / "r" / "ssot-digits").exists()
