"""Fixtures of the benchmark scripts' tests."""
from __future__ import annotations

import pytest
import torch


@pytest.fixture(scope="session")
def small_cache(tmp_path_factory):
    """A small feature cache of the digits task: 10 classes of 32-d vectors, 5 in the target."""
    from ssot.data.features import save_feature_cache

    gen = torch.Generator().manual_seed(0)
    means = torch.rand(10, 32, generator=gen) * 3
    ys, yt = torch.arange(300) % 10, torch.arange(120) % 5
    path = tmp_path_factory.mktemp("population-bench") / "small.pt"
    save_feature_cache(path, "digits", [str(k) for k in range(10)], list(range(5)),
                       ((means[ys] + torch.randn(300, 32, generator=gen)).relu(), ys),
                       ((means[yt] + 0.3 + torch.randn(120, 32, generator=gen)).relu(), yt))
    return path
