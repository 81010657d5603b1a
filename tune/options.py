"""The options of a search, checked where they enter: :class:`SearchOptions`.

``tune/search.py`` fills them from the command line, tests and scripts build them directly; every
check happens once, in :meth:`SearchOptions.validate`, before any file is written or Ray starts,
and names the flag a user typed. The config a search's trials start from is :func:`base_config`;
:func:`check_options` checks both and the data, without loading torch or Ray.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ssot.config import IMAGE_CACHE_MODES, PATH_FIELDS, SSOTConfig
from ssot.data import check_task
from ssot.errors import ConfigError
from ssot.results import outputs, storage
from ssot.results import space as spaces
from ssot.results.metrics import DEFAULT_METRIC, SEARCH_METRICS
from ssot.results.names import check_name

SEARCHES = ("tpe", "grid", "random")
DEFAULT_MAX_FAILURES = 2
DEFAULT_GRACE_PERIOD, DEFAULT_REDUCTION_FACTOR = 5, 3


@dataclass
class SearchOptions:
    """Everything a search needs (the command line fills it; tests build it directly).

    ``base`` overrides the task's default config (e.g. ``{"epochs": 10}``); ``space`` maps config
    fields to specs (see :mod:`ssot.results.space`). ``num_samples`` is the number of configs, or for a
    grid search the number of repeats of the whole grid. ``gpus_per_trial=None`` means one GPU per
    trial when the cluster has GPUs, else none; ``cpus_per_trial=None`` means one CPU per trial, or
    for populations their share of the machine (:func:`tune.cluster.divide`).
    """

    task: str
    num_samples: int = 20
    search: str = "tpe"
    space: spaces.Space = field(default_factory=spaces.default_space)
    base: dict[str, Any] = field(default_factory=dict)
    seed: int = 0
    early_stop: bool = True
    grace_period: int = DEFAULT_GRACE_PERIOD
    reduction_factor: int = DEFAULT_REDUCTION_FACTOR
    gpus_per_trial: float | None = None
    cpus_per_trial: float | None = None
    max_concurrent: int | None = None
    storage_path: str = "ray_results"
    name: str | None = None
    resume: bool = False
    verbose: int = 1  # 0 silent, 1 a line per finished trial, 2 also Ray's progress tables
    metric: str = DEFAULT_METRIC  # what the search optimises and selects on (ssot.results.metrics)
    keep_checkpoints: bool = False  # keep the last checkpoint of trials that ended (disk: one per trial)
    optuna_storage: str | None = None  # database URL of the search's Optuna study (tune.record), e.g. sqlite:///optuna.db
    callbacks: list[Any] = field(default_factory=list)  # more Ray Tune callbacks (after the search's own)
    trackers: list[str] = field(default_factory=list)  # experiment trackers to log to (tune.trackers.TRACKERS)
    #: Times a failed trial (its node lost, its worker killed, an exception) is restarted from its
    #: last checkpoint before it counts as errored (Ray's FailureConfig.max_failures).
    max_failures: int = DEFAULT_MAX_FAILURES
    #: Custom Ray resources each trial requests besides CPUs and GPUs, e.g. ``{"worker_node": 1}``
    #: to run trials only on nodes started with ``ray start --resources '{"worker_node": N}'``.
    trial_resources: dict[str, float] = field(default_factory=dict)
    #: Use NVIDIA MPS when trials share a GPU (a fractional ``gpus_per_trial``; :mod:`tune.mps`).
    mps: bool = True
    #: Configs per Ray trial (P, :mod:`tune.members`), trained as one population (more than one:
    #: on a feature cache only). None: one config per trial.
    population: int | None = None
    #: Replay the configs of this experiment (its task folder, local or a URI; :mod:`tune.replay`):
    #: ``num_samples`` and the space become the experiment's.
    configs_from: str | None = None
    #: Start from these finished searches of other tasks (their task folders, local or URIs;
    #: :mod:`tune.warmstart`): their best configs first, TPE informed by their trials.
    warm_start: list[str] | None = None

    def validate(self) -> None:
        """Refuse, in one line naming the flag, options that cannot make a search."""
        if self.metric not in SEARCH_METRICS:
            raise ConfigError(f"--metric must be one of {', '.join(SEARCH_METRICS)}. Got {self.metric!r} instead.")
        if self.search not in SEARCHES:
            raise ConfigError(f"--search must be one of {', '.join(SEARCHES)}. Got {self.search!r} instead.")
        if not (isinstance(self.num_samples, int) and self.num_samples >= 1):
            raise ConfigError(f"--num-samples must be an int >= 1. Got {self.num_samples!r} instead.")
        if self.grace_period < 1 or self.reduction_factor < 2:
            raise ConfigError(f"ASHA needs --grace-period >= 1 and --reduction-factor >= 2. Got {self.grace_period} and "
                              f"{self.reduction_factor} instead.")
        if self.gpus_per_trial is not None and not (math.isfinite(self.gpus_per_trial) and self.gpus_per_trial >= 0):
            raise ConfigError(f"--gpus-per-trial must be a number >= 0 (fractions pack trials on a GPU). Got {self.gpus_per_trial!r} instead.")
        if self.cpus_per_trial is not None and not (math.isfinite(self.cpus_per_trial) and self.cpus_per_trial > 0):
            raise ConfigError(f"--cpus-per-trial must be a number > 0. Got {self.cpus_per_trial!r} instead.")
        if not (isinstance(self.max_failures, int) and self.max_failures >= 0):
            raise ConfigError(f"--max-failures must be an int >= 0. Got {self.max_failures!r} instead.")
        for name, amount in self.trial_resources.items():
            if name.lower() in ("cpu", "gpu") or not isinstance(amount, (int, float)) or not (math.isfinite(amount) and amount > 0):
                raise ConfigError(f"--trial-resources must map custom resource names (not CPU/GPU: use --cpus-per-trial and "
                                  f"--gpus-per-trial) to amounts > 0. Got {name!r}: {amount!r} instead.")
        if self.name is not None:
            check_name(self.name, "--name")
        if self.population is not None and not (isinstance(self.population, int) and self.population >= 1):
            raise ConfigError(f"--population must be an int >= 1. Got {self.population!r} instead.")
        if self.population is not None and self.search == "grid":
            raise ConfigError("--population screens sampled configs: use --search tpe or random, not grid.")
        if self.configs_from is not None and self.search == "grid":
            raise ConfigError("--configs-from replays an experiment's configs: use --search tpe or random, not grid.")
        if self.warm_start is not None and self.search != "tpe":
            raise ConfigError(f"--warm-start informs TPE with other searches: use --search tpe, not {self.search}.")
        if self.warm_start is not None and self.configs_from is not None:
            raise ConfigError("--warm-start and --configs-from both choose the configs to try first: pass one of them.")
        if self.max_concurrent is not None and self.max_concurrent < 1:
            raise ConfigError(f"--max-concurrent must be an int >= 1. Got {self.max_concurrent!r} instead.")
        spaces.validate_space(self.space)
        if self.search == "grid" and not spaces.is_grid(self.space):
            raise ConfigError("--search grid needs a grid space (the paper's lambda grid). Got a sampled space.")
        if self.search != "grid" and spaces.is_grid(self.space):
            raise ConfigError(f"--search {self.search} samples the space; a grid space needs --search grid.")

    @property
    def members(self) -> int:
        """Configs per Ray trial: the population's size, 1 without populations."""
        return self.population or 1


