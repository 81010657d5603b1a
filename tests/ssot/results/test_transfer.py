"""`ssot/results/transfer.py`: the replays' files and the loss rule, on run records with known accuracies."""
from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

import pytest

from ssot.results.record import RunRecord, write_new
from ssot.results.transfer import (
    DEFAULT_SOURCE,
    MANIFEST_FILE,
    find_transfers,
    new_manifest,
    read_transfer,
    run_path,
    to_markdown,
    transfer_table,
)

#: Final accuracy of (source, target, seed); "B" diverged on A with seed 1.
ACC = {("A", "A", 0): 0.80, ("A", "A", 1): 0.70, ("B", "A", 0): 0.60, ("B", "A", 1): 0.65,
       ("A", "B", 0): 0.40, ("A", "B", 1): 0.45, ("B", "B", 0): 0.50, ("B", "B", 1): 0.55,
       (DEFAULT_SOURCE, "A", 0): 0.85, (DEFAULT_SOURCE, "A", 1): 0.75, (DEFAULT_SOURCE, "B", 0): 0.3, (DEFAULT_SOURCE, "B", 1): 0.3}


def record(source: str, target: str, seed: int, status: str = "completed") -> RunRecord:
    return RunRecord({"task": target, "seed": seed}, [{"epoch": 1, "target_acc": ACC[(source, target, seed)]}], status)


def manifest() -> dict:
    sources: dict[str, dict[str, Any]] = {"A": {"experiment": "/r/A", "values": {"lambda_ot": 0.1}}, "B": {"experiment": "/r/B", "values": {"lambda_ot": 1.0}},
               DEFAULT_SOURCE: {"experiment": None, "values": {"lambda_ot": 1.0}}}
    return new_manifest("/r", [0, 1], sources, {"A": {"experiment": "/r/A"}, "B": {"experiment": "/r/B"}})


def test_the_loss_is_paired_over_seeds_against_the_own_best_and_zero_on_the_diagonal() -> None:
    records = {key: record(*key) for key in ACC}
    table = transfer_table(manifest(), records).set_index(["source", "target"])
    assert list(table.index) == [("A", "A"), ("B", "A"), (DEFAULT_SOURCE, "A"), ("A", "B"), ("B", "B"), (DEFAULT_SOURCE, "B")]
    for target in ("A", "B"):
        assert table.loc[(target, target), "loss"] == 0.0 and table.loc[(target, target), "loss_std"] == 0.0
    row = table.loc[("B", "A")]
    diffs = [100 * (0.80 - 0.60), 100 * (0.70 - 0.65)]
    assert row["loss"] == pytest.approx(statistics.fmean(diffs)) and row["loss_std"] == pytest.approx(statistics.stdev(diffs))
    assert row["mean_acc"] == pytest.approx(62.5) and row["own_acc"] == pytest.approx(75.0) and row["n_seeds"] == 2
    assert table.loc[(DEFAULT_SOURCE, "A"), "loss"] == pytest.approx(-5.0)  # better than the own best: negative
    # a diverged replay scores 0, as a diverged trial does in a search; a missing one leaves its seed out
    records[("B", "A", 1)] = record("B", "A", 1, "diverged")
    del records[("A", "B", 1)]
    table = transfer_table(manifest(), records).set_index(["source", "target"])
    assert table.loc[("B", "A"), "loss"] == pytest.approx(statistics.fmean([20.0, 70.0]))
    assert table.loc[("B", "A"), "statuses"] == "completed diverged"
    assert table.loc[("A", "B"), "n_seeds"] == 1 and table.loc[("A", "B"), "seeds"] == "0"
    assert "| B | A | 0 1 |" in to_markdown(transfer_table(manifest(), records))


def test_the_files_are_read_back_and_defects_are_problems(tmp_path: Path) -> None:
    out = tmp_path / "t"
    for key in ACC:
        write_new(run_path(out, key[1], key[0], key[2]), record(*key))
    (out / MANIFEST_FILE).write_text(json.dumps(manifest()))
    assert run_path(out, "A", "B", 1) == out / "runs" / "A" / "B_seed1.json"
    transfer = read_transfer(out)
    assert transfer.problems == [] and len(transfer.records) == len(ACC)
    assert transfer.table().equals(transfer_table(manifest(), {k: record(*k) for k in ACC}))
    run_path(out, "B", "A", 0).unlink()
    (tmp_path / "other" / ".hidden").mkdir(parents=True)
    (tmp_path / "other" / ".hidden" / MANIFEST_FILE).write_text("{}")
    assert find_transfers(tmp_path) == [out]
    transfer = read_transfer(out)
    assert [p.path for p in transfer.problems] == [run_path(out, "B", "A", 0)] and ("A", "B", 0) not in transfer.records
    (out / MANIFEST_FILE).write_text("{")
    broken = read_transfer(out)
    assert broken.manifest == {} and broken.problems[0].severity == "error"
