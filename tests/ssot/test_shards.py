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


def test_split_gives_contiguous_groups_of_near_equal_sizes():
    assert shards.split(list(range(5)), 2) == [[0, 1, 2], [3, 4]]
    assert shards.split([7, 8], 4) == [[7], [8]]
    assert shards.split([], 3) == []