def experiment_root(options: SearchOptions) -> str:
    """``<storage_path>/<name>`` with local paths made absolute (Ray requires it)."""
    root_dir = options.storage_path if storage.is_uri(options.storage_path) else str(Path(options.storage_path).resolve())
    return storage.join(root_dir, options.name or f"ssot-{options.task}")


def base_config(options: SearchOptions, cpus_per_trial: float = 1.0) -> SSOTConfig:
    """The task's defaults with ``options.base`` applied, local paths made absolute; a trial's CPU
    share (``cpus_per_trial``) becomes its torch threads unless ``base`` sets ``num_threads``."""
    base = dict(options.base)
    for key in PATH_FIELDS:
        if base.get(key) and base[key] not in IMAGE_CACHE_MODES and not storage.is_uri(base[key]):
            base[key] = str(Path(base[key]).expanduser().resolve())
    if not base.get("num_threads"):  # a trial's CPU share, recorded in its config and best_config.json
        base["num_threads"] = max(1, int(cpus_per_trial))
    config = SSOTConfig.for_task(options.task, **base)
    if config.epochs < 1:
        raise ConfigError(f"--epochs of a search must be an int >= 1 (ASHA's max_t). Got {config.epochs!r} instead.")
    if options.metric == "dev" and config.dev_every > 1:
        raise ConfigError(f"--metric dev ranks the trials by DEV at every epoch ASHA stops at, but dev_every={config.dev_every} "
                          "records it only every few epochs: choose another --metric, or --set dev_every=1.")
    return config


def check_options(options: SearchOptions) -> SSOTConfig:
    """Everything a search refuses before it starts that needs neither torch nor Ray: the options
    (:meth:`SearchOptions.validate`), the storage location (a file in the way, no permission, an
    unreachable store: :func:`ssot.results.outputs.check_output`), the trials' base config and the
    data it reads (:func:`ssot.data.check_task`). Returns the base config (one CPU per trial)."""
    options.validate()
    outputs.check_output(options.storage_path, "--storage-path", folder=True)
    base = base_config(options)
    check_task(base)
    return base
