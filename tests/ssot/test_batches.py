"""`ssot/batches.py`: the training order, persistent DataLoader workers, the decoded-image cache's batches."""
from __future__ import annotations

import itertools
import os
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader, Dataset, Subset, TensorDataset

from ssot.batches import Batches, memory_format
from ssot.data.decoded import DecodedCache
from ssot.data.decoded_images import DecodedImages
from ssot.solvers import SampleIds


def _config(workers: int = 0, batch_size: int = 8, backbone: str = "resnet50") -> SimpleNamespace:
    return SimpleNamespace(batch_size=batch_size, eval_batch_size=16, backbone=backbone, num_workers=workers, channels_last=True)


def _indices(batches, n: int) -> list[list[int]]:
    return [y.tolist() for _, y in itertools.islice(batches, n)]


class RandomItems(Dataset):
    """Item ``i``: ``([a random number, the reading process's id], i)``: a random transform's stand-in."""

    def __len__(self) -> int:
        return 37

    def __getitem__(self, i: int):
        return torch.tensor([torch.rand(1).item(), os.getpid()], dtype=torch.float64), i


def _cache(n_source: int = 20, n_target: int = 9, size: int = 8) -> DecodedCache:
    """An in-memory cache whose image k is filled with the value k (its labels: k % 5)."""
    n = n_source + n_target
    pixels = np.broadcast_to(np.arange(n, dtype=np.uint8)[:, None, None, None], (n, size, size, 3)).copy()
    header = {"resize": {"size": size}, "count": {"source": n_source, "target": n_target},
              "labels": {"source": [k % 5 for k in range(n_source)], "target": [k % 5 for k in range(n_target)]}}
    return DecodedCache(Path("memory"), header, pixels)


def _image_ids(x: torch.Tensor) -> list[int]:
    """The value each (unnormalised back) centre-cropped image was filled with."""
    mean, std = torch.tensor([0.485, 0.456, 0.406]), torch.tensor([0.229, 0.224, 0.225])
    return (x[:, :, 0, 0] * std + mean).mul(255).round()[:, 0].long().tolist()


def test_the_training_order_is_a_shuffled_dataloaders_in_every_path():
    ds = TensorDataset(torch.zeros(37, 1), torch.arange(37))
    gen = torch.Generator().manual_seed(4)
    loader = DataLoader(ds, batch_size=8, shuffle=True, drop_last=True, generator=gen)
    expected = [y.tolist() for _ in range(3) for _, y in loader]  # three passes of 4 full batches
    assert _indices(Batches(_config(0), torch.device("cpu")).train(ds, 4), 12) == expected
    persistent = Batches(_config(2), torch.device("cpu"))
    assert _indices(persistent.train(ds, 4), 12) == expected
    persistent.close()
    cached = DecodedImages(_cache(37, 0), "source", train=False, image_size=6, transform="default")
    got = [_image_ids(x) for x, _ in itertools.islice(Batches(_config(0), torch.device("cpu")).train(cached, 4), 12)]
    assert got == expected
    small = TensorDataset(torch.zeros(5, 1), torch.arange(5))  # smaller than a batch: one batch of all
    assert sorted(_indices(Batches(_config(0), torch.device("cpu")).train(small, 0), 1)[0]) == list(range(5))


def test_persistent_workers_stay_and_random_transforms_depend_only_on_the_seeds():
    runs = {}
    for workers in (1, 2):
        batches, items = Batches(_config(workers), torch.device("cpu")), RandomItems()
        epochs = [torch.cat([x for x, _ in itertools.islice(batches.train(items, seed), 6)]) for seed in (10, 11)]
        runs[workers] = epochs
        pids = [set(e[:, 1].long().tolist()) for e in epochs]
        assert pids[0] == pids[1] and len(pids[0]) == workers and os.getpid() not in pids[0]  # not started again
        batches.close()
    for e1, e2 in zip(runs[1], runs[2]):  # the same numbers whatever the workers
        assert torch.equal(e1[:, 0], e2[:, 0])
    assert not torch.equal(runs[1][0][:8, 0], runs[1][1][:8, 0])
    again = Batches(_config(2), torch.device("cpu"))  # a run resumed at its second epoch
    resumed = torch.cat([x for x, _ in itertools.islice(again.train(RandomItems(), 11), 6)])
    assert torch.equal(resumed[:, 0], runs[2][1][:, 0])
    again.close()


def test_decoded_batches_through_a_subset_and_sample_ids():
    cache = _cache()
    train = DecodedImages(cache, "source", train=True, image_size=6, transform="default")
    batches = Batches(_config(0, batch_size=4), torch.device("cpu"))
    sub = Subset(train, [3, 5, 7, 9, 11, 13])
    x, y = next(batches.train(sub, 0))
    assert x.shape == (4, 3, 6, 6) and x.dtype == torch.float32
    assert set(y.tolist()) <= {3 % 5, 5 % 5, 7 % 5, 9 % 5, 11 % 5, 13 % 5}
    target = DecodedImages(cache, "target", train=False, image_size=6, transform="default")
    ids = [y.tolist() for _, y in batches.eval(SampleIds(target))]
    assert sum(ids, []) == list(range(9))  # sample ids, never labels
    evals = [(x, y) for x, y in batches.eval(Subset(target, [8, 0, 4]))]
    assert _image_ids(evals[0][0]) == [20 + 8, 20, 24] and evals[0][1].tolist() == [8 % 5, 0, 4 % 5]


def test_channels_last_only_for_resnet50_on_cuda():
    assert memory_format(_config(backbone="resnet50"), torch.device("cuda")) is torch.channels_last
    assert memory_format(_config(backbone="resnet50"), torch.device("cpu")) is torch.contiguous_format
    assert memory_format(_config(backbone="digits_cnn"), torch.device("cuda")) is torch.contiguous_format


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_cuda_batches_of_a_cache_are_channels_last_and_on_the_gpu():
    cache = _cache()
    train = DecodedImages(cache, "source", train=True, image_size=6, transform="default")
    x, y = next(Batches(_config(0, batch_size=4), torch.device("cuda")).train(train, 0))
    assert x.is_cuda and y.is_cuda and x.is_contiguous(memory_format=torch.channels_last)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_a_decoded_batch_and_a_step_do_not_sync_the_host():
    from ssot import SSOTConfig, Trainer
    from ssot.data.base import TaskData

    cache = _cache(40, 40, size=40)
    sides = {(side, train): DecodedImages(cache, side, train=train, image_size=32, transform="default")
             for side in ("source", "target") for train in (True, False)}
    task = TaskData("A2W", sides["source", True], sides["source", False], sides["target", True], sides["target", False],
                    [str(k) for k in range(31)], list(range(10)), (3, 32, 32))
    trainer = Trainer(SSOTConfig.for_task("A2W", pretrained=False, device="cuda", precision="bf16", batch_size=8,
                                          image_size=32, resize_size=40, num_workers=0), task)
    src, tgt = trainer.batches.train(trainer.source_train, 0), trainer.batches.train(trainer.target_ids, 1)
    trainer.step(*next(src), *next(tgt))  # the first step initialises (cuBLAS, cuDNN)
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        for _ in range(3):
            losses = trainer.step(*next(src), *next(tgt))
    finally:
        torch.cuda.set_sync_debug_mode("default")
    assert all(v.is_cuda for v in losses.values())
