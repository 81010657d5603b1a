"""Measure this machine's rates (:mod:`tune.rates`) with a short calibration of every stage: :func:`calibrate`.

Each stage's own code runs briefly on generated data of each dataset's real sizes and class
counts (the embedded datasets are generated already: their own tasks are used), and each unit of
the cost model (:mod:`tune.costs`) is timed:

runs on images (per backbone)
    a :class:`ssot.trainer.Trainer` of the task's config (random initial weights: the cost is the
    same) with one pretraining pass, ``CALIBRATION_ITERS`` SSOT iterations and its evaluations, on
    the task (embedded) or on random images of the config's size and the dataset's classes; a
    feature extraction pass; and in a new Ray worker, its start (imports, the task's data);
the screen (per dataset)
    a :class:`ssot.population.Population` of the study's ``P`` members (and of ``P / 4``) on
    random features of the dataset's sizes (source evaluation set, target, feature width,
    classes), the machine's CPUs shared as a screen shares them; the search's fixed cost from a
    real search of two configs on a generated cache (:func:`tune.experiment.run_search`);
the report
    the dashboard and the atlas (``python -m analysis.sensitivity``, ``python -m analysis.atlas``,
    as the study runs them) on experiments of the study's size made from that search, and their
    processes' start alone (``--help``).

Ray is started (or joined) as the study starts it; its start is timed too. All files go to a
temporary folder, removed at the end.
"""
from __future__ import annotations

import contextlib
import json
import math
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from ssot.config import SSOTConfig
from ssot.data.registry import DATASETS, task
from tune.costs import TaskSize, trial_epochs
from tune.rates import ModelRates, Rates, ReportRates, ScreenRates
from tune.stages import StudyOptions, image_config, say

__all__ = ["calibrate", "CALIBRATION_ITERS", "machine_label"]

Log = Callable[[str], None]
#: SSOT iterations timed per backbone (image backbones on a CPU: fewer).
CALIBRATION_ITERS = 20


def machine_label(device: str, cpus: int) -> str:
    """The machine in words: the GPU's name, or the CPU's model and cores."""
    if device == "cuda":
        import torch

        return f"{torch.cuda.device_count()} x {torch.cuda.get_device_name(0)}"
    info = Path("/proc/cpuinfo")
    names = [line.split(":", 1)[1].strip() for line in (info.read_text().splitlines() if info.exists() else [])
             if line.startswith("model name")]
    return f"{cpus} CPU cores ({names[0] if names else platform.processor() or 'unknown CPU'})"


def _sync(device: Any) -> None:
    if getattr(device, "type", device) == "cuda":
        import torch

        torch.cuda.synchronize()


@contextlib.contextmanager
def _timed(device: Any, out: list[float]) -> Iterator[None]:
    _sync(device)
    start = time.perf_counter()
    yield
    _sync(device)
    out.append(time.perf_counter() - start)


