"""`ssot/shards.py`: worker processes answer operations, report their failures, end with their population."""
from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest
import torch

from ssot import shards


def _echo_handler(setup):
    def handle(name, payload):
        if name == "fail":
            raise ValueError(f"failing as asked ({payload})")
        return {"setup": setup, "name": name, "doubled": payload * 2}
    return handle


def serve_echo(fd: int) -> None:
    """The entry of the test's worker (``tests.ssot.test_shards:serve_echo``)."""
    shards.serve(fd, _echo_handler)


def serve_when_told(fd: int) -> None:
    """A worker that reads nothing until the file named by ``SHARD_TEST_GO`` exists (a worker still importing torch)."""
    go, deadline = Path(os.environ["SHARD_TEST_GO"]), time.monotonic() + 120  # never an orphan waiting forever
    while not go.exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    shards.serve(fd, lambda setup: lambda name, payload: {"sum": float(setup["data"].sum()), "n": setup["data"].numel()})


def exit_at_once(fd: int) -> None:
    """A worker that ends before it reads its setup."""
    os._exit(3)


def test_the_setup_is_sent_while_the_population_goes_on(tmp_path, monkeypatch):
    # 8 MB of setup, far more than a socket holds: a plain send would wait for the worker to read it
    data = torch.arange(2_000_000, dtype=torch.float32)
    go = tmp_path / "go"
    monkeypatch.setenv("SHARD_TEST_GO", str(go))
    made: list[shards.Shard] = []
    maker = threading.Thread(target=lambda: made.append(shards.Shard("tests.ssot.test_shards:serve_when_told", {"data": data})), daemon=True)
    maker.start()
    maker.join(timeout=60)  # the worker reads nothing until told: the constructor must not wait for it
    assert made, "the Shard constructor waited for its worker to read the setup"
    shard = made[0]
    try:
        go.touch()
        assert shard.call("sum") == {"sum": float(data.sum()), "n": data.numel()}  # every byte arrived, before the operation
    finally:
        shard.close()
    assert shard.process.returncode == 0


def test_a_worker_that_ends_before_reading_its_setup_fails_the_next_operation():
    shard = shards.Shard("tests.ssot.test_shards:exit_at_once", {"data": torch.zeros(2_000_000)})
    try:
        with pytest.raises(shards.WorkerError, match="worker process"):
            shard.call("anything")
    finally:
        shard.close()
    assert shard.process.returncode == 3


def test_a_worker_answers_in_order_reports_its_traceback_and_ends_when_told():
    shard = shards.Shard("tests.ssot.test_shards:serve_echo", {"task": "setup sent first"})
    try:
        shard.start("double", torch.arange(3.0))  # the worker computes while this process goes on
        answer = shard.finish()
        assert answer["setup"] == {"task": "setup sent first"} and torch.equal(answer["doubled"], torch.tensor([0.0, 2.0, 4.0]))
        with pytest.raises(shards.WorkerError, match="failing as asked \\(7\\)"):
            shard.call("fail", 7)
        assert shard.call("again", 1)["doubled"] == 2  # a failed operation does not end the worker
    finally:
        shard.close()
    assert shard.process.returncode == 0


def test_split_balances_the_groups_costs():
    assert shards.split(list(range(5)), 2) == [[0, 2, 4], [1, 3]]
    assert shards.split([7, 8], 4) == [[7], [8]]
    assert shards.split([], 3) == []
    widths = {0: 1024, 1: 64, 2: 64, 3: 1024, 4: 256}
    groups = shards.split(list(widths), 2, cost=lambda i: widths[i])
    assert sorted(sum(widths[i] for i in g) for g in groups) == [1152, 1280] and all(g == sorted(g) for g in groups)
