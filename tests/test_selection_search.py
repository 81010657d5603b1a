"""Searching on a label-free validator: direction, best config, recorded metric, refusals."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest

from ssot.config import SSOTConfig
from ssot.errors import ConfigError
from ssot.validators import DIRECTIONS
from ssot.results.trials import best_trial, trial_table
from tune.experiment import SearchOptions, run_search

QUICK = {"epochs": 2, "pretrain_epochs": 1, "iters_per_epoch": 4}


def test_best_completed_trial_follows_the_direction():
    frame = pd.DataFrame({"trial_id": ["a", "a", "b", "b", "c"], "epoch": [1, 2, 1, 2, 1],
                          "status": ["completed"] * 4 + ["early-stopped"], "target_acc": [0.5] * 5,
                          "entropy": [0.1, 0.9, 0.5, 0.4, 0.0], "snd": [9.0, 1.0, 0.0, 2.0, 50.0],
                          "mixval": [math.nan] * 5})
    table = trial_table(frame, max_epochs=2)

    def best(name: str) -> tuple[str | None, float]:
        row = best_trial(table, name)
        return (None, math.nan) if row is None else (row["trial_id"], row[name])

    assert best("entropy") == ("b", 0.4)  # final epochs only, completed only, lower is better
    assert best("snd") == ("b", 2.0)
    assert best("mixval")[0] is None


def test_unknown_metric_is_refused_with_the_choices():
    with pytest.raises(ConfigError, match="'metric' parameter must be one of target_acc, source_acc"):
        SearchOptions(task="digits", metric="accuracy").validate()


def test_search_on_a_min_validator_records_the_metric_and_picks_by_it(tmp_path):
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        options = SearchOptions(task="digits", num_samples=3, base=QUICK, storage_path=str(tmp_path), name="entropy",
                                early_stop=False, max_concurrent=2, verbose=0, metric="entropy")
        outcome = run_search(options)
    finally:
        ray.shutdown()
    info = json.loads((Path(outcome.path) / "experiment.json").read_text())
    assert info["metric"] == "entropy" and info["mode"] == "min" and info["validator_directions"] == DIRECTIONS
    last = outcome.trials.sort_values("epoch").groupby("trial_id").tail(1)
    assert (last["status"] == "completed").all()
    assert last["target_acc"].between(0, 1).all() and last["snd"].notna().all()  # the oracle is still recorded
    preds = last["target_pred"].map(lambda s: [int(v) for v in s.split()])
    assert preds.map(len).nunique() == 1 and preds.map(len).iloc[0] > 0
    best = SSOTConfig.from_json(Path(outcome.path) / "best_config.json")
    top = last.loc[last["entropy"].idxmin()]
    assert best.lambda_ot == pytest.approx(top["lambda_ot"]) and best.eps == pytest.approx(top["eps"])
    assert math.isfinite(top["entropy"])
    from analysis.dashboard import build_dashboard

    page = build_dashboard(tmp_path, out=tmp_path / "dashboard.html", images=False).path.read_text()
    assert "Label-free selection: regret against the oracle" in page and "<td>entropy</td>" in page
