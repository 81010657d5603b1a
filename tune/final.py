"""Final multi-seed runs of exported configs, and the results table beside the paper.

    python tune/final.py CONFIG_DIR --seeds 0 1 2 --out OUT
    python tune/final.py configs/P2I.json configs/A2W.json --seeds 0 1 2 --out OUT
    python tune/final.py CONFIG_DIR --seeds 0 1 --epochs 1 --device cpu --out /tmp/check   # quick check
    python tune/final.py CONFIG_DIR --features a2w.pt --out OUT        # on a feature cache
    python tune/final.py ray_results/confirmed --seeds 0 1 2 --out OUT  # confirmed configs (tune/confirm.py)

Each config (a ``<task>.json`` written by ``tune/export.py`` or ``tune/confirm.py``, or any config
file) is trained once per seed with :func:`ssot.trainer.run`. Each run record is written to
``OUT/runs/<task>_seed<s>.json`` as soon as the run ends; a record that already exists
there is reused instead of retrained, so an interrupted final run continues where it stopped by
rerunning the same command. The table (:mod:`ssot.results.final_table`) is written to
``OUT/results.csv`` and ``OUT/results.md``; existing tables are never
overwritten. Exit statuses: :mod:`ssot.cli` (2: bad input, refused before training; 1: a run did
not complete, diverged).
"""
from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ssot import cli
from ssot.config import RUNTIME_FIELDS, SSOTConfig
from ssot.errors import ResultsError, SSOTError
from ssot.results.final_table import result_paths, results_table, to_markdown, write_results
from ssot.results.record import RUNS_DIR, RunRecord, read_reusable, run_path, write_new

__all__ = [
    "collect_configs",
    "apply_overrides",
    "feature_caches",
    "read_run_record",
    "final_runs",
    "run_all",
    "train_on_ray",
    "check_data",
    "prepare_data",
    "ray_result",
    "main",
]


Log = Callable[[str], None]


# ------------------------------------------------------------------------------------ configs
def collect_configs(paths: Sequence[str | Path]) -> list[tuple[Path, SSOTConfig]]:
    """The configs named by ``paths``: JSON files, or folders of ``*.json`` files (sorted).

    Raises
    ------
    SSOTError
        If a path is missing, a folder holds no JSON file, a config is invalid, or two configs
        are for the same task (their run records would collide).
    """
    files: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found = sorted(p for p in path.glob("*.json") if p.is_file())
            if not found:
                raise ResultsError(f"The config folder {path} holds no *.json file. Export configs with tune/export.py first.")
            files.extend(found)
        elif path.is_file():
            files.append(path)
        else:
            raise ResultsError(f"The config path {path} does not exist. Pass config files or a folder written by tune/export.py.")
    configs = [(f, SSOTConfig.from_json(f)) for f in files]
    seen: dict[str, Path] = {}
    for f, config in configs:
        if config.task in seen:
            raise ResultsError(f"The configs {seen[config.task]} and {f} are both for task {config.task!r}; pass one config per task.")
        seen[config.task] = f
    return configs


def apply_overrides(config: SSOTConfig, *, epochs: int | None = None, device: str | None = None,
                    features: dict[str, Path] | None = None, image_cache: str | None = None) -> SSOTConfig:
    """``config`` with the overrides that are not ``None`` applied (validated): the quick-check
    ``epochs`` and ``device``, the ``image_cache`` (``auto``, ``off`` or a path); ``features``
    (task -> cache, see :func:`feature_caches`) runs it on its task's cache."""
    changes: dict[str, Any] = {"epochs": epochs, "device": device, "image_cache": image_cache}
    if features is not None:
        if config.task not in features:
            raise ResultsError(f"No feature cache for task {config.task!r} among --features {' '.join(map(str, features.values()))}; "
                               f"build one with `python -m ssot.features --task {config.task}` or drop --features.")
        changes.update(backbone="features", features_path=str(features[config.task].resolve()))
    return config.replace(**{k: v for k, v in changes.items() if v is not None})


def feature_caches(paths: Sequence[str | Path]) -> dict[str, Path]:
    """Task -> feature cache for the caches ``paths`` (each file says its task)."""
    from ssot.data.features import read_feature_cache

    return {read_feature_cache(p)["task"]: Path(p) for p in paths}


# ------------------------------------------------------------------------------------ run records
def read_run_record(path: Path, expected: SSOTConfig) -> RunRecord:
    """A run record written earlier, checked to have run ``expected`` (except in
    :data:`ssot.config.RUNTIME_FIELDS` (the config's ``runtime`` group)): :func:`ssot.results.record.read_reusable`.

    Raises
    ------
    ResultsError
        If the file is unreadable or not a finished run record, or its config differs from
        ``expected`` in a field other than :data:`ssot.config.RUNTIME_FIELDS` (the config's ``runtime`` group).
    """
    return read_reusable(path, expected.to_dict(), RUNTIME_FIELDS)


