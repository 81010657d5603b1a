"""`ssot/results/metrics.py`: the one metric registry."""
from __future__ import annotations

import pandas as pd
import pytest

from ssot import validators as V
from ssot.results import trials as trial_model
from ssot.results.metrics import METRIC_COLUMNS, REPORTED_METRICS, metric


def test_metrics_are_data_with_a_direction_and_the_trainable_reports_them():
    assert metric("target_acc").direction == "max" and metric("target_acc").label == "oracle"
    assert metric("loss_total").direction == "min"
    assert "source_only_target_acc" in METRIC_COLUMNS and "source_only_target_acc" not in REPORTED_METRICS
    with pytest.raises(ValueError, match="The 'metric' parameter must be one of"):
        metric("accuracy")
    table = pd.DataFrame({"trial_id": ["b", "a", "c"], "loss_total": [0.5, 0.5, 0.7], "reached_final": [True] * 3})
    assert list(trial_model.ranked_trials(table, "loss_total")["trial_id"]) == ["a", "b", "c"]  # lower is better; ties by id


def test_registry_directions():
    assert set(V.EPOCH_VALIDATORS) <= set(V.DIRECTIONS)
    assert set(V.DIRECTIONS.values()) == {"max", "min"}
    assert V.DIRECTIONS["entropy"] == "min" and V.DIRECTIONS["dev"] == "min" and V.DIRECTIONS["snd"] == "max"
    assert "target_acc" not in V.LABEL_FREE


def test_the_validators_take_their_names_and_directions_from_the_registry():
    """One registry: ssot/validators.py computes the scores, the registry (torch-free) names them,
    and experiment.json records exactly these directions."""
    from ssot.results import metrics
    from ssot.results.trials import trial_columns

    assert V.DIRECTIONS is metrics.DIRECTIONS and V.EPOCH_VALIDATORS is metrics.EPOCH_VALIDATORS
    assert metrics.DIRECTIONS == {"target_acc": "max", "source_acc": "max", "entropy": "min", "snd": "max", "im": "max",
                                  "im_pda": "max", "bnm": "max", "dev": "min", "mixval": "max", "mixval_inter": "max",
                                  "mixval_intra": "max", "ensv": "max"}
    assert metrics.EPOCH_VALIDATORS == ("source_acc", "entropy", "snd", "im", "im_pda", "bnm", "dev", "mixval",
                                        "mixval_inter", "mixval_intra")
    assert metrics.SEARCH_METRICS == ("target_acc", *metrics.EPOCH_VALIDATORS) and "ensv" not in metrics.METRIC_COLUMNS
    assert set(metrics.EPOCH_VALIDATORS) <= set(trial_columns(["lambda_ot"])) and "target_pred" in trial_columns(["lambda_ot"])


def test_a_diverged_run_reports_a_finite_worst_value():
    from ssot.results.metrics import worst_value

    assert [worst_value(n) for n in ("target_acc", "source_acc", "mixval", "mixval_inter", "mixval_intra")] == [0.0] * 5
    assert (worst_value("entropy"), worst_value("dev"), worst_value("snd"), worst_value("im"), worst_value("loss_total")) == (
        1e3, 1e3, -1e3, -1e3, 1e3)
