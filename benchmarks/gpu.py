"""Image trials at the GPU's speed: one report, every figure measured side by side in one run.

    python benchmarks/gpu.py                          # the report on a CUDA GPU (about 10 min on an H100)
    python benchmarks/gpu.py --compile --out gpu.md   # also torch.compile'd; write the table (never overwrites)
    python benchmarks/gpu.py --device cpu --smoke     # every code path with tiny sizes on a CPU
    python benchmarks/gpu.py --device cpu --sections pipeline --num-workers 2   # the input pipeline, measured on a CPU

Random-init ResNet-50 (bottleneck 1024-512, 31 classes: the Office-31 tasks' model; no weight
download), 224x224 inputs, batch 32 + 32, bf16 autocast on CUDA (fp32 on a CPU). Sections
(``--sections``, default all):

``model``
    images/s of plain cross-entropy training (Adam; forward and backward of the 64 images, nothing
    read on the host) in NCHW and in channels_last, against SSOT's step
    (:meth:`ssot.trainer.Trainer.step`: no host sync, channels_last on CUDA), and the old step
    emulated (NCHW, its losses read on the host after every step; the old ``isfinite`` test
    before the backward pass is not emulated, so the old step is if anything measured faster than
    it was); with ``--compile`` also ``torch.compile``. Goal: SSOT >= 90 % of plain CE in
    channels_last and >= 2,200 images/s.
``pipeline``
    images/s of training batches arriving on the device: the decoded-image cache
    (:mod:`ssot.data.decoded`) with the crops, flips and normalisation on the device, and the JPEG
    loader (persistent workers; the paper tasks' 4 by default, capped at the CPUs), each against
    the model (SSOT step images/s). Goal: the cache path >= 100 % of the model.
``trials``
    1, 2 and 4 processes sharing the GPU (what ``--gpus-per-trial 1, 0.5, 0.25`` does), each
    running SSOT steps on device-resident batches for the same window after a common barrier;
    total images/s, without MPS (time-slicing) and with an MPS daemon started for the run
    (:mod:`tune.mps`). Goal: 4 trials with MPS >= 1.9x one trial.
``epoch``
    wall time of one adaptation epoch (its iterations and its evaluation) of A2W on a generated
    Office-31-sized folder (2,817 amazon + 795 webcam noise JPEGs of 300x300, the webcam images
    in the 10 target classes): before (JPEG loader with its workers started again every epoch,
    NCHW, the old step) and after (decoded cache, channels_last, the new step); the second
    epoch of each is timed. Goal: >= 1.8x faster.

Without CUDA (and without ``--device cpu``) it prints why and exits with status 0. The report
names the GPU (or CPU) and the torch version, with each goal beside its ratio.
"""
from __future__ import annotations

import argparse
import functools
import multiprocessing as mp
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: import the project and this folder's helpers
    sys.path[:0] = [str(Path(__file__).resolve().parents[1]), str(Path(__file__).resolve().parent)]

from _shared import device_name, rate, write_task_jpegs  # noqa: E402

BATCH = 32
IMAGE = 224
DEFAULT_WORKERS = 4  # SSOTConfig.for_task(<paper task>).num_workers
SECTIONS = ("model", "pipeline", "trials", "epoch")
#: The issue's goals.
GOAL_SSOT_VS_CE, GOAL_SSOT_IPS, GOAL_PIPELINE, GOAL_FOUR_TRIALS, GOAL_EPOCH = 0.90, 2200.0, 1.0, 1.9, 1.8


@dataclass(frozen=True)
class Sizes:
    """What one run measures: the paper's sizes, or tiny ones (``--smoke``)."""

    batch: int = BATCH
    image: int = IMAGE
    resize: int = 256
    iters: int = 50
    warmup: int = 10
    pipeline_batches: int = 60
    seconds: float = 20.0
    trials: tuple[int, ...] = (1, 2, 4)
    n_source: int = 2817
    n_target: int = 795
    jpeg_size: int = 300
    iters_per_epoch: int = 0  # 0: the task's own (2,817 // 32 = 88)
    source_eval_samples: int = 2000
    epochs: int = 2  # the last one is timed


#: The paper's sizes on a CPU: the model (seconds per step there) timed over a few steps only.
CPU = Sizes(iters=3, warmup=1, pipeline_batches=30)
SMOKE = Sizes(batch=4, image=32, resize=36, iters=1, warmup=0, pipeline_batches=2, seconds=0.2, trials=(1, 2), n_source=62,
              n_target=20, jpeg_size=40, iters_per_epoch=1, source_eval_samples=4, epochs=1)