def _describe(task: str, seed: int, record: dict[str, Any] | RunRecord) -> str:
    record = RunRecord.from_dict(record)
    final = record.epochs[-1]["target_acc"] if record.epochs else None
    base = record.source_only_target_acc
    acc = f"target_acc {final:.4f}" if final is not None else "no adaptation epoch"
    base_text = f"source-only {base:.4f}" if base is not None else "no source-only accuracy"
    reason = f": {record.reason}" if not record.completed else ""
    return f"{task} seed {seed}: {acc} ({base_text}), {record.status}{reason}"


def final_runs(config: SSOTConfig, seeds: Sequence[int], out_dir: str | Path, *,
               log: Log = print) -> list[RunRecord]:
    """Train ``config`` once per seed, or reuse the run records already in ``out_dir/runs``.

    Parameters
    ----------
    config : SSOTConfig
        The config to run (its ``seed`` is replaced by each seed).
    seeds : sequence of int
        The seeds.
    out_dir : str or Path
        The results folder; each new record is written to :func:`ssot.results.record.run_path` as soon as
        its run ends.
    log : callable
        Receives one progress line per seed.

    Returns
    -------
    list of RunRecord
        The run records, in the order of ``seeds``.
    """
    from ssot.trainer import run  # torch is imported only when something trains

    records = []
    for seed in seeds:
        cfg = config.replace(seed=seed)
        path = run_path(out_dir, cfg.task, seed)
        if path.exists():
            record = read_run_record(path, cfg)
            log(f"{_describe(cfg.task, seed, record)} [reused {path}]")
        else:
            start = time.perf_counter()
            record = RunRecord.from_dict(run(cfg))
            write_new(path, record)
            log(f"{_describe(cfg.task, seed, record)} [{time.perf_counter() - start:.1f} s, wrote {path}]")
        records.append(record)
    return records


def run_all(configs: Sequence[SSOTConfig], seeds: Sequence[int], out_dir: str | Path, *,
            log: Log = print) -> dict[str, list[RunRecord]]:
    """:func:`final_runs` for every config; returns task -> run records (in config order)."""
    return {config.task: final_runs(config, seeds, out_dir, log=log) for config in configs}


def _train(config_dict: dict[str, Any]) -> dict[str, Any]:
    """One run inside a Ray worker (imports torch there, not in the driver)."""
    from ssot.trainer import run

    return run(SSOTConfig.from_dict(config_dict))


def train_on_ray(jobs: Mapping[tuple[str, int], tuple[SSOTConfig, Path]], *, num_cpus: int | None = None, address: str | None = None,
                 cpus_per_run: float = 1.0, gpus_per_run: float | None = 0.0, max_concurrent: int | None = None,
                 log: Log = print) -> dict[tuple[str, int], RunRecord]:
    """Run records of every job ``key -> (config, record path)``: the existing records are reused
    (checked with :func:`read_run_record`), the others are trained as Ray tasks and each written
    to its path as soon as it ends, so rerunning an interrupted call continues it.

    Parameters
    ----------
    jobs : mapping
        ``(label, seed)`` (the label names the run in the log) -> the config to run (its seed
        set) and its record path.
    num_cpus : int, optional
        CPUs of the local Ray instance started here (default: all); ignored with ``address``.
    address : str, optional
        Join the Ray cluster there (``"auto"`` or ``host:port``) instead of a new local instance.
    cpus_per_run, gpus_per_run : float
        Each run's resource request (``tune/search.py``'s ``--cpus-per-trial`` and
        ``--gpus-per-trial``: ``None`` is one GPU if the cluster has GPUs, else none); a request
        the cluster can never meet is refused at once. Runs given a GPU run on ``cuda``.
    max_concurrent : int, optional
        Most runs at once (default: as many as the resources allow; 1 makes their times comparable).
    log : callable
        Receives one line per run.

    Returns
    -------
    dict
        key -> :class:`~ssot.results.record.RunRecord`, in the order of ``jobs``.
    """
    records: dict[tuple[str, int], RunRecord] = {}
    todo: dict[tuple[str, int], tuple[SSOTConfig, Path]] = {}
    for key, (cfg, path) in jobs.items():
        if path.exists():
            records[key] = read_run_record(path, cfg)
            log(f"{key[0]}: {_describe(cfg.task, cfg.seed, records[key])} [reused {path}]")
        else:
            todo[key] = (cfg, path)
    if todo:
        check_data(cfg for cfg, _ in todo.values())  # a missing dataset or unknown task: one line, before Ray starts
        import ray

        from tune.cluster import check_reachable, connected
        from tune.options import SearchOptions

        if address:
            check_reachable(address)
        request = SearchOptions(task="", gpus_per_trial=gpus_per_run, cpus_per_trial=cpus_per_run, verbose=0)
        with connected(request, cpus_per_run, address=address, num_cpus=num_cpus) as cluster:
            gpus = cluster.gpus_per_trial
            remote = ray.remote(num_cpus=cpus_per_run, num_gpus=gpus)(_train)
            start = time.perf_counter()
            waiting = list(todo)
            pending: dict[Any, tuple[str, int]] = {}
            while waiting or pending:
                while waiting and (max_concurrent is None or len(pending) < max_concurrent):
                    key = waiting.pop(0)
                    config = todo[key][0].replace(**({"device": "cuda"} if gpus > 0 else {}))
                    pending[remote.remote(config.to_dict())] = key
                done, _ = ray.wait(list(pending), num_returns=1)
                key = pending.pop(done[0])
                cfg, path = todo[key]
                records[key] = RunRecord.from_dict(ray_result(ray, done[0]))
                write_new(path, records[key])
                log(f"{key[0]}: {_describe(cfg.task, cfg.seed, records[key])} [{time.perf_counter() - start:.0f} s, wrote {path}]")
    return {key: records[key] for key in jobs}