# ------------------------------------------------------------------------------------ stand-in data
def _partial(spec_name: str, classes: int) -> list[int]:
    spec = DATASETS[spec_name]
    return spec.target_classes if spec.target_class_names else list(range(max(1, classes // 2)))


def _random_task(name: str, dataset: str, classes: int, shape: tuple[int, ...], n_source: int, n_target: int, seed: int = 0) -> Any:
    """A :class:`ssot.data.base.TaskData` of random inputs of ``shape``: the sizes and classes of a
    task, none of its pixels (the cost of a step does not depend on them)."""
    import torch
    from torch.utils.data import TensorDataset

    from ssot.data.base import TaskData

    gen = torch.Generator().manual_seed(seed)
    partial = _partial(dataset, classes)
    ys = torch.arange(n_source) % classes
    yt = torch.tensor(partial)[torch.arange(n_target) % len(partial)]
    xs, xt = torch.randn(n_source, *shape, generator=gen), torch.randn(n_target, *shape, generator=gen)
    source, target = TensorDataset(xs, ys), TensorDataset(xt, yt)
    names = list(DATASETS[dataset].classes) or [str(k) for k in range(classes)]
    return TaskData(name, source, source, target, target, names, partial, tuple(shape))


# ------------------------------------------------------------------------------------ runs on images
def _model_rates(config: SSOTConfig, size: TaskSize, threads: int, log: Log) -> tuple[ModelRates, dict[str, str], float]:
    """The rates of runs of ``config``'s backbone, measured in this process, what they were measured
    on, and the seconds of the calibration's run alone (set-up, pretraining pass, one epoch)."""
    import torch
    from torch.utils.data import DataLoader

    from ssot.data import build_task
    from ssot.trainer import Trainer, resolve_device

    device = resolve_device(config.device)
    embedded = not task(config.task).spec.on_disk
    iters = CALIBRATION_ITERS if embedded or device.type == "cuda" else 2
    # random weights cost what ImageNet's do; random images in memory need no DataLoader workers to decode them
    cal = config.replace(pretrained=False, pretrain_epochs=1, epochs=1, iters_per_epoch=iters, num_threads=threads,
                         num_workers=config.num_workers if embedded else 0)
    torch.set_num_threads(threads)
    if embedded:
        build_task(cal)  # its first build (rendering, in a new worker too) is the worker's start, timed below
        data = None
        where = f"{config.task}'s own data ({size.n_source} + {size.n_target} images)"
    else:
        data = _stand_in(cal, size)
        where = f"random {cal.image_size}x{cal.image_size} images, {size.classes} classes"
    t: list[float] = []
    with _timed(device, t):
        trainer = Trainer(cal, build_task(cal) if embedded else data)
    with _timed(device, t):
        trainer.pretrain()
    with _timed(device, t):
        trainer.evaluate()
    with _timed(device, t):
        trainer.adapt_epoch()
    build, pretrain, evaluation, epoch = t
    pre_iters = trainer.batches.per_pass(trainer.source_train)
    images = len(trainer.task.target_eval) + len(trainer.source_eval_subset)  # type: ignore[arg-type]
    loader = DataLoader(trainer.task.target_eval, batch_size=cal.eval_batch_size)
    backbone = trainer.f.backbone.eval()
    with torch.no_grad(), _timed(device, t):
        encoded = sum(backbone(x.to(device)).shape[0] for x, _ in loader)
    rates = ModelRates(ce_iter_s=max(0.0, pretrain - evaluation) / pre_iters, ssot_iter_s=max(0.0, epoch - evaluation) / iters,
                       eval_img_s=evaluation / images, encode_img_s=t[-1] / max(1, encoded), run_s=build, worker_s=0.0)
    log(f"calibration: {config.backbone} runs on {where}: pretraining iteration {1000 * rates.ce_iter_s:.1f} ms, "
        f"SSOT iteration {1000 * rates.ssot_iter_s:.1f} ms, evaluation {1000 * rates.eval_img_s:.3f} ms/image, "
        f"set-up {build:.2f} s ({threads} thread(s))")
    what = f"measured on this machine by tune/calibrate.py: {where}, {threads} torch thread(s)"
    return rates, {f"models.{config.backbone}": what}, build + pretrain + epoch


def _probe(config: dict[str, Any]) -> float:
    """In a Ray worker: what a run's first start costs there (the imports of a run, the task's data)."""
    start = time.perf_counter()
    from ssot.config import SSOTConfig
    from ssot.data import build_task
    from ssot.trainer import Trainer  # noqa: F401  (everything a run imports)

    if not task(config["task"]).spec.on_disk:
        build_task(SSOTConfig.from_dict(config))
    return time.perf_counter() - start


def _timed_run(config: dict[str, Any], size: TaskSize) -> float:
    """In a Ray worker: the seconds of one run of ``config`` (its record discarded), on the task's own
    data (embedded) or on :func:`_stand_in` images of its sizes."""
    from ssot.config import SSOTConfig
    from ssot.trainer import run

    cal = SSOTConfig.from_dict(config)
    data = None if not task(cal.task).spec.on_disk else _stand_in(cal, size)
    start = time.perf_counter()
    run(cal, task=data)
    return time.perf_counter() - start


def _stand_in(config: SSOTConfig, size: TaskSize) -> Any:
    """Random images of ``config``'s size for a benchmark task's calibration: a few batches of source,
    two of target, the dataset's classes."""
    from ssot.trainer import resolve_device

    n_source = config.batch_size * (2 if resolve_device(config.device).type == "cpu" else 8)
    return _random_task(config.task, size.dataset, size.classes, (3, config.image_size, config.image_size), n_source,
                        2 * config.batch_size)


#: A calibration run alone longer than this is not repeated several at once (ResNet-50 on CPUs: minutes
#: and gigabytes each); its runs are taken not to slow each other.
SHARED_LIMIT_S = 60.0


def _workers(config: SSOTConfig, size: TaskSize, cpus_per_run: float, gpus: float, slots: int, alone: float) -> tuple[float, float | None]:
    """In Ray, as confirmation runs them: the start of ``slots`` new workers at once (seconds until
    all have the imports and data of a run), then ``slots`` runs of ``config`` at once: their mean
    seconds over ``alone`` (how runs sharing the machine slow each other; None when not measured:
    one slot, or a run alone longer than :data:`SHARED_LIMIT_S`)."""
    import ray

    timed = ray.remote(num_cpus=cpus_per_run, num_gpus=gpus)(_timed_run)
    short = alone <= SHARED_LIMIT_S
    start = time.perf_counter()
    if short:  # each worker's first run, of no epoch: its imports, data, first evaluation (what a stage's first runs pay)
        ray.get([timed.remote(config.replace(pretrain_epochs=0, epochs=0).to_dict(), size) for _ in range(slots)])
    else:
        ray.get([ray.remote(num_cpus=cpus_per_run, num_gpus=gpus)(_probe).remote(config.to_dict()) for _ in range(slots)])
    started = time.perf_counter() - start
    if slots < 2 or not short:
        return started, None
    times = ray.get([timed.remote(config.to_dict(), size) for _ in range(slots)])
    return started, max(1.0, sum(times) / len(times) / alone)


# ------------------------------------------------------------------------------------ the screen
def _members(config: SSOTConfig, count: int, seed: int = 0) -> list[SSOTConfig]:
    """``count`` configs of the search space's default ranges (seeded), as a screen samples them."""
    import numpy as np

    from ssot.results.space import default_space

    rng = np.random.default_rng(seed)
    space, out = default_space(), []
    for _ in range(count):
        values: dict[str, Any] = {}
        for name, spec in space.items():
            if spec["type"] == "loguniform":
                values[name] = float(math.exp(rng.uniform(math.log(spec["low"]), math.log(spec["high"]))))
            elif spec["type"] == "choice":
                values[name] = spec["values"][int(rng.integers(len(spec["values"])))]
        out.append(config.replace(**values))
    return out


def _screen_rates(options: StudyOptions, config: SSOTConfig, size: TaskSize, cpus: int, log: Log) -> tuple[ScreenRates, str]:
    from ssot.population import Population

    iters = CALIBRATION_ITERS
    data = _random_task(config.task, size.dataset, size.classes, (size.feature_dim,), max(config.batch_size, size.n_source_eval), size.n_target)
    threads = 1 if config.device == "cuda" else cpus  # a screen's population: the machine's CPUs (tune.cluster.cpu_share)
    base = config.replace(backbone="features", features_path="generated", pretrain_epochs=1, epochs=1, iters_per_epoch=iters,
                          num_threads=threads)
    big = options.members
    points = []
    for members in dict.fromkeys((big, max(2, big // 4) if big > 4 else big)):  # a line through two sizes, or one
        population = Population(_members(base, members), data)
        population.fit()
        points.append((members, population.timing))
    images = size.n_target + min(size.n_source_eval, len(data.source))

    def line(key: str, per: float) -> tuple[float, float]:
        (p1, t1), (p2, t2) = points[0], points[-1]
        y1, y2 = t1[key] / per, t2[key] / per
        slope = (y1 - y2) / (p1 - p2) if p1 != p2 else y1 / p1
        return max(0.0, y1 - slope * p1), max(0.0, slope)

    iter_s, eval_s = line("train_s", iters), line("eval_s", images)
    pre_iters = max(1, len(data.source) // base.batch_size)
    host_eval = images * (eval_s[0] + eval_s[1])
    pretrain = max(0.0, points[0][1]["pretrain_s"] - host_eval) / pre_iters
    log(f"calibration: {size.dataset} screen (features {size.feature_dim}-d, {size.n_target} target + {images - size.n_target} "
        f"source images): a stacked iteration {1000 * iter_s[0]:.1f} + {1000 * iter_s[1]:.2f} ms per member, evaluation "
        f"{1000 * eval_s[0]:.3f} + {1000 * eval_s[1]:.3f} ms per image and member")
    return ScreenRates(iter_s=iter_s, eval_img_s=eval_s, pretrain_iter_s=pretrain, search_s=0.0), (
        f"measured on this machine by tune/calibrate.py: populations of {' and '.join(str(p) for p, _ in points)} random "
        f"configs on random features of {size.dataset}'s sizes, {threads} CPU(s)")


def _search_seconds(options: StudyOptions, config: SSOTConfig, size: TaskSize, screen: ScreenRates, folder: Path) -> tuple[float, Path]:
    """A real search of two configs (one population, one epoch of 2 iterations) on a generated cache:
    its wall time beyond the work the screen's rates count: the search's fixed cost. Returns it and
    the experiment's folder."""
    from ssot.data.features import save_feature_cache
    from tune.experiment import run_search
    from tune.options import SearchOptions

    data = _random_task(config.task, size.dataset, size.classes, (size.feature_dim,), 2 * config.batch_size, config.batch_size)
    cache = folder / f"{config.task}.pt"
    source, target = data.source.tensors, data.target.tensors
    save_feature_cache(cache, config.task, data.class_names, data.target_classes, source, target)
    base = {k: v for k, v in options.base.items() if k not in ("num_threads", "epochs", "pretrain_epochs", "iters_per_epoch")}
    base.update(backbone="features", features_path=str(cache), epochs=1, pretrain_epochs=1, iters_per_epoch=2)
    search = SearchOptions(task=config.task, num_samples=2, search="random", base=base, early_stop=False,
                           storage_path=str(folder / "searches"), name="calibration", verbose=0, population=2)
    start = time.perf_counter()
    outcome = run_search(search, address=options.address, num_cpus=options.num_cpus)
    wall = time.perf_counter() - start
    images = len(target[0]) + len(source[0])
    work = 2 * screen.iteration(2) + screen.evaluation(2, images) + 2 * screen.pretrain_iter_s + screen.evaluation(1, images)
    return max(0.0, wall - work), Path(outcome.path)


# ------------------------------------------------------------------------------------ the report
def _command_seconds(module: str, args: list[str]) -> float:
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", module, *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"calibration: python -m {module} {' '.join(args)} failed: {(done.stderr or done.stdout)[-500:]}")
    return time.perf_counter() - start


def _study_sized(experiment: Path, out: Path, task_name: str, trial_epochs: list[int], epochs: int) -> Path:
    """An experiment of ``len(trial_epochs)`` trials, trial ``k`` reaching epoch ``trial_epochs[k]`` of
    ``epochs`` (a screen's ASHA), made from a real search's files (its columns and metadata; values
    drawn at random, seeded) for timing the report's pages."""
    import numpy as np
    import pandas as pd

    meta = json.loads((experiment / "experiment.json").read_text())
    frame = pd.read_csv(experiment / "trials.csv", dtype={"trial_id": str})
    template = frame.iloc[-1].to_dict()
    rng = np.random.default_rng(0)
    rows = []
    for k, reached in enumerate(trial_epochs):
        params = {"lambda_ot": 10 ** rng.uniform(-3, 1), "lambda_ent": 10 ** rng.uniform(-3, 1), "eps": 10 ** rng.uniform(-2, 1),
                  "potential_width": int(rng.choice([64, 128, 256, 512, 1024]))}
        level = 0.9 - 0.5 * k / len(trial_epochs)  # trial c0000 is the best (reaches the last epoch, first of its population)
        for e in range(1, reached + 1):
            row = {**template, **{name: value for name, value in params.items() if name in template}}
            row.update(trial_id=f"c{k:04d}", epoch=e, task=task_name, status="completed" if reached == epochs else "early-stopped")
            for col in ("target_acc", "source_acc"):
                if col in row:
                    row[col] = round(level + 0.01 * e / epochs, 6)
            rows.append(row)
    meta.update(task=task_name, num_samples=len(trial_epochs), max_epochs=epochs, status="finished", best_trial="c0000")
    base = dict(meta.get("base_config") or {})
    base.update(task=task_name, epochs=epochs)
    meta["base_config"] = base
    out.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows, columns=list(frame.columns)).to_csv(out / "trials.csv", index=False)
    (out / "best_config.json").write_text(json.dumps(base, indent=2) + "\n")
    (out / "experiment.json").write_text(json.dumps(meta, indent=2) + "\n")
    return out


def _report_rates(options: StudyOptions, experiment: Path, folder: Path, epochs: int, log: Log) -> ReportRates:
    flags = [] if options.images else ["--no-images"]
    bootstrap = 200 if options.bootstrap is None else options.bootstrap
    reached = trial_epochs(options, epochs)
    trials = len(reached)
    first = _study_sized(experiment, folder / "report" / "A", "A", reached, epochs)
    if len(options.tasks) >= 2:
        _study_sized(experiment, folder / "report" / "B", "B", reached, epochs)
    dash0 = _command_seconds("analysis.sensitivity", ["--help"])
    plain = _command_seconds("analysis.sensitivity", [str(first), "--out", str(folder / "d0.html"), "--bootstrap", "0", *flags])
    rows = sum(reached)
    row_s = max(0.0, plain - dash0) / rows
    boot_s = 0.0
    if bootstrap:
        booted = _command_seconds("analysis.sensitivity", [str(first), "--out", str(folder / "d1.html"), "--bootstrap", str(bootstrap), *flags])
        boot_s = max(0.0, booted - plain) / (bootstrap * trials)
    atlas0 = atlas = 0.0
    if len(options.tasks) >= 2:  # a study of one task has no atlas
        atlas0 = _command_seconds("analysis.atlas", ["--help"])
        atlas = _command_seconds("analysis.atlas", [str(folder / "report"), "--out", str(folder / "atlas"), *flags,
                                                    *(["--bootstrap", str(options.bootstrap)] if options.bootstrap is not None else [])])
    log(f"calibration: a dashboard of {trials} trials ({rows} trial-epochs) {plain:.1f} s"
        + (f" ({booted:.1f} s with {bootstrap} bootstrap resamples)" if bootstrap else "")
        + (f", the atlas of 2 tasks {atlas:.1f} s" if atlas else ""))
    return ReportRates(dashboard_s=dash0, dashboard_row_s=row_s, dashboard_boot_s=boot_s, atlas_s=atlas0,
                       atlas_task_s=max(0.0, atlas - atlas0) / 2, index_s=dash0)  # the index page: an analysis process's start


# ------------------------------------------------------------------------------------ all of it
def calibrate(options: StudyOptions, sizes: Mapping[str, TaskSize], *, log: Log = say) -> Rates:
    """Measure the rates of this machine for the study of ``options`` (module docstring): the
    backbones and datasets of its tasks (``sizes``: :func:`tune.costs.sizes_for`)."""
    import ray
    import torch

    from ssot.trainer import resolve_device
    from tune.cluster import connected
    from tune.options import SearchOptions

    first = image_config(options, options.tasks[0])
    device = resolve_device(first.device).type
    cpus = options.num_cpus or os.cpu_count() or 1
    gpus = torch.cuda.device_count() if device == "cuda" else 0
    threads = max(1, int(options.cpus_per_run))
    by_dataset: dict[str, str] = {}
    for t in options.tasks:
        by_dataset.setdefault(sizes[t].dataset, t)
    models: dict[str, ModelRates] = {}
    screens: dict[str, ScreenRates] = {}
    sources: dict[str, str] = {}
    started = time.perf_counter()
    fresh = not ray.is_initialized()
    request = SearchOptions(task="", gpus_per_trial=options.gpus_per_run, cpus_per_trial=options.cpus_per_run, verbose=0)
    with connected(request, options.cpus_per_run, address=options.address, num_cpus=options.num_cpus), \
            tempfile.TemporaryDirectory(prefix="ssot-calibration-") as tmp:
        ray_start = time.perf_counter() - started if fresh else 0.0
        folder = Path(tmp)
        for dataset, t in by_dataset.items():
            config = image_config(options, t)
            if config.backbone not in models:
                models[config.backbone], more, alone = _model_rates(config, sizes[t], threads, log)
                sources.update(more)
                model = models[config.backbone]
                slots = max(1, gpus if gpus else int(cpus // options.cpus_per_run))
                on_disk = task(t).spec.on_disk
                cal = config.replace(pretrained=False, pretrain_epochs=1, epochs=1, num_threads=threads,
                                     iters_per_epoch=CALIBRATION_ITERS if not on_disk or gpus else 2,
                                     num_workers=0 if on_disk else config.num_workers)
                model.worker_s, shared = _workers(cal, sizes[t], options.cpus_per_run, 1.0 if gpus else 0.0, slots, alone)
                model.shared = shared or 1.0
                log(f"calibration: {slots} new Ray worker(s) ready in {model.worker_s:.1f} s; " + (
                    f"{slots} runs at once take {model.shared:.2f}x a run alone" if shared else
                    f"runs at once not timed (a run alone took {alone:.0f} s): taken not to slow each other"))
                if shared is None and slots > 1:
                    sources[f"models.{config.backbone}.shared"] = (f"not measured (a calibration run alone took {alone:.0f} s): "
                                                                   "1, runs at once taken not to slow each other")
            screens[dataset], sources[f"screens.{dataset}"] = _screen_rates(options, config, sizes[t], cpus, log)
        t = options.tasks[0]
        search_s, experiment = _search_seconds(options, image_config(options, t), sizes[t], screens[sizes[t].dataset], folder)
        for screen in screens.values():
            screen.search_s = search_s
        log(f"calibration: a search's fixed cost (Ray Tune, its trial's worker, its outputs) {search_s:.1f} s")
        epochs = max(image_config(options, t).epochs for t in options.tasks)
        report = _report_rates(options, experiment, folder, epochs, log)
    sources["report"] = f"measured on this machine by tune/calibrate.py: {options.num_samples} trials x {epochs} epochs"
    sources["ray_start_s"] = "measured on this machine by tune/calibrate.py" if fresh else "Ray was running already: 0"
    label = machine_label(device, cpus)
    log(f"calibration on {label} took {time.perf_counter() - started:.0f} s")
    return Rates(machine=label, device=device, cpus=cpus, gpus=gpus,
                 measured=f"calibrated on {time.strftime('%Y-%m-%d %H:%M')} (load average {os.getloadavg()[0]:.1f})",
                 models=models, screens=screens, report=report, ray_start_s=ray_start, sources=sources)
