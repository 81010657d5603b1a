"""Populations against single trials on one feature cache, side by side in one run (by hand, not pytest).

    python benchmarks/population.py                                  # CPU: an Office-31-sized cache, short schedule
    python benchmarks/population.py --cache p2h.pt --task P2H        # a real cache (python -m ssot.features)
    python benchmarks/population.py --device cuda                    # a GPU: the goals' settings
    python benchmarks/population.py --sizes 1 16 64 --skip-screen    # section 1 only

1. **Member throughput.** Member-iterations/s of :class:`ssot.population.Population` (P random
   configs of the default space, one SSOT iteration of every member on the same 32 + 32 batch)
   for each P of ``--sizes``, against iterations/s of the single-trial trainer
   (:meth:`ssot.trainer.Trainer.step`) on the same batch, the two timed alternately (medians). Goal (GPU): >= 20x at P = 64. A size
   whose stacked weights and Adam states would not fit ``--max-memory-gb`` is skipped, saying so.
2. **Where a population's time goes.** One epoch of a population of 64: its iterations, its
   per-member evaluations, and within them DEV's domain classifier (one logistic regression per
   member and epoch).
3. **A screen of 64 configs.** Wall time of ``tune/search.py --features CACHE --population 64``
   against today's ``--features`` search of the same 64 configs (one Ray trial per config; random
   search, same seed: the same configs, checked), both without early stopping, through the same
   ``run_search``; the population, one trial, gets every CPU (``--cpus-per-trial``), today's
   search one CPU per trial (its default). Goals: >= 3x on 2 CPU cores; <= 30 s for an Office-31-sized screen on one H100.

Without ``--cache``, a synthetic cache with Office-31 A2W's layout is written to a temporary
folder: 2,817 source and 256 target vectors of 2,048 dims (31 classes, 10 in the target), the
paper's bottleneck 1024-512. On a CPU the schedule is shortened (``--epochs 2 --iters-per-epoch
10``; on a GPU the task's). The printed report names the device; ratios are measured in this run.
"""
from __future__ import annotations

import argparse
import math
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: import the project and this folder's helpers
    sys.path[:0] = [str(Path(__file__).resolve().parents[1]), str(Path(__file__).resolve().parent)]

from _shared import alternated  # noqa: E402


OFFICE_SOURCE, OFFICE_TARGET, OFFICE_DIM = 2817, 256, 2048


def device_name(device: str) -> str:
    import torch

    if device == "cuda":
        return f"GPU {torch.cuda.get_device_name(0)}"
    model = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                  if line.startswith("model name")), platform.processor() or "unknown CPU") if Path("/proc/cpuinfo").exists() else platform.processor()
    return f"CPU {model}, {os.cpu_count()} cores, {torch.get_num_threads()} torch threads"


def synthetic_cache(path: Path) -> Path:
    """An Office-31-sized cache (A2W's layout) of class-structured non-negative vectors."""
    import torch

    from ssot.data.features import save_feature_cache
    from ssot.data.registry import DATASETS

    spec = DATASETS["office31"]
    classes = list(spec.classes)
    target_classes = list(spec.target_classes)
    g = torch.Generator().manual_seed(0)
    means = torch.rand(len(classes), OFFICE_DIM, generator=g) * 2
    ys = torch.arange(OFFICE_SOURCE) % len(classes)
    yt = torch.tensor(target_classes)[torch.arange(OFFICE_TARGET) % len(target_classes)]
    shift = 0.3 * torch.rand(OFFICE_DIM, generator=g)
    xs = (means[ys] + torch.randn(OFFICE_SOURCE, OFFICE_DIM, generator=g)).relu()
    xt = (means[yt] + shift + torch.randn(OFFICE_TARGET, OFFICE_DIM, generator=g)).relu()
    save_feature_cache(path, "A2W", classes, target_classes, (xs, ys), (xt, yt))
    return path


def base_config(task: str, cache: Path, device: str, args: argparse.Namespace) -> Any:
    from ssot.config import SSOTConfig

    changes: dict[str, Any] = {"backbone": "features", "features_path": str(cache), "device": device,
                               "num_threads": args.threads or 0}
    if args.epochs is not None:
        changes["epochs"] = args.epochs
    if args.iters_per_epoch is not None:
        changes["iters_per_epoch"] = args.iters_per_epoch
    if args.pretrain_epochs is not None:
        changes["pretrain_epochs"] = args.pretrain_epochs
    return SSOTConfig.for_task(task, **changes)


def random_configs(base: Any, n: int, seed: int = 0) -> list[Any]:
    """``n`` configs of the default space drawn by Optuna's random sampler (the search's)."""
    import optuna

    from tune.space import default_space, optuna_space

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=seed))
    return [base.replace(**study.ask(optuna_space(default_space())).params) for _ in range(n)]


