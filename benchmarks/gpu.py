"""GPU throughput report: where an SSOT iteration's time goes on a CUDA GPU (skips without one).

    python benchmarks/gpu.py                 # prints a Markdown table (about 3-4 min on an H100)
    python benchmarks/gpu.py --out gpu.md    # ... and writes it (never overwrites)

Measured side by side in one run, random-init ResNet-50 (no weight download), 224x224 inputs:

1. SSOT iterations/s (:meth:`ssot.trainer.Trainer.step`: one forward of 32 + 32 images, the g
   step, the feature step) against plain ResNet-50 cross-entropy training on the same 64 images
   (forward, CE on the 32 source images, backward, Adam step), in fp32 and bf16 autocast.
   Goal: SSOT >= 85 % of plain CE.
2. The trainer's image DataLoader (the paper tasks' default ``num_workers``, capped at the CPUs,
   and all CPUs) in images/s against the model's images/s (SSOT bf16), on generated 300x300
   noise JPEGs in an Office-31 layout in a temporary folder (noise decodes slower than photos);
   100 batches, over several epochs: the trainer starts its workers again every epoch.
3. 1, 2 and 4 trials sharing one GPU (what ``--gpus-per-trial 1, 0.5, 0.25`` does): separate
   processes, each running SSOT bf16 iterations on GPU-resident batches for the same window after
   a common barrier; total iterations/s.

Without CUDA it prints why and exits with status 0.
"""
from __future__ import annotations

import argparse
import multiprocessing as mp
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: import the project and this folder's helpers
    sys.path[:0] = [str(Path(__file__).resolve().parents[1]), str(Path(__file__).resolve().parent)]

from _shared import rate, write_jpegs  # noqa: E402

BATCH = 32
IMAGE = 224
DEFAULT_WORKERS = 4  # SSOTConfig.for_task(<paper task>).num_workers


def _synthetic_task(n: int, image_size: int, classes: int = 31) -> Any:
    import torch
    from torch.utils.data import TensorDataset

    from ssot.data.base import TaskData

    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(n, 3, image_size, image_size, generator=g), torch.arange(n) % classes
    ds = TensorDataset(x, y)
    return TaskData("A2W", ds, ds, ds, ds, [f"c{k}" for k in range(classes)], list(range(10)), (3, image_size, image_size))


def make_trainer(device: str, precision: str, *, batch: int = BATCH, image_size: int = IMAGE) -> tuple[Any, tuple]:
    """A ResNet-50 SSOT :class:`Trainer` (random init) and one ``(xs, ys, xt)`` batch on ``device``."""
    import torch

    from ssot.config import SSOTConfig
    from ssot.trainer import Trainer

    cfg = SSOTConfig.for_task("A2W", pretrained=False, device=device, precision=precision, batch_size=batch,
                              image_size=image_size, resize_size=image_size, source_eval_samples=batch)
    trainer = Trainer(cfg, _synthetic_task(2 * batch, image_size))
    trainer.f.train(); trainer.eta.train(); trainer.g.train()
    g = torch.Generator().manual_seed(1)
    xs = torch.randn(batch, 3, image_size, image_size, generator=g).to(trainer.device)
    xt = torch.randn(batch, 3, image_size, image_size, generator=g).to(trainer.device)
    ys = (torch.arange(batch) % trainer.task.num_classes).to(trainer.device)
    return trainer, (xs, ys, xt)


def ce_step(trainer: Any, xs: Any, ys: Any, xt: Any) -> float:
    """Plain cross-entropy training on the same 64 images: forward all, CE on the source."""
    import torch.nn.functional as F

    import torch

    _, logits = trainer._forward(torch.cat([xs, xt]))
    loss = F.cross_entropy(logits[: xs.shape[0]], ys)
    trainer.opt_fe.zero_grad(set_to_none=True)
    loss.backward()
    trainer.opt_fe.step()
    return loss.item()


def bench_model(device: str = "cuda", *, iters: int = 40, warmup: int = 10, batch: int = BATCH,
                image_size: int = IMAGE) -> dict[str, dict[str, float]]:
    """``{precision: {"ssot": it/s, "ce": it/s}}`` for fp32 and bf16, same batch, same models."""
    out = {}
    for precision in ("fp32", "bf16"):
        trainer, (xs, ys, xt) = make_trainer(device, precision, batch=batch, image_size=image_size)
        out[precision] = {"ssot": rate(lambda: trainer.step(xs, ys, xt), iters=iters, warmup=warmup, device=device),
                          "ce": rate(lambda: ce_step(trainer, xs, ys, xt), iters=iters, warmup=warmup, device=device)}
        del trainer
    return out


