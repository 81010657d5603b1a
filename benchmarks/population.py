"""Populations against single trials on one feature cache, side by side in one run (by hand, not pytest).

    python benchmarks/population.py --cache caches/P2H-s0.pt --task P2H --sections 2 3   # the 2-core goal (below)
    python benchmarks/population.py                                  # CPU: an Office-31-sized cache, short schedule
    python benchmarks/population.py --device cuda                    # a GPU: the goals' settings
    python benchmarks/population.py --sizes 1 16 64 --sections 1     # section 1 only

1. **Member throughput.** Member-iterations/s of one stack of P random configs of the default
   space (:class:`ssot.population.Stack`: one SSOT iteration of every member on the same 32 + 32
   batch) for each P of ``--sizes``, against iterations/s of the single-trial trainer
   (:meth:`ssot.trainer.Trainer.step`) on the same batch, the two timed alternately (medians);
   P = 1 is the population of one, the trainer's own step. Then the **whole epoch** (the
   iterations, the evaluation passes, every metric and validator, DEV's domain classifiers
   included): member-epochs/s of a population of P (one stack, :meth:`ssot.population.Population.adapt_epoch`)
   against epochs/s of the single-trial trainer (:meth:`ssot.trainer.Trainer.adapt_epoch`), timed
   alternately (``--epoch-rounds``). Goal (GPU): >= 20x at P = 64, for the step and for the whole
   epoch. A size whose stacked weights and Adam states would not fit ``--max-memory-gb`` is
   skipped, saying so.
2. **Where a population's epoch goes.** One epoch of a population of ``--screen-configs`` members
   as one stack (with one thread on a CPU), by part: the iterations, the stacked evaluation passes
   over the target and source sets, the scores of every member (each validator inside, DEV's
   Newton solve inside DEV), the one host read of the epoch's table, a checkpoint (``state_dict``
   and ``torch.save``), the per-member result entries of a report (on a GPU each part is timed
   between two synchronisations); the share of evaluation and validators (goal on 2 CPU cores:
   <= 25 %). The epoch timed is the second (DEV warm-started from every member's classifiers of
   the first, as at every later epoch); the first (DEV from zero) is printed beside it. Then, on a
   CPU, the same (second) epoch's wall time with the population's own workers (one
   process and one thread per CPU of its slot, :mod:`ssot.shards`), and as one stack with that
   many torch threads instead.
3. **A screen.** Wall time of ``tune/search.py --features CACHE --population N`` against the
   ``--features`` search of the same N configs one Ray trial each (random search, same seed: the
   same configs, checked), both without early stopping, both through ``run_search`` with the
   search's own division of the machine (:func:`tune.cluster.cpu_share`: a population gets the
   CPUs of its share, a trial one CPU), printed. Goals: a population of 16 P2H configs >= 1.2x
   faster than 16 trials on 2 CPU cores; <= 30 s for an Office-31-sized screen of 64 on one H100.

Without ``--cache``, a synthetic cache with Office-31 A2W's layout is written to a temporary
folder: 2,817 source and 256 target vectors of 2,048 dims (31 classes, 10 in the target), the
paper's bottleneck 1024-512, and on a CPU the schedule is shortened (``--epochs 2
--iters-per-epoch 10 --pretrain-epochs 1``); with ``--cache`` the task's schedule is used. The
report names the device (the CPU model), the load average at the start and end of each section,
and the ratios measured in this run.
"""
from __future__ import annotations

import argparse
import functools
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: import the project and this folder's helpers
    sys.path[:0] = [str(Path(__file__).resolve().parents[1]), str(Path(__file__).resolve().parent)]

from _shared import alternated, load, machine  # noqa: E402

OFFICE_SOURCE, OFFICE_TARGET, OFFICE_DIM = 2817, 256, 2048


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

    from ssot.results.space import default_space, optuna_space

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


