"""`tune/confirmation.py`: the confirmed pick."""
from __future__ import annotations

from pathlib import Path

import pytest

from ssot.config import SSOTConfig
from tune import confirmation


def test_the_pick_is_the_best_mean_with_ties_to_the_search_rank():
    def cand(rank: int, mode: str = "max") -> confirmation.Candidate:
        return confirmation.Candidate(task="digits", experiment=Path("e"), metric="target_acc" if mode == "max" else "entropy",
                                      mode=mode, search_rank=rank, trial_id=f"t{rank}", params={"lambda_ot": 1.0},
                                      search_value=0.9, config=SSOTConfig.for_task("digits"))

    def rec(value: float, metric: str = "target_acc", status: str = "completed") -> dict:
        return {"status": status, "epochs": [{metric: value}]}

    cands = [cand(1), cand(2), cand(3)]
    records = {("digits #1 trial t1", 0): rec(0.8), ("digits #1 trial t1", 1): rec(0.9),
               ("digits #2 trial t2", 0): rec(0.9), ("digits #2 trial t2", 1): rec(0.8),  # same mean as t1
               ("digits #3 trial t3", 0): rec(0.99), ("digits #3 trial t3", 1): rec(0.5, status="diverged")}
    table = confirmation.confirmation_table(cands, records, [0, 1])
    assert table["confirmed"].tolist() == [True, False, False]  # tie -> rank 1; the diverged seed counts as 0
    assert table["mean"].tolist() == pytest.approx([0.85, 0.85, 0.495])
    low = [cand(1, "min"), cand(2, "min")]
    records = {("digits #1 trial t1", 0): rec(0.3, "entropy"), ("digits #2 trial t2", 0): rec(0.2, "entropy")}
    assert confirmation.confirmation_table(low, records, [0])["confirmed"].tolist() == [False, True]
