"""Helpers shared by the benchmark scripts (generated JPEG folders, timing)."""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable


def rate(fn: Callable[[], Any], *, iters: int, warmup: int, device: str) -> float:
    """Calls of ``fn`` per second over ``iters`` calls after ``warmup`` calls."""
    import torch

    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    for _ in range(warmup):
        fn()
    sync()
    start = time.perf_counter()
    for _ in range(iters):
        fn()
    sync()
    return iters / (time.perf_counter() - start)


def alternated(first: Callable[[], Any], second: Callable[[], Any], rounds: int, device: str) -> tuple[float, float]:
    """Median seconds of a call of ``first`` and of ``second``, timed alternately (a shared
    machine's load drifts: alternating exposes both to the same drift), after one warm-up round."""
    import statistics

    import torch

    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    times: list[list[float]] = [[], []]
    for i in range(rounds + 1):
        for k, fn in enumerate((first, second)):
            sync()
            start = time.perf_counter()
            fn()
            sync()
            if i:  # the first round is a warm-up
                times[k].append(time.perf_counter() - start)
    return statistics.median(times[0]), statistics.median(times[1])


def write_jpegs(root: Path, per_class: int, size: int = 300) -> Path:
    """An Office-31 layout (amazon, webcam) of random-noise JPEGs under ``root``."""
    import numpy as np
    from PIL import Image

    from ssot.data.registry import DATASETS

    rng = np.random.default_rng(0)
    for domain in ("amazon", "webcam"):
        for name in DATASETS["office31"].classes:
            folder = root / "office31" / domain / "images" / name
            folder.mkdir(parents=True, exist_ok=True)
            for i in range(per_class):
                Image.fromarray(rng.integers(0, 256, (size, size, 3), dtype=np.uint8)).save(folder / f"{i}.jpg", quality=90)
    return root