def throughput(base: Any, task: Any, sizes: list[int], rounds: int, max_gb: float, device: str, epoch_rounds: int) -> list[dict[str, Any]]:
    """Section 1: per size, one stack's member-iterations/s and the single trial's it/s measured
    alternately with it, then (``epoch_rounds``) member-epochs/s of a whole epoch against the
    single trial's epochs/s (or why the size was skipped)."""
    import torch

    from ssot.population import Population
    from ssot.trainer import Trainer

    base = base.replace(epochs=10_000)  # epochs are timed one after another: no member completes
    trainer = Trainer(base, task)
    src, tgt = trainer.epoch_batches(1)
    (xs, ys), (xt, _) = next(src), next(tgt)
    rows = []
    for size in sizes:
        need = stack_gb(base, task, size)
        if need > max_gb:
            rows.append({"size": size, "note": f"skipped: needs about {need:.1f} GB (--max-memory-gb {max_gb:g})"})
            continue
        population = Population(random_configs(base, size), task, workers=1)  # one stack in this process
        population.pretrain(lambda host: None)  # throughput only: the weights need no pretraining
        single, stacked = alternated(lambda: trainer.step(xs, ys, xt), functools.partial(population.step, xs, ys, xt), rounds, device)
        row: dict[str, Any] = {"size": size, "member_rate": size / stacked, "single_rate": 1 / single}
        if epoch_rounds:
            single, stacked = alternated(trainer.adapt_epoch, population.adapt_epoch, epoch_rounds, device)
            row.update(member_epochs=size / stacked, single_epochs=1 / single)
        rows.append(row)
        del population
        if device == "cuda":
            torch.cuda.empty_cache()
    return rows


#: The functions section 2 times inside one epoch, by the name it prints (indented: inside the one above).
PARTS = {"iterations": ("ssot.method", "train_epoch"), "evaluation passes": ("ssot.evaluation", "collect_stack"),
         "scores of every member": ("ssot.evaluation", "member_scores"),
         "  DEV's domain classifiers": ("ssot.validators", "domain_fit"), "    their Newton solve": ("ssot.validators", "_domain_weights"),
         "  SND": ("ssot.validators", "snd"), "  entropy": ("ssot.validators", "entropy"), "  IM": ("ssot.validators", "im"),
         "  IM-PDA": ("ssot.validators", "im_pda"), "  BNM": ("ssot.validators", "bnm"), "  MixVal": ("ssot.validators", "mixval_counts"),
         "the table's host read": ("ssot.evaluation:Evaluation", "read")}
#: DEV's part.
DEV = "  DEV's domain classifiers"
#: The parts that make "evaluation and validators" (the goal's share).
EVALUATION = ("evaluation passes", "scores of every member", "the table's host read")