# ------------------------------------------------------------------------------------ the model
def make_trainer(device: str, precision: str, *, batch: int = BATCH, image_size: int = IMAGE, compile: bool = False,
                 **overrides: Any) -> tuple[Any, tuple]:
    """A ResNet-50 SSOT :class:`Trainer` (random init) and one ``(xs, ys, xt, ids)`` batch on ``device``."""
    import torch

    from ssot.config import SSOTConfig
    from ssot.trainer import Trainer

    cfg = SSOTConfig.for_task("A2W", pretrained=False, device=device, precision=precision, batch_size=batch, image_size=image_size,
                              resize_size=image_size, source_eval_samples=batch, compile=compile, **overrides)
    trainer = Trainer(cfg, _synthetic_task(2 * batch, image_size))
    trainer.f.train(); trainer.eta.train(); trainer.g.train()
    g = torch.Generator().manual_seed(1)
    xs, xt = (torch.randn(batch, 3, image_size, image_size, generator=g).to(trainer.device, memory_format=trainer.batches.format)
              for _ in range(2))
    ys = (torch.arange(batch) % trainer.task.num_classes).to(trainer.device)
    return trainer, (xs, ys, xt, torch.arange(batch).to(trainer.device))


def _synthetic_task(n: int, image_size: int, classes: int = 31) -> Any:
    import torch
    from torch.utils.data import TensorDataset

    from ssot.data.base import TaskData

    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(n, 3, image_size, image_size, generator=g), torch.arange(n) % classes
    ds = TensorDataset(x, y)
    return TaskData("A2W", ds, ds, ds, ds, [f"c{k}" for k in range(classes)], list(range(10)), (3, image_size, image_size))


def set_format(trainer: Any, batch: tuple, fmt: Any) -> tuple:
    """Put the trainer's feature extractor, its batches and ``batch`` in memory format ``fmt``."""
    trainer.f.to(memory_format=fmt)
    trainer.batches.format = fmt
    return tuple(t.contiguous(memory_format=fmt) if t.dim() == 4 else t for t in batch)


def ce_step(trainer: Any, xs: Any, ys: Any, xt: Any, ids: Any) -> None:
    """Plain cross-entropy training on the same 64 images (the target labelled like the source):
    forward, backward, Adam; nothing read on the host."""
    import torch
    import torch.nn.functional as F

    _, logits = trainer.forward(torch.cat([xs, xt]))
    loss = F.cross_entropy(logits, torch.cat([ys, ys]))
    trainer.opt_fe.zero_grad(set_to_none=True)
    loss.backward()
    trainer.opt_fe.step()


def read_on_host(losses: dict[str, Any]) -> dict[str, float]:
    """What the old step did with its losses: read each on the host (``.item()``), every step."""
    return {k: float(v) for k, v in losses.items()}


def old_step(trainer: Any, xs: Any, ys: Any, xt: Any, ids: Any = None) -> dict[str, float]:
    """The step as it was (emulated): the new step, its losses read on the host."""
    return read_on_host(trainer.step(xs, ys, xt, ids))


def bench_model(device: str, precision: str, sizes: Sizes, compile: bool) -> dict[str, float]:
    """Images/s (64 per step) of each model variant, side by side."""
    import torch

    out: dict[str, float] = {}
    per_step = 2 * sizes.batch
    variants = [(False, "")] + ([(True, " compiled")] if compile and device == "cuda" else [])
    for compiled, suffix in variants:
        trainer, batch = make_trainer(device, precision, batch=sizes.batch, image_size=sizes.image, compile=compiled)
        for fmt, name in ((torch.contiguous_format, "NCHW"), (torch.channels_last, "channels_last")):
            b = set_format(trainer, batch, fmt)
            out[f"plain CE, {name}{suffix}"] = per_step * rate(functools.partial(ce_step, trainer, *b), iters=sizes.iters,
                                                               warmup=sizes.warmup, device=device)
            out[f"SSOT step, {name}{suffix}"] = per_step * rate(functools.partial(trainer.step, *b), iters=sizes.iters,
                                                                warmup=sizes.warmup, device=device)
        if not compiled:
            b = set_format(trainer, batch, torch.contiguous_format)
            out["old SSOT step (NCHW, host read every step)"] = per_step * rate(functools.partial(old_step, trainer, *b), iters=sizes.iters,
                                                                               warmup=sizes.warmup, device=device)
        del trainer
    return out