def stack_gb(base: Any, task: Any, size: int) -> float:
    """Memory of a population's stacked weights, gradients and Adam states (GB)."""
    dims = [task.input_shape[0], *base.bottleneck_dims, task.num_classes]
    fe = sum(a * b + b for a, b in zip(dims[:-1], dims[1:]))
    d = base.bottleneck_dims[-1] if base.bottleneck_dims else task.input_shape[0]
    g = d * 1024 + 2 * 1024 + 1  # the widest potential of the space
    cost = base.batch_size ** 2 * d * 3  # the cost matrix's (b_s, b_t, d) differences, their gradient
    return 4 * ((fe + g) * 4 + cost) * size / 1e9


def throughput(base: Any, task: Any, sizes: list[int], rounds: int, max_gb: float, device: str) -> list[dict[str, Any]]:
    """Section 1: per size, the population's member-iterations/s and the single trial's it/s
    measured alternately with it (or why the size was skipped)."""
    import torch

    from ssot.population import Population
    from ssot.trainer import Trainer

    trainer = Trainer(base, task)
    src, tgt = trainer.epoch_batches(1)
    (xs, ys), (xt, _) = next(src), next(tgt)
    rows = []
    for size in sizes:
        need = stack_gb(base, task, size)
        if need > max_gb:
            rows.append({"size": size, "note": f"skipped: needs about {need:.1f} GB (--max-memory-gb {max_gb:g})"})
            continue
        population = Population(random_configs(base, size), task)
        population.pretrain(lambda host: None)  # throughput only: the weights need no pretraining
        single, stacked = alternated(lambda: trainer.step(xs, ys, xt), lambda: population.step(xs, ys, xt), rounds, device)
        rows.append({"size": size, "member_rate": size / stacked, "single_rate": 1 / single})
        del population
        if device == "cuda":
            torch.cuda.empty_cache()
    return rows


def epoch_breakdown(base: Any, task: Any, size: int) -> dict[str, float]:
    """Section 2: one epoch of a population of ``size``: iterations, evaluations, DEV inside them."""
    from ssot import validators
    from ssot.population import Population

    spent = {"dev": 0.0}
    original = validators.dev

    def timed_dev(*args: Any) -> float:
        start = time.perf_counter()
        try:
            return original(*args)
        finally:
            spent["dev"] += time.perf_counter() - start

    population = Population(random_configs(base, size), task)
    population.pretrain(lambda host: None)
    validators.dev = timed_dev
    try:
        population.adapt_epoch()
    finally:
        validators.dev = original
    return {"train": population.timing["train_s"], "eval": population.timing["eval_s"], "dev": spent["dev"],
            "iters": population.host.iterations_per_epoch()}