def epoch_breakdown(base: Any, task: Any, size: int, device: str) -> dict[str, float]:
    """Section 2: one epoch of a population of ``size`` as one stack (one thread on a CPU), by part
    (the functions of :data:`PARTS`, each timed between two synchronisations on a GPU, a
    checkpoint, the report entries), then on a CPU an epoch with the population's own workers
    and one with as many torch threads (wall time)."""
    import importlib
    import io

    import torch

    from ssot.population import Population
    from tune import members as member_results

    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    spent = dict.fromkeys([*PARTS, "checkpoint", "report entries"], 0.0)
    saved = []
    for name, (module_name, function) in PARTS.items():
        module_name, _, owner = module_name.partition(":")
        module = importlib.import_module(module_name)
        target = getattr(module, owner) if owner else module
        original = getattr(target, function)
        saved.append((target, function, original))

        def timed(*args: Any, _f: Any = original, _name: str = name, **kwargs: Any) -> Any:
            sync()
            start = time.perf_counter()
            try:
                return _f(*args, **kwargs)
            finally:
                sync()
                spent[_name] += time.perf_counter() - start

        setattr(target, function, timed)
    threads = torch.get_num_threads()
    if device == "cpu":
        torch.set_num_threads(1)
    try:
        population = Population(random_configs(base, size), task, workers=1)
        population.pretrain()
        sync()
        start = time.perf_counter()
        population.adapt_epoch()  # the first epoch: DEV from zero (no classifiers of an epoch before)
        sync()
        first = {"first " + name: value for name, value in spent.items()}
        first["first epoch"] = time.perf_counter() - start
        spent.update(dict.fromkeys(spent, 0.0))
        start = time.perf_counter()
        touched = population.adapt_epoch()  # the second: DEV warm-started, as every later epoch
        sync()
        spent["epoch"] = time.perf_counter() - start
        spent.update(first)
    finally:
        for target, function, original in saved:
            setattr(target, function, original)
        torch.set_num_threads(threads)
    start = time.perf_counter()
    torch.save(population.state_dict(), io.BytesIO())
    spent["checkpoint"] = time.perf_counter() - start
    start = time.perf_counter()
    entries = {str(m.index): member_results.epoch_entry(m.epochs[-1], m.record, final=False) for m in touched}
    member_results.report(entries, "target_acc", "max")
    spent["report entries"] = time.perf_counter() - start
    spent["iters"] = population.host.iterations_per_epoch()
    if device == "cuda":  # one stack on one GPU: no workers, no threads to compare
        return spent
    start = time.perf_counter()
    workers = Population(random_configs(base, size), task)  # the population's own division: the config's CPUs
    workers.pretrain()  # its workers start meanwhile: ready when the members are handed out
    spent["start with workers"] = time.perf_counter() - start
    workers.adapt_epoch()
    start = time.perf_counter()
    workers.adapt_epoch()
    spent["epoch with workers"] = time.perf_counter() - start
    spent["workers"] = workers.workers
    start = time.perf_counter()
    workers.close()
    spent["close with workers"] = time.perf_counter() - start
    # the alternative: the same CPUs as torch threads of one stack
    threaded = Population(random_configs(base, size), task, workers=1)
    threaded.pretrain()
    torch.set_num_threads(workers.workers)
    try:
        threaded.adapt_epoch()
        start = time.perf_counter()
        threaded.adapt_epoch()
        spent["epoch with threads"] = time.perf_counter() - start
    finally:
        torch.set_num_threads(threads)
    return spent


def screen(task: str, cache: Path, n: int, args: argparse.Namespace, device: str) -> dict[str, Any]:
    """Section 3: the same ``n`` configs as populations of ``--population-size`` (default: one of
    all ``n``) and as ``n`` Ray trials, each search dividing the machine its own way; ``--rounds``
    rounds, the order alternating (a shared machine's load drifts: each side sees both orders)."""
    import statistics

    from tune.cluster import cpu_share
    from tune.experiment import run_search
    from tune.options import SearchOptions

    base = {"backbone": "features", "features_path": str(cache), "device": device}
    for key in ("epochs", "iters_per_epoch", "pretrain_epochs"):
        if getattr(args, key) is not None:
            base[key] = getattr(args, key)
    sides = {"population": (args.population_size or n, 1.0 if device == "cuda" else 0.0),
             "trials": (None, args.trial_gpus if device == "cuda" else 0.0)}
    out: dict[str, Any] = {label: [] for label in sides}
    with tempfile.TemporaryDirectory() as tmp:
        for round_ in range(args.rounds):
            for label in (list(sides) if round_ % 2 == 0 else list(sides)[::-1]):
                population, gpus = sides[label]
                options = SearchOptions(task=task, num_samples=n, search="random", base=dict(base), seed=0, early_stop=False,
                                        storage_path=str(Path(tmp) / "runs"), name=f"{label}-{round_}", verbose=0,
                                        population=population, gpus_per_trial=gpus)
                cpus, why = cpu_share(options, None, args.num_cpus)
                out[f"{label}_division"] = f"{cpus:g} CPU(s) per trial ({why})"
                before = load()
                start = time.perf_counter()
                outcome = run_search(options, num_cpus=args.num_cpus)
                out[label].append(time.perf_counter() - start)
                print(f"   round {round_ + 1}, {label}: {out[label][-1]:.1f} s wall ({before} before, {load()} after)", flush=True)
                last = outcome.trials.sort_values("epoch").groupby("trial_id").tail(1)
                out[f"{label}_configs"] = sorted(tuple(round(float(v), 12) for v in row)
                                                 for row in last[["lambda_ot", "lambda_ent", "eps", "potential_width"]].to_numpy())
                out[f"{label}_completed"] = int((last["status"] == "completed").sum())
                out[f"{label}_threads"] = outcome.best_config.num_threads if outcome.best_config else None
    out["same_configs"] = out["population_configs"] == out["trials_configs"]
    for label in sides:
        out[f"{label}_median"] = statistics.median(out[label])
    return out