# ------------------------------------------------------------------------------------ the input pipeline
def task_config(device: str, precision: str, sizes: Sizes, **overrides: Any) -> Any:
    from ssot.config import SSOTConfig

    return SSOTConfig.for_task("A2W", pretrained=False, device=device, precision=precision, batch_size=sizes.batch,
                               image_size=sizes.image, resize_size=sizes.resize, iters_per_epoch=sizes.iters_per_epoch,
                               source_eval_samples=sizes.source_eval_samples, **overrides)


def pipeline_rate(config: Any, batches: int) -> float:
    """Images/s of the trainer's training batches of ``config``'s task arriving on its device
    (after a first batch: the workers' start, once per run now that they persist)."""
    import torch

    from ssot.batches import Batches
    from ssot.data import build_task
    from ssot.trainer import resolve_device

    device = resolve_device(config.device)
    source = build_task(config).source
    loader = Batches(config, device)
    it = loader.train(source, seed=0)
    next(it)
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    sync()
    start = time.perf_counter()
    n = sum(next(it)[0].shape[0] for _ in range(batches))
    sync()
    seconds = time.perf_counter() - start
    loader.close()
    return n / seconds


# ------------------------------------------------------------------------------------ trials sharing a GPU
def _trial_worker(barrier: Any, queue: Any, device: str, precision: str, sizes: Sizes, threads: int) -> None:
    import torch

    if threads:
        torch.set_num_threads(threads)
    trainer, batch = make_trainer(device, precision, batch=sizes.batch, image_size=sizes.image)
    for _ in range(max(1, sizes.warmup // 2)):
        trainer.step(*batch)
    if device == "cuda":
        torch.cuda.synchronize()
    barrier.wait()
    start, n = time.perf_counter(), 0
    while time.perf_counter() - start < sizes.seconds:
        for _ in range(5 if device == "cuda" else 1):  # the step does not sync: sync every 5 steps, the clock stays honest
            trainer.step(*batch)
            n += 1
        if device == "cuda":
            torch.cuda.synchronize()
    queue.put(2 * sizes.batch * n / (time.perf_counter() - start))


def bench_sharing(n_trials: int, device: str, precision: str, sizes: Sizes) -> float:
    """Total images/s of ``n_trials`` processes sharing the device (a CPU: one thread each)."""
    ctx = mp.get_context("spawn")
    barrier, queue = ctx.Barrier(n_trials), ctx.Queue()
    threads = 1 if device == "cpu" else 0
    procs = [ctx.Process(target=_trial_worker, args=(barrier, queue, device, precision, sizes, threads)) for _ in range(n_trials)]
    for p in procs:
        p.start()
    rates = [queue.get(timeout=sizes.seconds + 600) for _ in procs]
    for p in procs:
        p.join()
    return sum(rates)


def bench_trials(device: str, precision: str, sizes: Sizes) -> dict[str, Any]:
    from tune import mps

    out: dict[str, Any] = {"time-slicing": {n: bench_sharing(n, device, precision, sizes) for n in sizes.trials}}
    if device != "cuda":
        out["mps"], out["mps_detail"] = None, "MPS needs CUDA"
        return out
    state = mps.start(1 / max(sizes.trials))  # started for the run (or a running daemon), exported to the trial processes
    try:
        if state.on:
            out["mps"] = {n: bench_sharing(n, device, precision, sizes) for n in sizes.trials}
        else:
            out["mps"] = None
        out["mps_detail"] = state.detail
    finally:
        state.stop()
    return out


# ------------------------------------------------------------------------------------ one epoch before and after
def epoch_seconds(trainer: Any, *, before: bool, epochs: int = 2) -> float:
    """Wall time of the last of ``epochs`` adaptation epochs (the others warm up); ``before`` emulates
    the old trainer: NCHW, the old step, the loaders' workers started again each epoch."""
    import torch

    if before:
        trainer.f.to(memory_format=torch.contiguous_format)
        trainer.batches.format = torch.contiguous_format
        step = trainer.step

        def synced(*batch: Any) -> dict[str, Any]:
            losses = step(*batch)
            read_on_host(losses)
            return losses

        trainer.step = synced
    seconds = 0.0
    for _ in range(epochs):
        if before:
            trainer.batches.close()  # the old loaders started their workers every epoch
        start = time.perf_counter()
        trainer.adapt_epoch()
        if trainer.device.type == "cuda":
            torch.cuda.synchronize()
        seconds = time.perf_counter() - start
    trainer.batches.close()
    return seconds


def bench_epoch(root: Path, cache: Path, device: str, precision: str, sizes: Sizes, workers: int) -> dict[str, float]:
    from ssot.trainer import Trainer

    before = Trainer(task_config(device, precision, sizes, data_root=str(root), image_cache="off", num_workers=workers))
    out = {"before": epoch_seconds(before, before=True, epochs=sizes.epochs), "iterations": before.iterations_per_epoch()}
    del before
    after = Trainer(task_config(device, precision, sizes, data_root=str(root), image_cache=str(cache), num_workers=workers))
    out["after"] = epoch_seconds(after, before=False, epochs=sizes.epochs)
    return out


# ------------------------------------------------------------------------------------ the report
def _met(ok: bool) -> str:
    return "met" if ok else "NOT met"


def _ips(value: float) -> str:
    """Images/s as read by a person: thousands separated; two significant digits below 10 (a CPU's model)."""
    return f"{value:,.0f}" if value >= 10 else f"{value:.2g}"


def table(results: dict[str, Any], machine: str, sizes: Sizes = Sizes()) -> str:
    """The Markdown report of ``results`` (the sections that ran)."""
    lines = [f"{machine}; random-init ResNet-50, {sizes.image}x{sizes.image}, batch {sizes.batch} + {sizes.batch}", "",
             "| measurement | value | ratio | goal |", "| --- | --- | --- | --- |"]
    model = results.get("model") or {}
    for name, ips in model.items():
        ratio, goal = "", ""
        if name.startswith("SSOT step, channels_last"):
            ce = model.get(name.replace("SSOT step", "plain CE"))
            if ce:
                ok = ips / ce >= GOAL_SSOT_VS_CE and ips >= GOAL_SSOT_IPS
                ratio = f"SSOT at {100 * ips / ce:.0f} % of plain CE"
                goal = f">= {100 * GOAL_SSOT_VS_CE:.0f} % and >= {GOAL_SSOT_IPS:,.0f} images/s: {_met(ok)}"
        lines.append(f"| model: {name} | {_ips(ips)} images/s | {ratio} | {goal} |")
    pipeline = results.get("pipeline")
    if pipeline:
        target = pipeline["model"]
        for name, ips in pipeline["rates"].items():
            goal = f">= {100 * GOAL_PIPELINE:.0f} %: {_met(ips >= GOAL_PIPELINE * target)}" if name.startswith("decoded") else "(today's)"
            lines.append(f"| input pipeline: {name} | {_ips(ips)} images/s | {100 * ips / target:.0f} % of the model "
                         f"({_ips(target)} images/s) | {goal} |")
        if pipeline.get("prepare_s") is not None:
            lines.append(f"| decoded-image cache: `python -m ssot.data prepare`; opening it (checks, checksum) | "
                         f"{pipeline['prepare_s']:.0f} s, {pipeline['cache_gib']:.2f} GiB; {pipeline.get('open_s', float('nan')):.1f} s | | |")
    trials = results.get("trials")
    if trials:
        one = trials["time-slicing"].get(1)
        for mode in ("time-slicing", "mps"):
            for n, ips in (trials.get(mode) or {}).items():
                ratio = f"{ips / one:.2f}x one trial" if one else ""
                goal = f">= {GOAL_FOUR_TRIALS}x: {_met(ips / one >= GOAL_FOUR_TRIALS)}" if mode == "mps" and n == 4 and one else ""
                lines.append(f"| {n} trial(s) per GPU (gpus-per-trial {1 / n:g}), {'MPS' if mode == 'mps' else 'no MPS'} | "
                             f"{_ips(ips)} images/s in total | {ratio} | {goal} |")
        if trials.get("mps") is None:
            lines.append(f"| trials with MPS | not measured: {trials.get('mps_detail')} | | |")
    epoch = results.get("epoch")
    if epoch:
        speedup = epoch["before"] / epoch["after"]
        lines.append(f"| one A2W epoch ({epoch['iterations']} iterations + evaluation): before (JPEG loader, old step) / after "
                     f"(decoded cache, new step) | {epoch['before']:.1f} s / {epoch['after']:.1f} s | {speedup:.2f}x faster | "
                     f">= {GOAL_EPOCH}x: {_met(speedup >= GOAL_EPOCH)} |")
    return "\n".join(lines) + "\n"


def machine_name(device: str) -> str:
    import torch

    what = device_name(device) if device == "cuda" else f"{device_name(device)}, load average {os.getloadavg()[0]:.1f} at the start"
    return f"{what}, torch {torch.__version__}, measured {time.strftime('%Y-%m-%d')}"


def run(args: argparse.Namespace) -> int:
    from ssot.data.base import usable_workers
    from ssot.data.decoded import open_cache, prepare

    device = args.device
    sizes = SMOKE if args.smoke else CPU if device == "cpu" else Sizes(seconds=args.seconds)
    precision = "bf16" if device == "cuda" else "fp32"
    workers = usable_workers(DEFAULT_WORKERS if args.num_workers is None else args.num_workers)
    sections = args.sections or list(SECTIONS)
    machine = machine_name(device)
    print(machine, flush=True)
    t0 = time.perf_counter()
    results: dict[str, Any] = {}
    model_ips = None
    if "model" in sections:
        print(f"model ... ({time.perf_counter() - t0:.0f} s)", flush=True)
        results["model"] = bench_model(device, precision, sizes, args.compile)
        model_ips = results["model"]["SSOT step, channels_last" if device == "cuda" else "SSOT step, NCHW"]
    if "trials" in sections:
        print(f"{', '.join(map(str, sizes.trials))} trial(s) sharing the {device} ... ({time.perf_counter() - t0:.0f} s)", flush=True)
        results["trials"] = bench_trials(device, precision, sizes)
    if "pipeline" in sections or "epoch" in sections:
        with tempfile.TemporaryDirectory() as tmp:
            print(f"writing {sizes.n_source} + {sizes.n_target} JPEGs ... ({time.perf_counter() - t0:.0f} s)", flush=True)
            root = write_task_jpegs(Path(tmp) / "data", sizes.n_source, sizes.n_target, sizes.jpeg_size)
            start = time.perf_counter()
            cache = prepare("A2W", root, Path(tmp) / "a2w.ssotimg", resize_size=sizes.resize, workers=usable_workers(64))
            prepared = {"prepare_s": time.perf_counter() - start, "cache_gib": cache.stat().st_size / 2**30}
            start = time.perf_counter()
            open_cache(cache, "A2W", sizes.resize)  # what every run pays once: the checks and the checksum
            prepared["open_s"] = time.perf_counter() - start
            if "pipeline" in sections:
                print(f"input pipeline ... ({time.perf_counter() - t0:.0f} s)", flush=True)
                if model_ips is None:
                    trainer, batch = make_trainer(device, precision, batch=sizes.batch, image_size=sizes.image)
                    model_ips = 2 * sizes.batch * rate(lambda: trainer.step(*batch), iters=sizes.iters, warmup=sizes.warmup, device=device)
                    del trainer
                rates = {"decoded cache + device augmentation": pipeline_rate(
                    task_config(device, precision, sizes, image_cache=str(cache), num_workers=workers), sizes.pipeline_batches),
                    f"JPEG loader, {workers} persistent workers": pipeline_rate(
                    task_config(device, precision, sizes, data_root=str(root), image_cache="off", num_workers=workers),
                    sizes.pipeline_batches)}
                results["pipeline"] = {"model": model_ips, "rates": rates, **prepared}
            if "epoch" in sections:
                print(f"one epoch before and after ... ({time.perf_counter() - t0:.0f} s)", flush=True)
                results["epoch"] = bench_epoch(root, cache, device, precision, sizes, workers)
    report = table(results, machine, sizes)
    print(report, end="")
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        with open(args.out, "x") as fh:
            fh.write(report)
        print(f"wrote {args.out}")
    return 0


def main(argv: list[str] | None = None) -> int:
    from ssot import cli

    parser = cli.Parser(prog="python benchmarks/gpu.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda", help="where to measure (default cuda; cpu: "
                        "the CPU's figures, or with --smoke every code path)")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes: checks that every section runs, measures nothing")
    parser.add_argument("--sections", nargs="+", choices=SECTIONS, help="the sections to run (default: all)")
    parser.add_argument("--compile", action="store_true", help="also measure torch.compile (CUDA only)")
    parser.add_argument("--num-workers", type=int, help=f"JPEG loader workers (default {DEFAULT_WORKERS}, capped at the CPUs)")
    parser.add_argument("--seconds", type=float, default=20.0, help="measurement window of each trials-sharing run")
    parser.add_argument("--out", type=Path, help="also write the Markdown table here (refuses to overwrite)")
    args = parser.parse_args(argv)
    import torch

    if args.device == "cuda" and not torch.cuda.is_available():
        print("benchmarks/gpu.py: skipped, no CUDA GPU visible (torch.cuda.is_available() is False); "
              "--device cpu measures the CPU.")
        return 0
    if args.out is not None and args.out.exists():
        print(f"error: --out {args.out} already exists; choose another path (results are never overwritten).", file=sys.stderr)
        return 2
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
