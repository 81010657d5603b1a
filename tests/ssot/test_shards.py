"""`ssot/shards.py`: worker processes answer operations, report their failures, end with their population."""
from __future__ import annotations

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
