"""Runs of configs over seeds as Ray tasks, each a run record reused when it exists: the runner of
``tune/confirm.py``, ``tune/ablation.py``, ``tune/transfer.py`` and the examples.

:func:`train_on_ray` takes ``(label, seed) -> (config, record path)`` jobs: an existing record is
reused (checked to have run the same config, :func:`read_run_record`), the others are trained as
Ray tasks, each written to its path as soon as it ends, so rerunning an interrupted call continues
it. The data of every task is found and built before Ray starts (:func:`check_data`), and a user
error inside a Ray task is raised as itself (:func:`ray_result`). :func:`apply_overrides` is the
commands' quick-check overrides of a config (``--epochs``, ``--device``, ``--features``).
"""
from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from ssot.config import RUNTIME_FIELDS, SSOTConfig
from ssot.errors import ResultsError, SSOTError
from ssot.results.record import RunRecord, read_reusable, write_new

__all__ = ["Log", "apply_overrides", "read_run_record", "describe", "train_on_ray", "check_data", "ray_result"]

#: Receives one progress line per run.
Log = Callable[[str], None]


def apply_overrides(config: SSOTConfig, *, epochs: int | None = None, device: str | None = None,
                    features: dict[str, Path] | None = None) -> SSOTConfig:
    """``config`` with the quick-check overrides that are not ``None`` applied (validated);
    ``features`` (task -> cache, see :func:`tune.final.feature_caches`) runs it on its task's cache."""
    changes: dict[str, Any] = {"epochs": epochs, "device": device}
    if features is not None:
        if config.task not in features:
            raise ResultsError(f"No feature cache for task {config.task!r} among --features {' '.join(map(str, features.values()))}; "
                               f"build one with `python -m ssot.features --task {config.task}` or drop --features.")
        changes.update(backbone="features", features_path=str(features[config.task].resolve()))
    return config.replace(**{k: v for k, v in changes.items() if v is not None})


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


def describe(task: str, seed: int, record: dict[str, Any] | RunRecord) -> str:
    """One line of the log about a run: its task and seed, final and source-only accuracy, status."""
    record = RunRecord.from_dict(record)
    final = record.epochs[-1]["target_acc"] if record.epochs else None
    base = record.source_only_target_acc
    acc = f"target_acc {final:.4f}" if final is not None else "no adaptation epoch"
    base_text = f"source-only {base:.4f}" if base is not None else "no source-only accuracy"
    reason = f": {record.reason}" if not record.completed else ""
    return f"{task} seed {seed}: {acc} ({base_text}), {record.status}{reason}"


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
            log(f"{key[0]}: {describe(cfg.task, cfg.seed, records[key])} [reused {path}]")
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
                log(f"{key[0]}: {describe(cfg.task, cfg.seed, records[key])} [{time.perf_counter() - start:.0f} s, wrote {path}]")
    return {key: records[key] for key in jobs}


def check_data(configs: Iterable[SSOTConfig]) -> None:
    """Find, then build the data of each distinct task of ``configs`` once
    (:data:`ssot.config.TASK_FIELDS`): an unknown task, a missing data root or dataset is refused
    in one line before Ray starts, and before torch loads (:func:`ssot.data.check_task`)."""
    from ssot.data import build_task, check_task

    configs = list(configs)
    for config in configs:
        check_task(config)
    from tune.trial import task_key

    seen = set()
    for config in configs:
        key = task_key(config)
        if key not in seen:
            seen.add(key)
            build_task(config)


def ray_result(ray: Any, ref: Any) -> Any:
    """A Ray task's result; a user error raised inside it (:class:`ssot.errors.SSOTError`) is raised
    as itself, one line, not as Ray's traceback."""
    try:
        return ray.get(ref)
    except ray.exceptions.RayTaskError as exc:
        if isinstance(exc.cause, SSOTError):
            raise exc.cause from None
        raise
