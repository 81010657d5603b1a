"""`tune/warmstart.py`: a search started from other tasks' finished searches (no Ray started)."""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

optuna = pytest.importorskip("optuna")

from ssot.errors import SSOTError  # noqa: E402
from ssot.results import space as spaces  # noqa: E402
from tests.fixtures.experiments import TPE_SPACE, write_atlas_results  # noqa: E402
from tune import search, warmstart  # noqa: E402
from tune.experiment import open_record, run_search, search_meta  # noqa: E402
from tune.options import SearchOptions, base_config  # noqa: E402

DEFAULT = {"lambda_ot": 1.0, "lambda_ent": 1.0, "eps": 1.0, "potential_width": 256}


@pytest.fixture(scope="module")
def sources(tmp_path_factory):
    """Finished random searches of P2H (lambda_OT best near 0.01), H2P and digits (near 1), 20 trials each."""
    return {task: str(folder) for task, folder in write_atlas_results(tmp_path_factory.mktemp("src"), n_trials=20).items()}


def test_the_source_bests_are_asked_first_in_order_then_the_default_and_recorded(sources, tmp_path):
    read = warmstart.read_sources([sources["P2H"], sources["H2P"], sources["digits"]], "S2H", TPE_SPACE)
    for source in read:  # each best is its search's best trial; full-budget trials split by its own ranking
        table = json.loads((Path(source.path) / "experiment.json").read_text())
        assert source.best_trial == table["best_trial"] and (len(source.good), len(source.bad)) == (2, 18)
    options = SearchOptions(task="S2H", population=4, num_samples=8, warm_start=list(sources.values()))
    base = base_config(SearchOptions(task="S2H"))
    meta = search_meta(options, base, "/r/ssot-S2H", warm_start=[s.meta() for s in read])
    record = open_record(options, base, str(tmp_path / "S2H"), {**meta, "population": 4}, None, read)
    assert isinstance(record.sampler(4), warmstart.WarmStartSampler)
    assert list(record.next().members.values()) == [s.best for s in read] + [DEFAULT]
    assert all(set(c) == set(DEFAULT) for c in record.next().members.values())  # then sampled
    assert [s["path"] for s in meta["warm_start"]] == [sources["P2H"], sources["H2P"], sources["digits"]]
    assert [s["task"] for s in meta["warm_start"]] == ["P2H", "H2P", "digits"] and meta["warm_start"][0]["n_good"] == 2
    # a best equal to an earlier one (or to the default) is asked once
    read[1].best = dict(read[0].best)
    assert warmstart.first_points(read, DEFAULT) == [read[0].best, read[2].best, DEFAULT]
    assert warmstart.first_points(read[:1], read[0].best) == [read[0].best]


def test_the_sampler_proposes_from_the_sources_good_region_and_weighs_them_by_similarity(sources):
    p2h, h2p = warmstart.read_sources([sources["P2H"], sources["H2P"]], "S2H", TPE_SPACE)
    space = spaces.optuna_space(TPE_SPACE)
    sampler = warmstart.WarmStartSampler([p2h], space, seed=0)
    study = optuna.create_study(direction="maximize", sampler=sampler)
    proposed = [study.ask(space).params["lambda_ot"] for _ in range(20)]
    # before any target result: in P2H's good region (its best configs: lambda_OT 0.002 and 0.1), not log-uniform on
    # [1e-3, 10] (median 0.1, a quarter of the draws above 1)
    assert max(c["lambda_ot"] for c in p2h.good) <= 0.2
    assert np.median(np.log10(proposed)) < -1.75 and np.mean(np.asarray(proposed) <= 0.2) >= 0.9, sorted(proposed)
    # target results that rank as P2H's do (peak at 0.01) and against H2P's (peak at 1)
    sampler = warmstart.WarmStartSampler([p2h, h2p], space, seed=0)
    study = optuna.create_study(direction="maximize", sampler=sampler)
    pruned, done = optuna.trial.TrialState.PRUNED, optuna.trial.TrialState.COMPLETE
    for lam, state in ((0.001, done), (0.003, pruned), (0.01, done), (0.03, pruned), (0.3, pruned), (3.0, done)):
        value = -(math.log10(lam) + 2) ** 2  # ranked at epoch 1, which every trial reached (ASHA stopped 3 there)
        study.add_trial(optuna.trial.create_trial(params={**DEFAULT, "lambda_ot": lam}, distributions=space,
                                                  intermediate_values={1: value} if state == pruned else {1: value, 2: 5.0},
                                                  value=None if state == pruned else 5.0, state=state))
    weights = sampler.similarities(study)
    assert weights[0] > 0.2 and weights[1] == 0.0  # P2H ranks them as they are, H2P against (dropped)


def _refused(argv, capsys) -> str:
    assert search.main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("error: --warm-start")
    return err


def test_bad_sources_are_refused_in_one_line_before_ray_starts(sources, tmp_path, capsys):
    out = ["--storage-path", str(tmp_path / "r"), "--num-cpus", "1"]
    assert "no readable experiment there" in _refused(["--task", "S2H", "--warm-start", str(tmp_path / "none"), *out], capsys)
    assert "the task this search is for" in _refused(["--task", "P2H", "--warm-start", sources["P2H"], *out], capsys)
    assert "differs in lambda_ot" in _refused(["--task", "S2H", "--lambda-ot-range", "0.01", "1",
                                               "--warm-start", sources["P2H"], *out], capsys)
    assert "twice" in _refused(["--task", "S2H", "--warm-start", sources["P2H"], sources["P2H"], *out], capsys)
    folder = Path(sources["digits"])
    info = json.loads((folder / "experiment.json").read_text())
    (folder / "experiment.json").write_text(json.dumps({**info, "status": "running"}))
    try:
        assert "not 'finished'" in _refused(["--task", "S2H", "--warm-start", sources["digits"], *out], capsys)
    finally:
        (folder / "experiment.json").write_text(json.dumps(info))
    assert search.main(["--task", "S2H", "--search", "random", "--warm-start", sources["P2H"], *out]) == 2
    assert "--warm-start informs TPE" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()  # nothing written


def test_a_resume_with_other_sources_is_refused_in_one_line(sources, tmp_path, capsys):
    options = SearchOptions(task="S2H", storage_path=str(tmp_path), warm_start=[sources["P2H"]], verbose=0)
    read = warmstart.read_sources(options.warm_start, "S2H", TPE_SPACE)
    folder = tmp_path / "ssot-S2H" / "S2H"
    folder.mkdir(parents=True)
    meta = search_meta(options, base_config(options), str(tmp_path / "ssot-S2H"), warm_start=[s.meta() for s in read])
    (folder / "experiment.json").write_text(json.dumps(meta))
    with pytest.raises(SSOTError) as exc:
        run_search(SearchOptions(task="S2H", storage_path=str(tmp_path), warm_start=[sources["H2P"]], resume=True, verbose=0))
    message = str(exc.value)
    assert f"--warm-start {sources['H2P']} (the experiment's: {sources['P2H']})" in message and "\n" not in message
    with pytest.raises(SSOTError, match=r"--warm-start \(none\)"):
        run_search(SearchOptions(task="S2H", storage_path=str(tmp_path), resume=True, verbose=0))
