"""How many image trials share one GPU when ``--gpus-per-trial`` is not given.

Trials that share a GPU under NVIDIA MPS run their kernels side by side: on an NVIDIA H200 (torch
2.11, 2026-11-28, ``python benchmarks/gpu.py --sections trials``) 2 and 4 ResNet-50 trials gave
1.84x and 2.14x the images/s of one (1.59x and 1.58x without MPS). So a search of an image task
packs trials on each GPU when they fit (:func:`pack`, a pure function of the figures):

- a trial's **footprint**: its peak GPU memory, measured by a probe before Ray starts (a process of
  its own trains :data:`PROBE_STEPS` SSOT steps and one evaluation batch of the search's config
  on random images: :func:`measure_footprint`, ``torch.cuda.max_memory_reserved`` plus
  :data:`CONTEXT_BYTES` for the CUDA context), or, where the probe cannot run, computed from the
  config (:func:`estimate_footprint`, the formula in its docstring);
- the GPUs' **free memory** (``nvidia-smi``, the GPUs ``CUDA_VISIBLE_DEVICES`` shows; the least
  free of them counts), less a margin of :data:`MARGIN` (10 %) for what else starts on it;
- ``k`` trials per GPU: as many footprints as fit the free memory less the margin, at most
  :data:`MAX_PER_GPU` (4: the most that was measured; beyond it nothing says it helps), no more
  than the machine's CPUs give a CPU share to (``--cpus-per-trial`` each), nor than the search
  has trials. ``k >= 2`` packs (``--gpus-per-trial 1/k``, with MPS: :mod:`tune.mps`); otherwise
  one trial per GPU.

Searches that keep their own rules: trials of a feature cache and populations (cheap trials, one
GPU each unless ``--gpus-per-trial`` says), embedded tasks, searches that join a Ray cluster or
a Ray started before them (the nodes' GPUs are not known before joining, and MPS there is each
node's own: docs/gpu.md), and searches given ``--gpus-per-trial``.
"""
from __future__ import annotations

import math
import os
import shutil
import subprocess
from dataclasses import dataclass
from typing import Any

from ssot.config import SSOTConfig

#: The most trials packed on one GPU (the most measured: 4 trials with MPS gave 2.14x one on an H200).
MAX_PER_GPU = 4
#: The share of a GPU's free memory kept free when packing (other processes, fragmentation).
MARGIN = 0.10
#: Memory of one process's CUDA context and cuDNN/cuBLAS workspaces, besides what torch allocates.
CONTEXT_BYTES = 1 << 30
#: SSOT steps the footprint probe trains before it reads the peak.
PROBE_STEPS = 3
#: Parameters of torchvision's ResNet-50 without its ``fc`` layer (the SSOT backbone).
RESNET50_PARAMS = 23_508_032
#: Bytes of activations kept for the backward pass per 224x224 image, by precision: ResNet-50
#: training memory per image in PyTorch (about 100 MiB in fp32, 55 MiB under bf16 autocast; batch
#: 128 in fp32 and 256 with mixed precision fit a 16 GiB GPU).
ACTIVATION_BYTES = {"fp32": 100 << 20, "bf16": 55 << 20}
_GIB = 2**30


@dataclass(frozen=True)
class GPU:
    """One GPU as ``nvidia-smi`` reports it (bytes)."""

    index: int
    name: str
    total: int
    free: int


def parse_gpus(text: str, visible: str | None = None) -> list[GPU]:
    """The GPUs of ``nvidia-smi --query-gpu=index,name,memory.total,memory.free --format=csv,noheader,nounits``
    (MiB), restricted to ``visible`` (``CUDA_VISIBLE_DEVICES``: indices; UUIDs or an empty value
    are not resolved here and keep every GPU, or none for ``""``)."""
    gpus = []
    for line in text.strip().splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) != 4 or not parts[0].isdigit():
            continue
        try:
            gpus.append(GPU(int(parts[0]), parts[1], int(float(parts[2])) << 20, int(float(parts[3])) << 20))
        except ValueError:
            continue
    if visible is None:
        return gpus
    wanted = [v.strip() for v in visible.split(",") if v.strip()]
    if not wanted or wanted[0] in ("-1", "NoDevFiles"):
        return []
    if all(v.isdigit() for v in wanted):
        by_index = {g.index: g for g in gpus}
        return [by_index[int(v)] for v in wanted if int(v) in by_index]
    return gpus


def local_gpus() -> tuple[list[GPU] | None, str]:
    """This machine's visible GPUs with their free memory, or ``None`` and why not known."""
    binary = shutil.which("nvidia-smi")
    if binary is None:
        return None, "nvidia-smi is not on PATH"
    try:
        done = subprocess.run([binary, "--query-gpu=index,name,memory.total,memory.free", "--format=csv,noheader,nounits"],
                              capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError) as exc:
        return None, f"nvidia-smi failed: {exc}"
    if done.returncode != 0:
        return None, f"nvidia-smi failed: {(done.stderr or done.stdout).strip()[:200]}"
    return parse_gpus(done.stdout, os.environ.get("CUDA_VISIBLE_DEVICES")), "nvidia-smi"


def model_parameters(config: SSOTConfig, num_classes: int) -> int:
    """Parameters of ``f``, ``eta`` and ``g`` for an image config (ResNet-50, its bottleneck, the
    classifier of ``num_classes`` and the potential network)."""
    dims = [2048, *config.bottleneck_dims]
    bottleneck = sum(a * b + b for a, b in zip(dims, dims[1:]))
    d = dims[-1]
    return RESNET50_PARAMS + bottleneck + d * num_classes + num_classes + d * config.potential_width + 2 * config.potential_width + 1