def bench_loader(root: Path, workers: int, *, batches: int = 100, device: str = "cuda", image_size: int = IMAGE) -> float:
    """Images/s of the trainer's own training DataLoader (``Trainer._batches``) on ``root``."""
    from ssot.config import SSOTConfig
    from ssot.data import build_task
    from ssot.trainer import Trainer

    cfg = SSOTConfig.for_task("A2W", data_root=str(root), pretrained=False, device=device, num_workers=workers,
                              image_size=image_size, resize_size=max(image_size, 256 * image_size // 224), bottleneck_dims=(8,))
    trainer = Trainer(cfg, build_task(cfg))
    it = trainer._batches(trainer.task.source, seed=0)
    next(it)  # first batch: worker start-up, counted in the epochs that follow anyway
    start = time.perf_counter()
    n = sum(next(it)[0].shape[0] for _ in range(batches))
    return n / (time.perf_counter() - start)


def _trial_worker(barrier: Any, queue: Any, seconds: float, batch: int, image_size: int) -> None:
    import torch

    trainer, (xs, ys, xt) = make_trainer("cuda", "bf16", batch=batch, image_size=image_size)
    for _ in range(5):
        trainer.step(xs, ys, xt)
    torch.cuda.synchronize()
    barrier.wait()
    start, n = time.perf_counter(), 0
    while time.perf_counter() - start < seconds:
        trainer.step(xs, ys, xt)  # .item() in step syncs every iteration
        n += 1
    queue.put(n / (time.perf_counter() - start))


def bench_sharing(n_trials: int, *, seconds: float = 20.0, batch: int = BATCH, image_size: int = IMAGE) -> float:
    """Total SSOT bf16 iterations/s of ``n_trials`` processes sharing the GPU."""
    ctx = mp.get_context("spawn")
    barrier, queue = ctx.Barrier(n_trials), ctx.Queue()
    procs = [ctx.Process(target=_trial_worker, args=(barrier, queue, seconds, batch, image_size)) for _ in range(n_trials)]
    for p in procs:
        p.start()
    rates = [queue.get(timeout=seconds + 180) for _ in procs]
    for p in procs:
        p.join()
    return sum(rates)


def table(model: dict[str, dict[str, float]], loader: dict[int, float], sharing: dict[int, float], gpu: str) -> str:
    """The Markdown report."""
    lines = [f"GPU: {gpu}; random-init ResNet-50, {IMAGE}x{IMAGE}, batch {BATCH} + {BATCH}", "",
             "| measurement | value | ratio |", "| --- | --- | --- |"]
    for precision, r in model.items():
        lines.append(f"| {precision}: SSOT iteration / plain CE iteration (same 64 images) | "
                     f"{r['ssot']:.2f} / {r['ce']:.2f} it/s | SSOT at {100 * r['ssot'] / r['ce']:.0f} % (goal >= 85 %) |")
    model_ips = model["bf16"]["ssot"] * 2 * BATCH
    for workers, ips in loader.items():
        lines.append(f"| DataLoader ({workers} workers, 300x300 JPEGs) / model (SSOT bf16) | "
                     f"{ips:.0f} / {model_ips:.0f} images/s | loader at {100 * ips / model_ips:.0f} % of the model |")
    one = sharing.get(1)
    for n, total in sharing.items():
        ratio = f"{total / one:.2f}x one trial" if one else ""
        lines.append(f"| {n} trial(s) on one GPU (gpus-per-trial {1 / n:g}), SSOT bf16 | {total:.2f} it/s in total | {ratio} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python benchmarks/gpu.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, help="also write the Markdown table here (refuses to overwrite)")
    parser.add_argument("--seconds", type=float, default=20.0, help="measurement window of the GPU-sharing runs")
    args = parser.parse_args(argv)
    import torch

    if not torch.cuda.is_available():
        print("benchmarks/gpu.py: skipped, no CUDA GPU visible (torch.cuda.is_available() is False).")
        return 0
    if args.out is not None and args.out.exists():
        print(f"error: --out {args.out} already exists; choose another path (results are never overwritten).", file=sys.stderr)
        return 2
    from ssot.data.base import usable_workers

    gpu = torch.cuda.get_device_name(0)
    print(f"{gpu}, torch {torch.__version__}: model ...", flush=True)
    model = bench_model("cuda")
    print("data loader ...", flush=True)
    loader = {}
    with tempfile.TemporaryDirectory() as tmp:
        root = write_jpegs(Path(tmp), per_class=40)  # 1240 source images: 38 batches an epoch
        for workers in dict.fromkeys((usable_workers(DEFAULT_WORKERS), usable_workers(64))):
            loader[workers] = bench_loader(root, workers)
    sharing = {}
    for n in (1, 2, 4):
        print(f"{n} trial(s) sharing the GPU ...", flush=True)
        sharing[n] = bench_sharing(n, seconds=args.seconds)
    report = table(model, loader, sharing, gpu)
    print(report, end="")
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        with open(args.out, "x") as fh:
            fh.write(report)
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