def main(argv: list[str] | None = None) -> int:
    from ssot import cli

    parser = cli.Parser(prog="python benchmarks/population.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--cache", type=Path, help="a feature cache (default: a synthetic Office-31-sized one)")
    parser.add_argument("--task", default="A2W", help="the cache's task (default A2W, the synthetic cache's)")
    parser.add_argument("--sections", type=int, nargs="+", default=[1, 2, 3], choices=(1, 2, 3), help="the sections to run (default all)")
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 16, 64, 256], help="population sizes of section 1")
    parser.add_argument("--iters", type=int, default=10, help="timed iterations per size in section 1 (alternated with the single trial's)")
    parser.add_argument("--epoch-rounds", type=int, default=1,
                        help="timed whole epochs per size in section 1, alternated with the single trial's, after one warm-up (0: none)")
    parser.add_argument("--max-memory-gb", type=float, default=8.0, help="skip sizes whose stack needs more (section 1)")
    parser.add_argument("--screen-configs", type=int, default=16, help="configs of sections 2 and 3 (default 16)")
    parser.add_argument("--population-size", type=int, help="members per population in section 3 (default: all the configs, one population)")
    parser.add_argument("--epochs", type=int, help="adaptation epochs (default: the task's; 2 on a CPU without --cache)")
    parser.add_argument("--iters-per-epoch", type=int, help="iterations per epoch (default: the task's; 10 on a CPU without --cache)")
    parser.add_argument("--pretrain-epochs", type=int, help="pretraining epochs on the cache (default: the task's; 1 on a CPU without --cache)")
    parser.add_argument("--rounds", type=int, default=1, help="rounds of section 3, the order alternating (default 1)")
    parser.add_argument("--trial-gpus", type=float, default=0.25, help="GPUs per trial of the one-config-per-trial search (section 3, GPU)")
    parser.add_argument("--num-cpus", type=int, help="CPUs of the local Ray (default all)")
    parser.add_argument("--threads", type=int, help="torch threads of section 1 (default: torch's; 1 is steadier on a busy machine)")
    args = parser.parse_args(argv)
    import torch

    if args.device == "cuda" and not torch.cuda.is_available():
        print("--device cuda: no CUDA GPU here; nothing measured")
        return 0
    if args.device == "cpu" and args.cache is None:
        args.epochs = 2 if args.epochs is None else args.epochs
        args.iters_per_epoch = 10 if args.iters_per_epoch is None else args.iters_per_epoch
        args.pretrain_epochs = 1 if args.pretrain_epochs is None else args.pretrain_epochs
    from ssot.data.features import load_feature_task

    if args.threads:
        torch.set_num_threads(args.threads)
    print(machine(args.device), flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        cache = args.cache or synthetic_cache(Path(tmp) / "a2w-synthetic.pt")
        task = load_feature_task(cache, args.task)
        base = base_config(args.task, cache, args.device, args)
        sizes = f"{len(task.source)} source + {len(task.target)} target"  # type: ignore[arg-type]
        print(f"cache: {args.cache or 'synthetic Office-31 A2W layout'} ({sizes} "
              f"vectors of {task.input_shape[0]} dims), bottleneck {list(base.bottleneck_dims)}, batch {base.batch_size} + "
              f"{base.batch_size}; epochs {base.epochs} of {base.iters_per_epoch or 'all'} iterations, pretraining {base.pretrain_epochs} epochs",
              flush=True)
        if 1 in args.sections:
            print("1. member-iterations/s (one SSOT iteration of every member on the same batch, one stack):")
            for row in throughput(base, task, args.sizes, args.iters, args.max_memory_gb, args.device, args.epoch_rounds):
                if "note" in row:
                    print(f"   P = {row['size']:4d}: {row['note']}")
                    continue
                print(f"   P = {row['size']:4d}: {row['member_rate']:,.1f} member-it/s vs the single-trial trainer's "
                      f"{row['single_rate']:,.1f} it/s alongside: {row['member_rate'] / row['single_rate']:.1f}x "
                      f"({row['member_rate'] / row['size']:,.2f} population it/s)", flush=True)
                if "member_epochs" in row:
                    print(f"            whole epoch (iterations, evaluation, validators): {row['member_epochs']:,.3f} member-epochs/s vs "
                          f"the single trial's {row['single_epochs']:,.3f} epochs/s alongside: "
                          f"{row['member_epochs'] / row['single_epochs']:.1f}x", flush=True)
            print(f"   goal: >= 20x member throughput at P = 64 on a GPU (the step and the whole epoch); {load()}")
        if 2 in args.sections:
            n = args.screen_configs
            parts = epoch_breakdown(base, task, n, args.device)
            total = parts["epoch"]
            where = "one thread" if args.device == "cpu" else "one GPU"
            first_share = sum(parts["first " + name] for name in EVALUATION)
            print(f"2. the first epoch of a population of {n} (DEV from zero): {parts['first epoch']:.2f} s, evaluation and validators "
                  f"{100 * first_share / parts['first epoch']:.1f} %, DEV's classifiers {100 * parts['first ' + DEV] / parts['first epoch']:.1f} %")
            print(f"   its second epoch ({parts['iters']} iterations; DEV warm-started, as every later epoch) as one stack, {where}: {total:.2f} s")
            for name in [*PARTS, "checkpoint", "report entries"]:
                print(f"   {name:28s} {parts[name]:7.2f} s  {100 * parts[name] / total:5.1f} %")
            share = sum(parts[name] for name in EVALUATION)
            print(f"   evaluation and validators ({', '.join(EVALUATION)}): {share:.2f} s, {100 * share / total:.1f} % of the epoch "
                  f"(goal on 2 CPU cores: <= 25 %); {load()}", flush=True)
            if "epoch with workers" in parts:
                print(f"   the same epoch with the population's {parts['workers']:g} worker process(es), one thread each: "
                      f"{parts['epoch with workers']:.2f} s wall ({total / parts['epoch with workers']:.2f}x); as one stack with "
                      f"{parts['workers']:g} torch threads instead: {parts['epoch with threads']:.2f} s ({total / parts['epoch with threads']:.2f}x); "
                      f"{load()}", flush=True)
                print(f"   with the worker process(es): the start (construction and pretraining, to the members handed out) "
                      f"{parts['start with workers']:.2f} s, the close {parts['close with workers']:.2f} s", flush=True)
        if 3 in args.sections:
            n = args.screen_configs
            print(f"3. screen of {n} configs ({args.task}, no early stopping), {args.rounds} round(s), the order alternating:")
            r = screen(args.task, cache, n, args, args.device)
            print(f"   same configs: {r['same_configs']}; completed {r['population_completed']} and {r['trials_completed']}")
            print(f"   --population {args.population_size or n}: {r['population_division']}, num_threads {r['population_threads']}: "
                  f"median {r['population_median']:.1f} s wall")
            print(f"   one Ray trial per config: {r['trials_division']}, num_threads {r['trials_threads']}: median {r['trials_median']:.1f} s wall")
            print(f"   ratio (trials / population): {r['trials_median'] / r['population_median']:.2f}x "
                  f"(per round: {', '.join(f'{t / p:.2f}x' for t, p in zip(r['trials'], r['population']))})", flush=True)
            print("   goals: >= 1.2x for 16 P2H configs on 2 CPU cores; <= 30 s for an Office-31-sized 64-config screen on one H100")
    return 0


if __name__ == "__main__":
    sys.exit(main())
