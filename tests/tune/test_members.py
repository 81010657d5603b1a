"""`tune/members.py` and `tune/outputs.trial_frame`: the one trial shape, its results, and the rows of trials.csv."""
from __future__ import annotations

import math

import pandas as pd
import pytest

from ssot.results.space import default_space
from tune import members
from tune.outputs import TrialHistory, trial_frame

INFO = {"task": "digits", "search": "tpe", "max_epochs": 3, "space": default_space()}


def entry(epoch: int, acc: float, **extra) -> dict:
    return {"epoch": epoch, "target_acc": acc, "diverged": 0, "reason": "", "early_stopped": 0,
            "source_only_target_acc": 0.5, **extra}


def flattened(result: dict) -> dict:
    """A result as Ray hands it to searchers and keeps it in its dataframes (``members/<id>/<name>``)."""
    flat = {k: v for k, v in result.items() if k != members.MEMBERS_KEY}
    for member, values in result[members.MEMBERS_KEY].items():
        flat.update({f"{members.MEMBERS_KEY}/{member}/{k}": v for k, v in values.items()})
    return flat


def population(status: str = "TERMINATED", error: str | None = None, flat: bool = False) -> TrialHistory:
    ids = members.unit_ids(6, 2, 3, 3, 11)[1]
    params = members.proposal({t: {"lambda_ot": 0.1 * (i + 1), "lambda_ent": 1.0, "eps": 1.0, "potential_width": 64}
                               for i, t in enumerate(ids)})
    reports = [
        {ids[0]: entry(1, 0.5), ids[1]: entry(1, 0.6, early_stopped=1), ids[2]: entry(1, 0.7)},
        {ids[0]: entry(2, 0.55), ids[2]: entry(2, 0.0, diverged=1, reason="non-finite loss_ot (nan) at epoch 2, iteration 3")},
        {ids[0]: entry(2, 0.56)},  # epoch 2 again: the population restarted from its epoch-1 checkpoint
    ]
    results = [members.report(r, "target_acc", "max") for r in reports]
    if flat:  # Ray's dataframe: every member's columns in every row, NaN where it did not report
        results = pd.DataFrame([flattened(r) for r in results]).to_dict("records")
    return TrialHistory("abc", {"epochs": 3, **params}, results, status, error)


def test_member_ids_sort_in_the_order_the_configs_were_proposed_and_one_config_is_its_trial():
    ids = [m for u in range(3) for m in members.unit_ids(64 * u, u, 64, 64, 192)[1]]
    assert sorted(ids) == ids and ids[0] == "p0000-m00" and ids[-1] == "p0002-m63" and len(set(ids)) == 192
    assert members.unit_ids(15, 3, 2, 256, 20000) == ("p00003", ["p00003-m000", "p00003-m001"])  # a last population of 2
    assert members.unit_ids(7, 7, 1, 1, 20) == ("t0007", ["t0007"])  # one config per trial: the trial and its member share the id
    grid = {"lambda_ot": 0.1, "epochs": 3}  # params without members: one member, the trial
    assert members.members_of(grid, "r1") == {"r1": grid}
    proposed = members.proposal({"m0": {"lambda_ot": 0.5}, "m1": {"lambda_ot": 2.0}})
    assert proposed["lambda_ot"] == 0.5  # a full config at the top: the first member's
    assert members.members_of({**grid, **proposed}, "r2") == {"m0": {**grid, "lambda_ot": 0.5}, "m1": {**grid, "lambda_ot": 2.0}}


def test_a_report_leads_with_its_best_member_and_ray_flattened_results_read_the_same():
    entries = {"a": entry(1, 0.5), "b": entry(1, math.nan), "c": entry(1, 0.9, diverged=1), "d": entry(1, 0.7, target_pred="0 1")}
    report = members.report(entries, "target_acc", "max")
    assert report["target_acc"] == 0.7 and "target_pred" not in report  # d leads, without its predictions
    assert members.lead(entries, "target_acc", "min") == "a" and members.lead({"c": entries["c"]}, "target_acc", "max") == "c"
    assert members.entries(report) == members.entries(flattened(report))
    assert members.entries(report)["d"]["target_pred"] == "0 1"


@pytest.mark.parametrize("flat", [False, True])
def test_a_population_gives_one_row_per_member_and_epoch_with_each_members_status(flat):
    frame = trial_frame([population(flat=flat)], INFO)
    by_member = {t: g for t, g in frame.groupby("trial_id")}
    first, stopped, diverged = sorted(by_member)
    assert list(by_member[first]["epoch"]) == [1, 2] and list(by_member[first]["target_acc"]) == [0.5, 0.56]  # each epoch once, the last report
    assert set(by_member[first]["status"]) == {"early-stopped"}  # its trial ended below the last epoch
    assert list(by_member[stopped]["status"]) == ["early-stopped"]
    assert list(by_member[diverged]["status"]) == ["diverged", "diverged"]
    assert by_member[diverged]["reason"].iloc[-1].startswith("non-finite loss_ot")
    assert by_member[first]["lambda_ot"].iloc[0] == 0.1 and math.isclose(by_member[diverged]["lambda_ot"].iloc[0], 0.3)
    live = trial_frame([population(status="RUNNING", flat=flat)], INFO)  # a member stopped at a rung reads early-stopped at once
    assert set(live.loc[live["trial_id"] == stopped, "status"]) == {"early-stopped"}
    assert set(live.loc[live["trial_id"] == first, "status"]) == {"running"}


def test_a_restart_from_an_earlier_checkpoint_drops_the_epochs_of_the_abandoned_run():
    """Killed after epoch 3, restored from its epoch-1 checkpoint, stopped at epoch 2: the member's
    rows are 1 and the rerun's 2 (the abandoned run's epoch 3 is not its result)."""
    results = [members.report({"t": entry(e, 0.1 * e)}, "target_acc", "max") for e in (1, 2, 3)]
    results.append(members.report({"t": entry(2, 0.25)}, "target_acc", "max"))
    frame = trial_frame([TrialHistory("t", {"lambda_ot": 1.0}, results, "TERMINATED")], INFO)
    assert list(frame["epoch"]) == [1, 2] and list(frame["target_acc"]) == [0.1, 0.25]
    assert set(frame["status"]) == {"early-stopped"}


def test_a_trial_error_reaches_only_the_members_still_running():
    frame = trial_frame([population(status="ERROR", error="RuntimeError: worker died")], INFO)
    status = frame.groupby("trial_id")["status"].last()
    assert list(status) == ["errored", "early-stopped", "diverged"]
    assert frame.groupby("trial_id")["reason"].last().iloc[0] == "RuntimeError: worker died"
    nothing = trial_frame([TrialHistory("z", {"lambda_ot": 1.0}, [], "ERROR", "OSError: read-only")], INFO)
    assert len(nothing) == 1 and pd.isna(nothing["epoch"].iloc[0]) and nothing["status"].iloc[0] == "errored"
