"""`analysis/data/effects.py`: Spearman's rho of each hyperparameter with accuracy, against brute force."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from analysis.data.effects import MIN_EFFECT_TRIALS, Z95, effects_frame, rank_interval, signed_effects
from analysis.data.experiments import ParamSpec

SPACE = {"lambda_ot": ParamSpec("lambda_ot", "log", 1e-3, 10.0), "lambda_ent": ParamSpec("lambda_ent", "log", 1e-3, 10.0),
         "potential_width": ParamSpec("potential_width", "categorical", values=(64, 256, 1024)),
         "eps": ParamSpec("eps", "fixed", values=(1.0,))}


def _ranks(x: np.ndarray) -> np.ndarray:
    """Mean ranks of ties, by brute force (float64)."""
    return np.array([np.sum(x < v) + (np.sum(x == v) + 1) / 2 for v in x], dtype=np.float64)


def test_rho_is_the_correlation_of_ranks_and_its_sign_the_direction() -> None:
    rng = np.random.default_rng(3)
    n = 30
    ot = 10 ** rng.uniform(-3, 1, n)
    ent = 10 ** rng.uniform(-3, 1, n)
    width = rng.choice([64, 256, 1024], n)
    acc = 0.5 + 0.05 * np.log10(ot) - 0.05 * np.log10(ent) + rng.normal(0, 0.01, n)
    acc[0] = 0.01  # a collapsed trial weighs one rank, not its distance
    results = pd.DataFrame({"lambda_ot": ot, "lambda_ent": ent, "potential_width": width, "eps": 1.0, "acc": acc})
    effects = {e.param: e for e in signed_effects(results, SPACE)}
    assert list(effects) == ["lambda_ot", "lambda_ent", "potential_width"]  # eps is fixed: no effect
    for param in effects:
        rx, ry = _ranks(results[param].to_numpy(float)), _ranks(acc)
        assert effects[param].rho == pytest.approx(np.corrcoef(rx, ry)[0, 1], abs=1e-12)
        assert effects[param].n == n
    assert effects["lambda_ot"].direction == "+" and effects["lambda_ent"].direction == "-"
    assert effects["potential_width"].direction == "?"  # it does not matter: the interval holds 0
    # the same on a log or a linear axis: ranks do not change
    linear = {e.param: e for e in signed_effects(results.assign(lambda_ot=np.log10(ot)), SPACE)}
    assert linear["lambda_ot"].rho == effects["lambda_ot"].rho
    frame = effects_frame({"T": list(effects.values())})
    assert frame[["param", "direction", "n"]].values.tolist() == [["lambda_ot", "+", n], ["lambda_ent", "-", n],
                                                                   ["potential_width", "?", n]]


def test_the_interval_is_fisher_z_with_the_rank_standard_error() -> None:
    rho, n = 0.5, 20
    half = Z95 * math.sqrt(1.06 / (n - 3))
    low, high = rank_interval(rho, n)
    assert (low, high) == pytest.approx((math.tanh(math.atanh(rho) - half), math.tanh(math.atanh(rho) + half)))
    assert low < rho < high
    assert all(math.isnan(v) for v in rank_interval(rho, MIN_EFFECT_TRIALS - 1))
    assert rank_interval(1.0, 10) == (1.0, 1.0)


def test_undefined_effects_say_why() -> None:
    results = pd.DataFrame({"lambda_ot": [0.1, 0.2, 0.3], "lambda_ent": [1.0, 1.0, 1.0], "potential_width": [64, 64, 256],
                            "acc": [0.5, 0.5, 0.5]})
    effects = {e.param: e for e in signed_effects(results, SPACE)}
    assert math.isnan(effects["lambda_ot"].rho) and "accuracy is constant" in effects["lambda_ot"].note
    assert "one value only" in effects["lambda_ent"].note
    named = {"kind": ParamSpec("kind", "categorical", values=("a", "b"))}
    note = signed_effects(pd.DataFrame({"kind": ["a", "b", "a", "b"], "acc": [0.1, 0.2, 0.3, 0.4]}), named)[0].note
    assert note == "its choices have no order"
