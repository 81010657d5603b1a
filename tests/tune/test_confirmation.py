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


def test_a_raced_table_takes_the_race_pick_and_each_candidates_own_seeds():
    """An eliminated candidate can end with a higher mean over its few seeds than the leader over
    all of its seeds; the race's pick (the last leader) is still the confirmed one."""
    from tune import racing

    cands = [confirmation.Candidate(task="P2H", experiment=Path("e"), metric="target_acc", mode="max", search_rank=r,
                                    trial_id=f"t{r}", params={"lambda_ot": 1.0}, search_value=0.6,
                                    config=SSOTConfig.for_task("digits")) for r in (1, 2)]
    values = {cands[0].label: [0.70, 0.72, 0.40, 0.40], cands[1].label: [0.60, 0.61]}
    race = racing.RaceResult(values=values, seeds=[5, 6, 7, 8], mode="max", pick=cands[0].label, survivors=[cands[0].label],
                             eliminated=[racing.Elimination(cands[1].label, 2, cands[0].label, 0.01, 0.105)], stop="separated", runs=6)
    records = {(c.label, s): {"status": "completed", "epochs": [{"target_acc": v}]}
               for c in cands for s, v in zip([5, 6, 7, 8], values[c.label])}
    table = confirmation.confirmation_table(cands, records, [5, 6, 7, 8], {"e": race})
    assert table["seeds"].tolist() == ["5 6 7 8", "5 6"]
    assert table["mean"].tolist() == pytest.approx([0.555, 0.605])
    assert table["confirmed"].tolist() == [True, False]  # not the higher mean: the race's pick
    assert table["race"].tolist() == ["picked (the others eliminated, 4 seeds)", "eliminated after 2 seeds (p = 0.01 vs t1)"]
    # P(best): one minus the paired t-test p-value of t1 over t2 on their two common seeds
    from scipy import stats

    expected = 1 - stats.ttest_rel([0.70, 0.72], [0.60, 0.61], alternative="greater").pvalue
    assert table["p_best"].tolist() == pytest.approx([expected, expected])
    assert "eliminated after 2 seeds" in confirmation.to_markdown(table)
    budget = racing.RaceResult(values=values, seeds=[5, 6, 7, 8], mode="max", pick=cands[0].label, survivors=[c.label for c in cands],
                               stop="budget", runs=6)  # both still in the race when the budget ran out
    assert confirmation.race_outcome(budget, cands[1].label) == "in contention at the end (2 seeds)"
    with pytest.raises(ValueError, match="must name a candidate of the race. Got 'P2H #3 trial t3'"):
        confirmation.race_outcome(race, "P2H #3 trial t3")  # neither picked, eliminated nor a survivor


def test_the_candidates_of_a_truncated_trials_csv_come_with_the_readers_warning(tmp_path):
    from tests.fixtures.experiments import with_meta, write_edge_tpe

    folder = write_edge_tpe(tmp_path / "exp" / "A2D")  # the best trial, t3, is not the last one in the file
    with_meta(folder, base_config=SSOTConfig.for_task("A2D").to_dict())
    text = (folder / "trials.csv").read_text()
    (folder / "trials.csv").write_text(text[: len(text) - 40])  # cut inside the last row (trial t6)
    warnings: list[str] = []
    candidates = confirmation.gather_candidates(tmp_path, top=1, warn=warnings.append)
    assert [c.trial_id for c in candidates] == ["t3"]
    assert warnings == [f"{folder / 'trials.csv'}: 1 malformed row(s) dropped (trial t6): the file is truncated, corrupt or "
                        "still being written - the other rows are used"]


@pytest.mark.parametrize(("metric", "mode", "written"), [("target_acc", "max", "85.00 ± 7.07 %"), ("mixval", "max", "85.00 ± 7.07 %"),
                                                         ("entropy", "min", "0.85 ± 0.07071")])
def test_the_table_writes_a_metric_as_the_registry_says(metric, mode, written):
    """A fraction of the metric registry (accuracies and MixVal) in percent, as on the dashboard;
    any other metric to 4 significant digits."""
    cand = confirmation.Candidate(task="digits", experiment=Path("e"), metric=metric, mode=mode, search_rank=1, trial_id="t1",
                                  params={"lambda_ot": 1.0}, search_value=0.9, config=SSOTConfig.for_task("digits"))
    records = {("digits #1 trial t1", s): {"status": "completed", "epochs": [{metric: v}]} for s, v in ((0, 0.8), (1, 0.9))}
    text = confirmation.to_markdown(confirmation.confirmation_table([cand], records, [0, 1]))
    assert written in text
    assert ("90.00 % (seed" if metric != "entropy" else "0.9 (seed") in text