def screen(task: str, cache: Path, n: int, args: argparse.Namespace, device: str) -> dict[str, Any]:
    """Section 3: the same ``n`` configs as one population and as ``n`` Ray trials."""
    from tune.experiment import run_search
    from tune.options import SearchOptions

    base = {"backbone": "features", "features_path": str(cache), "device": device}
    for key in ("epochs", "iters_per_epoch", "pretrain_epochs"):
        if getattr(args, key) is not None:
            base[key] = getattr(args, key)
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        cpus = args.num_cpus or os.cpu_count() or 1
        size = args.population_size or n
        # populations of `size`: one holding every config gets the whole machine (all CPUs as threads,
        # one GPU), smaller ones share it; today's search runs one trial per CPU (or per --trial-gpus share)
        per_population = float(max(1, cpus // math.ceil(n / size)))
        for label, population, gpus, cpus_per_trial in (("population", size, 1.0 if device == "cuda" else 0.0, per_population),
                                                        ("trials", None, args.trial_gpus if device == "cuda" else 0.0, 1.0)):
            options = SearchOptions(task=task, num_samples=n, search="random", base=dict(base), seed=0, early_stop=False,
                                    storage_path=str(Path(tmp) / "runs"), name=label, verbose=0, population=population,
                                    gpus_per_trial=gpus, cpus_per_trial=cpus_per_trial)
            start = time.perf_counter()
            outcome = run_search(options, num_cpus=args.num_cpus)
            out[label] = time.perf_counter() - start
            last = outcome.trials.sort_values("epoch").groupby("trial_id").tail(1)
            out[f"{label}_configs"] = sorted(round(v, 12) for v in last["lambda_ot"])
            out[f"{label}_completed"] = int((last["status"] == "completed").sum())
    out["same_configs"] = out["population_configs"] == out["trials_configs"]
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python benchmarks/population.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--cache", type=Path, help="a feature cache (default: a synthetic Office-31-sized one)")
    parser.add_argument("--task", default="A2W", help="the cache's task (default A2W, the synthetic cache's)")
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 16, 64, 256], help="population sizes of section 1")
    parser.add_argument("--iters", type=int, default=10, help="timed iterations per size in section 1 (alternated with the single trial's)")
    parser.add_argument("--max-memory-gb", type=float, default=8.0, help="skip sizes whose stack needs more (section 1)")
    parser.add_argument("--screen-configs", type=int, default=64, help="configs of the screen of section 3")
    parser.add_argument("--population-size", type=int, help="members per population in section 3 (default: all the configs, one population)")
    parser.add_argument("--epochs", type=int, help="adaptation epochs (default: 2 on a CPU, the task's on a GPU)")
    parser.add_argument("--iters-per-epoch", type=int, help="iterations per epoch (default: 10 on a CPU, the task's on a GPU)")
    parser.add_argument("--pretrain-epochs", type=int, help="pretraining epochs on the cache (default: 1 on a CPU, the task's on a GPU)")
    parser.add_argument("--trial-gpus", type=float, default=0.25, help="GPUs per trial of today's search (section 3, GPU)")
    parser.add_argument("--num-cpus", type=int, help="CPUs of the local Ray (default all)")
    parser.add_argument("--skip-screen", action="store_true", help="sections 1 and 2 only")
    parser.add_argument("--threads", type=int, help="torch threads of sections 1 and 2 (default: torch's; 1 is steadier on a busy machine)")
    args = parser.parse_args(argv)
    import torch

    if args.device == "cuda" and not torch.cuda.is_available():
        print("--device cuda: no CUDA GPU here; nothing measured")
        return 0
    if args.device == "cpu":
        args.epochs = 2 if args.epochs is None else args.epochs
        args.iters_per_epoch = 10 if args.iters_per_epoch is None else args.iters_per_epoch
        args.pretrain_epochs = 1 if args.pretrain_epochs is None else args.pretrain_epochs
    from ssot.data.features import load_feature_task

    if args.threads:
        torch.set_num_threads(args.threads)
    print(f"device: {device_name(args.device)}; torch {torch.__version__}; load average {os.getloadavg()[0]:.1f}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        cache = args.cache or synthetic_cache(Path(tmp) / "a2w-synthetic.pt")
        task = load_feature_task(cache, args.task)
        base = base_config(args.task, cache, args.device, args)
        print(f"cache: {args.cache or 'synthetic Office-31 A2W layout'} ({len(task.source)} source + {len(task.target)} target "
              f"vectors of {task.input_shape[0]} dims), bottleneck {list(base.bottleneck_dims)}, batch {base.batch_size} + "
              f"{base.batch_size}", flush=True)
        print("1. member-iterations/s (one SSOT iteration of every member on the same batch):")
        rows = throughput(base, task, args.sizes, args.iters, args.max_memory_gb, args.device)
        for row in rows:
            if "note" in row:
                print(f"   P = {row['size']:4d}: {row['note']}")
            else:
                print(f"   P = {row['size']:4d}: {row['member_rate']:,.1f} member-it/s vs the single-trial trainer's "
                      f"{row['single_rate']:,.1f} it/s alongside: {row['member_rate'] / row['single_rate']:.1f}x "
                      f"({row['member_rate'] / row['size']:,.2f} population it/s)", flush=True)
        print("   goal: >= 20x member throughput at P = 64 on a GPU")
        parts = epoch_breakdown(base, task, 64)
        total = parts["train"] + parts["eval"]
        print(f"2. one epoch of a population of 64 ({parts['iters']} iterations): {total:.1f} s = iterations {parts['train']:.1f} s "
              f"({100 * parts['train'] / total:.0f} %) + 64 evaluations {parts['eval']:.1f} s ({100 * parts['eval'] / total:.0f} %), "
              f"of which DEV's domain classifiers {parts['dev']:.1f} s ({100 * parts['dev'] / total:.0f} % of the epoch)", flush=True)
        if not args.skip_screen:
            n = args.screen_configs
            r = screen(args.task, cache, n, args, args.device)
            print(f"3. screen of {n} configs ({args.task}, epochs {base.epochs}, iterations/epoch {args.iters_per_epoch or 'all'}, "
                  f"pretraining {base.pretrain_epochs} epochs, no early stopping; same configs: {r['same_configs']}):")
            print(f"   --population {args.population_size or n}: {r['population']:.1f} s wall | one Ray trial per config: {r['trials']:.1f} s wall | "
                  f"ratio {r['trials'] / r['population']:.2f}x", flush=True)
            print("   goals: >= 3x on 2 CPU cores; <= 30 s for an Office-31-sized 64-config screen on one H100")
    return 0


if __name__ == "__main__":
    sys.exit(main())
