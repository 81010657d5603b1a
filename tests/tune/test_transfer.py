"""`python tune/transfer.py`: each task's best config replayed on every task, through the Ray runner (tune/runner.py)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from ssot.results.discovery import read_experiments
from ssot.results.transfer import CSV_NAME, DEFAULT_SOURCE, MANIFEST_FILE, MARKDOWN_NAME, read_transfer, run_path
from tests.fixtures.experiments import write_atlas_results
from tune import transfer

TASKS = ("digits", "H2P")


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("transfer") / "results"
    write_atlas_results(root, TASKS, n_trials=3, max_epochs=1)
    return root


def finished(results: Path) -> dict[str, Any]:
    """The finished searches under ``results`` by task (each with its ``meta`` and ``best_config``)."""
    searches = {s.task: s for s in read_experiments(results)}
    assert all(s.meta is not None and s.best_config is not None for s in searches.values())
    return searches


def test_a_replay_is_the_targets_setting_with_the_sources_values(results: Path) -> None:
    searches = finished(results)
    sources = {s.name: s for s in transfer.sources_of(list(searches.values()))}
    assert sorted(sources) == sorted([*TASKS, DEFAULT_SOURCE]) and list(sources)[-1] == DEFAULT_SOURCE
    best = searches["digits"].best_config
    assert sources["digits"].values == {p: best[p] for p in ("lambda_ot", "lambda_ent", "eps", "potential_width")}
    assert sources[DEFAULT_SOURCE].values == {"lambda_ot": 1.0, "lambda_ent": 1.0, "eps": 1.0, "potential_width": 256}
    config = transfer.replay_config(searches["H2P"], sources["digits"], seed=7)
    base = searches["H2P"].meta["base_config"]
    assert (config.task, config.seed, config.epochs, config.iters_per_epoch) == ("H2P", 7, base["epochs"], base["iters_per_epoch"])
    assert config.lambda_ot == pytest.approx(best["lambda_ot"]) and config.potential_width == best["potential_width"]


def test_transfer_replays_resumes_and_never_overwrites(results: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "transfer"
    args = [str(results), "--out", str(out), "--seeds", "0", "--num-cpus", "2", "--no-default"]  # the default's row: above
    assert transfer.main(args) == 0
    printed = capsys.readouterr().out
    sources = list(TASKS)
    for target in TASKS:
        for source in sources:
            record = json.loads(run_path(out, target, source, 0).read_text())
            assert record["config"]["task"] == target and record["config"]["seed"] == 0 and record["status"] == "completed"
    table = pd.read_csv(out / CSV_NAME)
    assert len(table) == len(TASKS) * len(sources) and set(table["n_seeds"]) == {1}
    diagonal = table[table["source"] == table["target"]]
    assert diagonal["loss"].tolist() == [0.0, 0.0]
    row = table[(table["source"] == "digits") & (table["target"] == "H2P")].iloc[0]
    own = json.loads(run_path(out, "H2P", "H2P", 0).read_text())["epochs"][-1]["target_acc"]
    replay = json.loads(run_path(out, "H2P", "digits", 0).read_text())["epochs"][-1]["target_acc"]
    assert row["loss"] == pytest.approx(100 * (own - replay))
    manifest = read_transfer(out)
    assert manifest.problems == [] and manifest.seeds == [0] and sorted(manifest.targets) == sorted(TASKS)
    assert "| digits | H2P | 0 |" in (out / MARKDOWN_NAME).read_text() and "wrote" in printed
    # a second run refuses to overwrite the tables, before any work
    assert transfer.main(args) == 2
    err = capsys.readouterr().err
    assert "transfer.csv already exists" in err and len(err.strip().splitlines()) == 1
    # interrupted before the tables: the same command trains only the missing replay
    for name in (CSV_NAME, MARKDOWN_NAME, MANIFEST_FILE):
        (out / name).unlink()
    run_path(out, "digits", "H2P", 0).unlink()
    assert transfer.main(args) == 0
    log = capsys.readouterr().out
    assert log.count("[reused ") == len(TASKS) * len(sources) - 1 and log.count(", wrote ") == 1
    assert pd.read_csv(out / CSV_NAME)["loss"].tolist()[:2] == table["loss"].tolist()[:2]
    assert not run_path(out, "digits", DEFAULT_SOURCE, 0).exists()


def test_bad_input_is_refused_before_any_run(results: Path, tmp_path: Path, capsys) -> None:
    inside = results / "atlas" / "digits" / "transfer"
    assert transfer.main([str(results), "--out", str(inside), "--seeds", "0"]) == 2
    assert "is inside the search" in capsys.readouterr().err and not inside.exists()
    assert transfer.main([str(results / "atlas" / "digits"), "--out", str(tmp_path / "o")]) == 2
    assert "at least 2 tasks" in capsys.readouterr().err
    assert transfer.main([str(results), "--out", str(tmp_path / "o"), "--seeds", "0", "0"]) == 2
    assert "repeated seeds" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_on_a_feature_cache_screen_a_replay_is_a_screen_on_the_targets_cache(results: Path) -> None:
    from ssot.config import SSOTConfig
    from ssot.results.experiment import Experiment

    searches = finished(results)
    screens = {}
    for task, search in searches.items():  # the same searches, as screens on each task's own cache
        base = SSOTConfig.for_task(task, backbone="features", features_path=f"/caches/{task}.pt").to_dict()
        screens[task] = Experiment(search.path, {**search.meta, "base_config": base}, search.trials, search.best_config)
    source = next(s for s in transfer.sources_of(list(screens.values())) if s.name == "digits")
    config = transfer.replay_config(screens["H2P"], source, seed=0)
    assert (config.task, config.backbone, config.features_path) == ("H2P", "features", "/caches/H2P.pt")
    assert config.lambda_ot == pytest.approx(searches["digits"].best_config["lambda_ot"])
