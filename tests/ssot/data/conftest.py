"""The official archives of the four benchmarks, built once per module, and a loopback server."""
from __future__ import annotations

import pytest

from ssot.data.registry import BENCHMARKS
from tests.fixtures.archives import ArchiveServer, pack, released_tree


@pytest.fixture(scope="module")
def archives(tmp_path_factory) -> dict[str, bytes]:
    """File name -> bytes of every dataset's generated official archive(s)."""
    out: dict[str, bytes] = {}
    for dataset in BENCHMARKS:
        base = tmp_path_factory.mktemp(dataset)
        names = released_tree(base, dataset, per_class=2 if dataset == "office31" else 1)
        for name in names:
            src = base / name.split(".")[0] if dataset == "visda2017" else base
            out[name] = pack(src, name)
    return out


@pytest.fixture
def server(archives):
    """The archives served on 127.0.0.1 (with Range support)."""
    with ArchiveServer(archives) as srv:
        yield srv
