"""What checking a cache costs when it is opened: with and without the checks, side by side.

    python benchmarks/cache_checks.py                 # P2H- and Office-31-sized caches, 5 rounds
    python benchmarks/cache_checks.py --rounds 9 --folder /tmp/caches

Every cache is checked once per process that opens it (a run, a worker of a search), never per
epoch: a feature cache (:func:`ssot.data.features.read_feature_cache`: the SHA-256 of its
contents, its shapes, labels and finite values) and a decoded-image cache
(:func:`ssot.data.decoded.open_cache`: the header's checksum and fields, the SHA-256 of the
pixels). This script writes caches of the sizes below from generated values (random features
and pixels: the checks do not depend on the values) into a temporary folder and times opening
each with its checks and without them (``verify=False``), alternately, after one warm-up round
(so the file is in the page cache: a cold read from disk adds its read time to both), and prints
the median times and their difference as a Markdown table.

=====================  =====================================================================
cache                  size
=====================  =====================================================================
P2H features           1,800 source + 449 target features of 512 (the digits CNN), no views
Office-31 features     2,817 + 795 features of 2,048 (ResNet-50), no views; and 4 views
Office-31 images       2,817 + 795 decoded images of 256 x 256 x 3 (0.66 GiB)
=====================  =====================================================================

(795: every webcam image, an upper bound of A2W's target, as docs/gpu.md's A2W figures use.)
"""
from __future__ import annotations

import os
import sys
import tempfile
from functools import partial
from pathlib import Path

if __package__ in (None, ""):  # run as a script: import the project and this folder's helpers
    sys.path[:0] = [str(Path(__file__).resolve().parents[1]), str(Path(__file__).resolve().parent)]

from _shared import alternated  # noqa: E402

#: (name, source count, target count, feature dimension, augmented views) of the feature caches.
FEATURE_CACHES = (("P2H features (digits CNN)", 1800, 449, 512, 0),
                  ("Office-31 A2W features (ResNet-50)", 2817, 795, 2048, 0),
                  ("Office-31 A2W features, 4 views", 2817, 795, 2048, 4))
#: (name, source count, target count, side) of the decoded-image cache.
IMAGE_CACHE = ("Office-31 A2W decoded images", 2817, 795, 256)


def feature_cache(path: Path, n_s: int, n_t: int, d: int, views: int) -> Path:
    """A feature cache of the given size (random features, the digits' classes)."""
    import torch

    from ssot.data.features import save_feature_cache

    gen = torch.Generator().manual_seed(0)
    save_feature_cache(path, "digits", [str(k) for k in range(10)], [0, 1, 2, 3, 4],
                       (torch.randn(n_s, d, generator=gen), torch.arange(n_s) % 10),
                       (torch.randn(n_t, d, generator=gen), torch.arange(n_t) % 5),
                       source_views=torch.randn(views, n_s, d, generator=gen) if views else None,
                       target_views=torch.randn(views, n_t, d, generator=gen) if views else None)
    return path


def image_cache(path: Path, n_s: int, n_t: int, side: int) -> Path:
    """A decoded-image cache of A2W's shape (random pixels), written by the module's writer."""
    from ssot.data.decoded import FORMAT, write_cache
    from ssot.data.registry import DATASETS

    spec = DATASETS["office31"]
    labels = {"source": [k % spec.num_classes for k in range(n_s)],
              "target": [spec.target_classes[k % len(spec.target_classes)] for k in range(n_t)]}
    header = {"format": FORMAT, "kind": "ssot decoded images", "task": "A2W", "dataset": "office31",
              "domains": {"source": "amazon", "target": "webcam"}, "resize": {"size": side, "method": "generated"},
              "count": {"source": n_s, "target": n_t}, "class_names": list(spec.classes),
              "target_classes": list(spec.target_classes), "labels": labels,
              "files": {k: [f"{k}/{i}.jpg" for i in range(len(v))] for k, v in labels.items()}, "files_sha256": "",
              "created": "generated"}
    chunk = side * side * 3
    return write_cache(path, header, (os.urandom(chunk) for _ in range(n_s + n_t)))


def measure(folder: Path, rounds: int) -> list[tuple[str, float, float, float]]:
    """``(cache, MiB, seconds with the checks, seconds without)`` of every cache."""
    from ssot.data.decoded import open_cache
    from ssot.data.features import read_feature_cache

    rows = []
    for name, n_s, n_t, d, views in FEATURE_CACHES:
        path = feature_cache(folder / f"features-{d}-{views}.pt", n_s, n_t, d, views)
        checked, plain = alternated(partial(read_feature_cache, path), partial(read_feature_cache, path, verify=False), rounds, "cpu")
        rows.append((name, path.stat().st_size / 2**20, checked, plain))
    name, n_s, n_t, side = IMAGE_CACHE
    path = image_cache(folder / "a2w.ssotimg", n_s, n_t, side)
    checked, plain = alternated(partial(open_cache, path, "A2W", side), partial(open_cache, path, "A2W", side, verify=False),
                                rounds, "cpu")
    rows.append((name, path.stat().st_size / 2**20, checked, plain))
    return rows


def main(argv: list[str] | None = None) -> int:
    from ssot import cli

    parser = cli.Parser(prog="python benchmarks/cache_checks.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5, help="timed rounds (alternated), after one warm-up round")
    parser.add_argument("--folder", type=Path, help="where the caches are written (default: a temporary folder, removed)")
    args = parser.parse_args(argv)
    from ssot.results.markdown import markdown_table

    with tempfile.TemporaryDirectory(dir=args.folder) as tmp:
        rows = measure(Path(tmp), args.rounds)
    load = os.getloadavg()[0]
    print(markdown_table(["cache", "size (MiB)", "open, checked (s)", "open, not checked (s)", "the checks (s)"],
                         [[n, f"{mib:.0f}", f"{c:.3f}", f"{p:.3f}", f"{c - p:.3f}"] for n, mib, c, p in rows], "lrrrr"), end="")
    print(f"median of {args.rounds} alternated rounds; load average {load:.1f} on {os.cpu_count()} CPUs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