def check_data(configs: Iterable[SSOTConfig]) -> None:
    """Find, then build the data of each distinct task of ``configs`` once
    (:data:`ssot.config.TASK_FIELDS`): an unknown task, a missing data root or dataset is refused
    in one line before Ray starts, and before torch loads (:func:`ssot.data.check_task`)."""
    from ssot.data import build_task

    configs = list(configs)
    prepare_data(configs)  # each image task's decoded images too, before any run starts
    from tune.trial import task_key

    seen = set()
    for config in configs:
        key = task_key(config)
        if key not in seen:
            seen.add(key)
            build_task(config)


def prepare_data(configs: Iterable[SSOTConfig]) -> None:
    """Before any run of ``configs`` trains: their data found (:func:`ssot.data.check_task`: a
    missing dataset, too little disk for a decoded-image cache) and their image tasks' decoded
    images prepared (:func:`ssot.data.image_cache.prepare_for`), each said in one line."""
    from ssot.data import check_task, image_cache

    configs = list(configs)
    for config in configs:
        check_task(config)
    image_cache.prepare_for(configs, progress=True)


def ray_result(ray: Any, ref: Any) -> Any:
    """A Ray task's result; a user error raised inside it (:class:`ssot.errors.SSOTError`) is raised
    as itself, one line, not as Ray's traceback."""
    try:
        return ray.get(ref)
    except ray.exceptions.RayTaskError as exc:
        if isinstance(exc.cause, SSOTError):
            raise exc.cause from None
        raise


# ------------------------------------------------------------------------------------ command line
def build_parser() -> argparse.ArgumentParser:
    parser = cli.Parser(prog="python tune/final.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("configs", nargs="+", type=Path, help="config files, or folders of <task>.json (tune/export.py --out)")
    cli.add_seeds(parser, help="seeds of the final runs")
    parser.add_argument("--out", type=Path, required=True, metavar="FOLDER", help="results folder: runs/, results.csv, results.md")
    cli.add_config_flag(parser, "epochs", "overrides the configs' (quick checks)", default_text="the configs'")
    cli.add_config_flag(parser, "device", "overrides the configs'", default_text="the configs'")
    cli.add_config_flag(parser, "image_cache", "overrides the configs' (prepared before any run starts)",
                        default_text="the configs'")
    cli.add_config_flag(parser, "features_path", "here: one per task, run on instead of images", nargs="+",
                        default_text="")
    return parser


def final(args: argparse.Namespace) -> int:
    """The command's work: check the outputs, train or reuse every (config, seed), write the table."""
    cli.check_seeds(args.seeds)
    collected = collect_configs(args.configs)
    cli.check_output(args.out, "--out", folder=True, new=[p.name for p in result_paths(args.out)],
                     inputs=[*(f for f, _ in collected), *(Path(p) for p in args.features_path or [])])
    caches = feature_caches(args.features_path) if args.features_path else None
    with cli.flag_errors(("epochs", "device", "image_cache")):
        configs = [apply_overrides(c, epochs=args.epochs, device=args.device, features=caches, image_cache=args.image_cache)
                   for _, c in collected]
    prepare_data(c for c in configs if any(not run_path(args.out, c.task, s).exists() for s in args.seeds))
    records = run_all(configs, args.seeds, args.out)
    table = results_table(records)
    csv_path, md_path = write_results(table, args.out)
    print(to_markdown(table), end="")
    print(f"wrote {csv_path} and {md_path}")
    return cli.runs_status(r for rs in records.values() for r in rs)


def main(argv: Sequence[str] | None = None) -> int:
    """Command line entry point (``ssot-final``); the exit status of :mod:`ssot.cli` (1: a run diverged)."""
    return cli.command(build_parser(), final, argv, kept=lambda args: args.out / RUNS_DIR)


if __name__ == "__main__":
    sys.exit(main())
