"""Helpers shared by the benchmark scripts (generated JPEG folders, timing, the machine a figure was measured on)."""
from __future__ import annotations

import os
import platform
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


def add_population_flags(parser: Any, configs: int) -> None:
    """The flags of the benchmarks that train a population of random configs on a feature cache:
    ``--cache``, ``--task`` (the cache's) and ``--configs`` (default ``configs``)."""
    parser.add_argument("--cache", type=Path, required=True, help="a feature cache (python -m ssot.features)")
    parser.add_argument("--task", required=True, help="the cache's task")
    parser.add_argument("--configs", type=int, default=configs, help=f"random configs (default {configs})")


def cpu_name() -> str:
    """The CPU's model name (``/proc/cpuinfo`` on Linux, else what ``platform`` says)."""
    info = Path("/proc/cpuinfo")
    names = [line.split(":", 1)[1].strip() for line in (info.read_text().splitlines() if info.exists() else [])
             if line.startswith("model name")]
    return names[0] if names else platform.processor() or "unknown CPU"


def device_name(device: str) -> str:
    """What a figure was measured on: the GPU's name, or the CPU's model, cores and torch threads."""
    import torch

    if device == "cuda":
        return f"GPU {torch.cuda.get_device_name(0)}"
    return f"CPU {cpu_name()}, {os.cpu_count()} cores, {torch.get_num_threads()} torch threads"


def machine(device: str) -> str:
    """The first line of a benchmark's output: the device (:func:`device_name`), torch's version, the load."""
    import torch

    return f"device: {device_name(device)}; torch {torch.__version__}; {load()}"


def load() -> str:
    """The machine's load averages (1, 5 and 15 minutes), printed beside a measurement."""
    return "load average " + " ".join(f"{v:.1f}" for v in os.getloadavg())


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
