"""`python tune/confirm.py`: the top trials of a real search re-run over seeds."""
from __future__ import annotations

import json
import statistics
from pathlib import Path

import pandas as pd
import pytest

from ssot.results.trials import ranked_trials, trial_table
from tune import confirm, confirmation
from tune.final import collect_configs


# ------------------------------------------------------------------------------------ confirmation
def _values(records_dir: Path, trial_id: str, seeds) -> list[float]:
    records = [json.loads((records_dir / f"{trial_id}_seed{s}.json").read_text()) for s in seeds]
    assert all(r["status"] == "completed" and r["config"]["seed"] == s for r, s in zip(records, seeds))
    return [r["epochs"][-1]["target_acc"] for r in records]


def test_confirm_reruns_the_top_trials_over_seeds_resumes_and_never_overwrites(finished_search, tmp_path, capsys):
    out = tmp_path / "confirmed"
    args = [str(finished_search.results), "--top", "2", "--seeds", "0", "1", "--out", str(out)]
    assert confirm.main(args) == 0
    printed = capsys.readouterr().out
    table = pd.read_csv(out / confirmation.CSV_NAME, dtype={"trial_id": str})
    ranked = ranked_trials(trial_table(finished_search.outcome.trials, finished_search.epochs))
    assert table["trial_id"].tolist() == ranked["trial_id"].head(2).tolist()  # the best-trial rule's top 2
    assert table["search_value"].tolist() == pytest.approx(ranked["target_acc"].head(2).tolist())
    runs = out / "runs" / "digits"
    for row in table.itertuples():
        values = _values(runs, row.trial_id, [0, 1])
        assert row.mean == pytest.approx(statistics.fmean(values)) and row.std == pytest.approx(statistics.stdev(values))
        assert row.seeds == "0 1" and row.n_completed == 2
    best = table.sort_values(["mean", "search_rank"], ascending=[False, True]).iloc[0]
    assert table["confirmed"].tolist() == [t == best.trial_id for t in table["trial_id"]]
    # the confirmed config is the trial's config, a file tune/final.py takes as an exported one
    [(path, config)] = collect_configs([out])
    assert path == out / "digits.json" and config.seed == 0 and config.epochs == finished_search.epochs
    row = finished_search.outcome.trials[finished_search.outcome.trials["trial_id"] == best.trial_id].iloc[0]
    assert (config.lambda_ot, config.potential_width) == (pytest.approx(row["lambda_ot"]), row["potential_width"])
    assert "**" in (out / confirmation.MARKDOWN_NAME).read_text() and best.trial_id in printed
    # a second run refuses to overwrite the outputs, before any work
    assert confirm.main(args) == 2
    err = capsys.readouterr().err
    assert "confirmation.csv already exists" in err and len(err.strip().splitlines()) == 1
    # interrupted after three runs (tables not written yet): the same command trains only the missing run
    for name in (confirmation.CSV_NAME, confirmation.MARKDOWN_NAME, "digits.json"):
        (out / name).unlink()
    missing = runs / f"{best.trial_id}_seed1.json"
    missing.unlink()
    kept = {p: p.stat().st_mtime_ns for p in runs.glob("*.json")}
    assert confirm.main(args) == 0
    log = capsys.readouterr().out
    assert log.count("[reused ") == 3 and log.count(", wrote ") == 1 and missing.exists()
    assert all(p.stat().st_mtime_ns == t for p, t in kept.items())
    again = pd.read_csv(out / confirmation.CSV_NAME, dtype={"trial_id": str})
    assert again[["trial_id", "mean", "std", "confirmed"]].equals(table[["trial_id", "mean", "std", "confirmed"]])


def test_confirm_race_spends_seeds_on_contenders_resumes_and_reports_the_pick(finished_search, tmp_path, capsys):
    out = tmp_path / "raced"
    args = [str(finished_search.results), "--top", "2", "--race", "--seeds", "0", "1", "2", "--budget", "5", "--out", str(out)]
    assert confirm.main(args) == 0
    log = capsys.readouterr().out
    table = pd.read_csv(out / confirmation.CSV_NAME, dtype={"trial_id": str})
    runs = out / "runs" / "digits"
    # 2 candidates x the first 2 seeds = 4 runs; one more round would need 2 runs, past the budget of 5
    # unless one was eliminated after 2 seeds (then the race stops: one candidate left)
    assert sorted(p.name for p in runs.glob("*.json")) == sorted(f"{t}_seed{s}.json" for t in table["trial_id"] for s in (0, 1))
    assert table["seeds"].tolist() == ["0 1", "0 1"]
    for row in table.itertuples():
        values = _values(runs, row.trial_id, [0, 1])
        assert row.mean == pytest.approx(statistics.fmean(values))
    picked = table[table["confirmed"]]
    assert len(picked) == 1 and picked["race"].iloc[0].startswith("picked (")
    leader = table.sort_values(["mean", "search_rank"], ascending=[False, True]).iloc[0]
    assert picked["trial_id"].iloc[0] == leader.trial_id  # equal seeds: the leader is the best mean
    assert table["p_best"].between(0, 1).all() and table["p_best"].nunique() == 1
    assert "race budget after 4 runs" in log or "race separated after 4 runs" in log
    assert "P(best) =" in (out / confirmation.MARKDOWN_NAME).read_text()
    # the race resumes from its run records: nothing is trained again, the same table comes out
    for name in (confirmation.CSV_NAME, confirmation.MARKDOWN_NAME, "digits.json"):
        (out / name).unlink()
    assert confirm.main(args) == 0
    assert capsys.readouterr().out.count("[reused ") == 4
    again = pd.read_csv(out / confirmation.CSV_NAME, dtype={"trial_id": str})
    assert again[["trial_id", "mean", "confirmed", "race", "p_best"]].equals(table[["trial_id", "mean", "confirmed", "race", "p_best"]])


@pytest.mark.parametrize("args, message", [
    (["{results}", "--budget", "4"], "The '--budget' argument only applies with --race."),
    (["{results}", "--race", "--top", "3", "--budget", "5"], "The '--budget' argument must cover the first round"),
    (["{results}", "--race", "--seeds", "4"], "at least --first-test = 2 seeds with --race"),
    (["{results}", "--race", "--confidence", "1"], "The '--confidence' argument must be a float in [0.5, 1)."),
    (["{empty}", "--top", "3"], "No experiment (no experiment.json) under"),
    (["{results}", "--top", "0"], "The '--top' argument must be an int in [1, inf). Got 0 instead."),
    (["{results}", "--seeds", "1", "1"], "The '--seeds' argument has repeated seeds"),
    (["{missing}"], "does not exist or is not a folder"),
])
def test_confirm_user_errors_are_one_line_and_exit_2(finished_search, tmp_path, capsys, args, message):
    (tmp_path / "empty").mkdir()
    paths = {"empty": tmp_path / "empty", "results": finished_search.results, "missing": tmp_path / "nope"}
    assert confirm.main([a.format(**paths) for a in args]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert not (finished_search.results / "confirmed").exists()
