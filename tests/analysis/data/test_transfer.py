"""`analysis/data/transfer.py`: the replays of an atlas's tasks as matrices, and what differs from the atlas."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from analysis.data.transfer import find_atlas_transfer, transfer_info
from ssot.results.transfer import DEFAULT_SOURCE, read_transfer
from tests.fixtures.experiments import write_transfer_results

TASKS = ("A", "B", "C")
#: The best config of task s reaches ACC[s][t] on task t (the diagonal is each task's own best).
ACC = {"A": {"A": 0.9, "B": 0.5, "C": 0.6}, "B": {"A": 0.7, "B": 0.8, "C": 0.6}, "C": {"A": 0.8, "B": 0.8, "C": 0.7},
       DEFAULT_SOURCE: {"A": 0.85, "B": 0.3, "C": 0.75}}


def _write(folder: Path, tasks=TASKS) -> Path:
    accuracy = {(s, t, seed): ACC[s][t] + 0.01 * seed for s in [*tasks, DEFAULT_SOURCE] for t in tasks for seed in (0, 1)}
    return write_transfer_results(folder, {t: folder.parent / "r" / t for t in tasks}, accuracy)


def test_the_matrix_has_a_zero_diagonal_and_the_loss_against_the_own_best(tmp_path: Path) -> None:
    folder = _write(tmp_path / "transfer")
    info = transfer_info(read_transfer(folder), {t: tmp_path / "r" / t for t in TASKS})
    assert info.sources == [*TASKS, DEFAULT_SOURCE] and info.targets == list(TASKS) and info.notes == []
    np.testing.assert_allclose(np.diag(info.loss[:3]), 0.0)
    expected = np.array([[100 * (ACC[t][t] - ACC[s][t]) for t in TASKS] for s in info.sources])
    np.testing.assert_allclose(info.loss, expected, atol=1e-9)
    np.testing.assert_allclose(info.loss_std, 0.0, atol=1e-9)  # the same offset on both seeds
    np.testing.assert_allclose(info.own, [100 * (ACC[t][t] + 0.005) for t in TASKS])
    assert (info.n_seeds == 2).all() and info.seeds == [0, 1]
    assert info.loss[3, 0] == pytest.approx(5.0)  # the paper's default loses 5 points on A


def test_what_differs_from_the_atlas_is_said(tmp_path: Path) -> None:
    folder = _write(tmp_path / "transfer")
    info = transfer_info(read_transfer(folder), {"A": tmp_path / "r" / "A", "B": tmp_path / "elsewhere" / "B", "D": tmp_path / "D"})
    assert info.targets == ["A", "B"] and info.sources == ["A", "B", DEFAULT_SOURCE]
    assert any("not replayed" in n and "D" in n for n in info.notes)
    assert any("outside the atlas left out: C" in n for n in info.notes)
    assert any("the best config of B replayed comes from" in n for n in info.notes)
    (folder / "runs" / "A" / "B_seed1.json").unlink()
    info = transfer_info(read_transfer(folder), {t: tmp_path / "r" / t for t in TASKS})
    assert info.n_seeds[1, 0] == 1 and any("1 replay(s) missing" in n for n in info.notes)


def test_the_transfer_of_the_atlas_is_found_under_the_results(tmp_path: Path) -> None:
    assert find_atlas_transfer([tmp_path], TASKS) == (None, [])
    _write(tmp_path / "one", ("A", "B"))
    _write(tmp_path / "two")
    found, notes = find_atlas_transfer([tmp_path], TASKS)
    assert found is not None and found.path == tmp_path / "two"  # it replays the most of the tasks
    assert notes == [f"another transfer folder {tmp_path / 'one'} left out (the atlas draws {tmp_path / 'two'})"]