def estimate_footprint(config: SSOTConfig, num_classes: int) -> int:
    """A trial's GPU memory computed from its config (bytes):
    ``CONTEXT_BYTES + 1.2 x (16 P + a (s/224)^2 max(2 b, e / 8))``, with ``P`` the parameters
    (:func:`model_parameters`; fp32 weights, gradients and Adam's two moments: 16 bytes each),
    ``a`` the activation bytes per 224x224 image of the precision (:data:`ACTIVATION_BYTES`), ``s``
    the crop size, ``b`` the batch size (the step forwards ``2 b`` images: source and target),
    ``e`` the evaluation batch size (no gradients: about an eighth of an image's training
    activations live at once), and 20 % for the allocator's slack."""
    per_image = ACTIVATION_BYTES[config.precision] * (config.image_size / 224) ** 2
    images = max(2 * config.batch_size, config.eval_batch_size / 8)
    return int(CONTEXT_BYTES + 1.2 * (16 * model_parameters(config, num_classes) + per_image * images))


def probe_steps(config: SSOTConfig, num_classes: int) -> Any:
    """Train :data:`PROBE_STEPS` SSOT steps and forward one evaluation batch of ``config`` (its
    device, sizes, precision and memory format; random init) on random images; returns the trainer."""
    import torch

    from ssot.data.base import TaskData
    from ssot.trainer import Trainer

    config = config.replace(pretrained=False, image_cache="off")
    n, s = 2 * config.batch_size, config.image_size
    x = torch.randn(n, 3, s, s)
    y = torch.arange(n) % num_classes
    ds = torch.utils.data.TensorDataset(x, y)
    task = TaskData(config.task, ds, ds, ds, ds, [f"c{k}" for k in range(num_classes)], list(range(min(num_classes, 2))), (3, s, s))
    trainer = Trainer(config, task)
    b = config.batch_size
    xs, xt = (t.to(trainer.device, memory_format=trainer.batches.format) for t in (x[:b], x[b:]))
    ys, ids = y[:b].to(trainer.device), torch.arange(b, device=trainer.device)
    for _ in range(PROBE_STEPS):
        trainer.step(xs, ys, xt, ids)
    with torch.no_grad():
        e = torch.randn(config.eval_batch_size, 3, s, s, device=trainer.device).contiguous(memory_format=trainer.batches.format)
        trainer.forward(e)
    return trainer


def _probe(config_dict: dict[str, Any], num_classes: int) -> int:
    """Peak GPU memory (bytes reserved by torch) of :func:`probe_steps` on CUDA: the body of
    :func:`measure_footprint`, run in a process of its own."""
    import torch

    probe_steps(SSOTConfig.from_dict({**config_dict, "device": "cuda"}), num_classes)
    torch.cuda.synchronize()
    return int(torch.cuda.max_memory_reserved())


def measure_footprint(config: SSOTConfig, num_classes: int, timeout: float = 300.0) -> tuple[int | None, str]:
    """A trial's peak GPU memory measured by a probe in a process of its own (the driver never
    holds a CUDA context): bytes and how, or ``None`` and why not."""
    import concurrent.futures
    import multiprocessing

    try:
        with concurrent.futures.ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
            peak = pool.submit(_probe, config.to_dict(), num_classes).result(timeout=timeout)
    except Exception as exc:  # noqa: BLE001 - any failure of the probe falls back to the estimate, saying why
        return None, f"the probe failed ({type(exc).__name__}: {' '.join(str(exc).split())[:160]})"
    return peak + CONTEXT_BYTES, f"measured: {PROBE_STEPS} steps and an evaluation batch peaked at {peak / _GIB:.1f} GiB + the CUDA context"


def pack(gpus: list[GPU], footprint: int, *, cpus: float, cpus_per_trial: float, trials: int,
         max_per_gpu: int = MAX_PER_GPU, margin: float = MARGIN) -> tuple[int, str]:
    """Trials per GPU (``k``) and why, for trials of ``footprint`` bytes (module docstring): as many
    as fit the least free GPU's memory less ``margin``, at most ``max_per_gpu``, no more than the
    ``cpus`` give ``cpus_per_trial`` each, nor than ``trials`` spread over the GPUs; 1 when fewer
    than two fit."""
    if not gpus:
        return 1, "no GPU"
    free = min(g.free for g in gpus)
    usable = free * (1 - margin)
    limits = {"GPU memory": int(usable // footprint) if footprint > 0 else max_per_gpu,
              f"at most {max_per_gpu} per GPU (the most measured)": max_per_gpu,
              "CPUs": int(cpus // (cpus_per_trial * len(gpus))),
              "trials of the search": math.ceil(trials / len(gpus))}
    k = max(1, min(limits.values()))
    bound = min(limits, key=lambda name: limits[name])
    fits = (f"a trial needs {footprint / _GIB:.1f} GiB, {free / _GIB:.1f} GiB free on the least free of {len(gpus)} GPU(s), "
            f"{100 * margin:.0f} % kept free")
    if k < 2:
        return 1, f"one trial per GPU: {fits}; limited by {bound}"
    return k, f"{k} trials per GPU: {fits}; limited by {bound}"


def gpus_per_trial(k: int) -> float:
    """The ``--gpus-per-trial`` of ``k`` trials per GPU, rounded down to Ray's resolution (1e-4)
    so that ``k`` of them fit one GPU."""
    return math.floor(10_000 / k) / 10_000
