"""`tune/members.py`: a population trial's results become one result (and trials.csv rows) per member."""
from __future__ import annotations

import math
from types import SimpleNamespace

import pandas as pd

from tune import members
from tune.outputs import trial_frame
from tune.space import default_space

INFO = {"task": "digits", "search": "tpe", "max_epochs": 3, "space": default_space()}


def entry(trial_id: str, epoch: int, acc: float, **extra) -> dict:
    return {"trial_id": trial_id, "epoch": epoch, "target_acc": acc, "diverged": 0, "reason": "", "early_stopped": 0,
            "source_only_target_acc": 0.5, **extra}


def population(error=None) -> SimpleNamespace:
    ids = [members.member_id("abc", 2, 11, i, 3) for i in range(3)]
    params = {"epochs": 3, members.MEMBERS_KEY: [{"trial_id": t, "params": {"lambda_ot": 0.1 * (i + 1), "lambda_ent": 1.0,
                                                                            "eps": 1.0, "potential_width": 64}}
                                                 for i, t in enumerate(ids)]}
    reports = [
        [entry(ids[0], 1, 0.5), entry(ids[1], 1, 0.6, early_stopped=1), entry(ids[2], 1, 0.7)],
        [entry(ids[0], 2, 0.55), {**entry(ids[2], 2, 0.0), "diverged": 1, "reason": "non-finite loss_ot (nan) at epoch 2, iteration 3"}],
        [entry(ids[0], 2, 0.56)],  # epoch 2 again: the population restarted from its epoch-1 checkpoint
    ]
    history = pd.DataFrame([{"epoch": r[0]["epoch"], members.MEMBERS_COLUMN: members.encode(r)} for r in reports])
    return SimpleNamespace(config=params, metrics={"trial_id": "abc"}, path="x/trial_abc", error=error, metrics_dataframe=history)


def test_member_ids_sort_in_the_order_the_configs_were_proposed():
    ids = [members.member_id(ray_id, k, 12, i, 64) for k, ray_id in enumerate(["f0", "a1", "c2"]) for i in range(64)]
    assert sorted(ids) == ids and ids[0] == "p00-m00-f0" and ids[-1] == "p02-m63-c2"
    assert members.member_id("x", 3, 200, 5, 256) == "p003-m005-x"


def test_a_population_gives_one_row_per_member_and_epoch_with_each_members_status():
    frame = trial_frame([population()], INFO, finished=True)
    by_member = {t: g for t, g in frame.groupby("trial_id")}
    first, stopped, diverged = sorted(by_member)
    assert list(by_member[first]["epoch"]) == [1, 2] and list(by_member[first]["target_acc"]) == [0.5, 0.56]  # each epoch once, the last report
    assert set(by_member[first]["status"]) == {"early-stopped"}  # finished search, below the last epoch
    assert list(by_member[stopped]["status"]) == ["early-stopped"]
    assert list(by_member[diverged]["status"]) == ["diverged", "diverged"]
    assert by_member[diverged]["reason"].iloc[-1].startswith("non-finite loss_ot")
    assert by_member[first]["lambda_ot"].iloc[0] == 0.1 and math.isclose(by_member[diverged]["lambda_ot"].iloc[0], 0.3)
    live = trial_frame([population()], INFO, finished=False)  # a member stopped at a rung reads early-stopped at once
    assert set(live.loc[live["trial_id"] == stopped, "status"]) == {"early-stopped"}
    assert set(live.loc[live["trial_id"] == first, "status"]) == {"running"}


def test_a_population_error_reaches_only_the_members_still_running():
    frame = trial_frame([population(error=RuntimeError("worker died"))], INFO, finished=True)
    status = frame.groupby("trial_id")["status"].last()
    assert list(status) == ["errored", "early-stopped", "diverged"]


def test_best_value_of_an_epoch_skips_diverged_and_missing_values():
    entries = [entry("a", 1, 0.5), entry("b", 1, float("nan")), {**entry("c", 1, 0.9), "diverged": 1}]
    assert members.best_value(entries, "target_acc", "max", 0.0) == 0.5
    assert members.best_value(entries[1:], "target_acc", "max", -1.0) == -1.0
    assert members.best_value([entry("a", 1, 0.5), entry("b", 1, 0.2)], "target_acc", "min", 9.0) == 0.2
