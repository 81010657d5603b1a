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


def write_jpegs(root: Path, per_class: int, size: int = 300) -> Path:
    """An Office-31 layout (amazon, webcam) of random-noise JPEGs under ``root``: ``per_class`` per class."""
    from ssot.data.registry import DATASETS

    classes = DATASETS["office31"].classes
    return _write(root, {domain: [c for c in classes for _ in range(per_class)] for domain in ("amazon", "webcam")}, size)


def write_task_jpegs(root: Path, n_source: int, n_target: int, size: int = 300) -> Path:
    """A generated A2W of Office-31's size: ``n_source`` amazon images over the 31 classes and
    ``n_target`` webcam images over the 10 target classes (the released sizes: 2,817 and 795)."""
    from ssot.data.registry import DATASETS

    spec = DATASETS["office31"]
    return _write(root, {"amazon": [spec.classes[k % spec.num_classes] for k in range(n_source)],
                         "webcam": [spec.target_class_names[k % len(spec.target_class_names)] for k in range(n_target)]}, size)


def _write(root: Path, labels: dict[str, list[str]], size: int) -> Path:
    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(0)
    for domain, names in labels.items():
        for i, name in enumerate(names):
            folder = root / "office31" / domain / "images" / name
            folder.mkdir(parents=True, exist_ok=True)
            Image.fromarray(rng.integers(0, 256, (size, size, 3), dtype=np.uint8)).save(folder / f"{i}.jpg", quality=90)
    return root
