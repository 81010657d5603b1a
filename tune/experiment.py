"""Run (or resume) a hyperparameter search of SSOT on one task with Ray Tune.

The orchestration of Ray only: options, searcher, scheduler, resources. An experiment's files
(``experiment.json``, ``trials.csv``, ``best_config.json`` in ``<storage_path>/<name>/<task>/``)
and the best-trial rule are owned by :mod:`ssot.results`; the tidy outputs are built by
:mod:`tune.outputs` and written through :mod:`ssot.results.storage`.
"""
from __future__ import annotations

import errno
import json
import logging
import math
import os
import signal
import threading
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ray import tune as ray_tune

from ssot.cli import check_output
from ssot.config import PATH_FIELDS, RUNTIME_FIELDS, SSOTConfig
from ssot.data import build_task
from ssot.data.registry import dataset_of
from ssot.errors import ConfigError, SSOTError
from ssot.results import metrics, storage
from ssot.data.features import cache_provenance
from ssot.results.experiment import EXPERIMENT_FILE, FINISHED, REFERENCE_KEY, new_meta
from ssot.results.lock import LOCK_FILE, ExperimentLock
from ssot.results.metrics import DEFAULT_METRIC, DIRECTIONS, LABEL_FREE, SEARCH_METRICS
from ssot.results.trials import ERRORED, RUNNING, asha_rungs
from tune import mps
from tune import space as spaces
from tune import state

# TrialLines and DropEndedCheckpoints stay importable from here: Ray pickles a search's callbacks
# by their module path and restores them on --resume.
from tune.live import DropEndedCheckpoints, LiveOutputs, TrialLines  # noqa: F401
from tune.study import StoredOptunaSearch, check_study, optuna_storage, public_url, study_name
from tune.trackers import tracker_callbacks
from tune.outputs import SearchOutcome, collect, expected_trials, trial_frame, write_outputs
from tune.population import METRIC_KEY, REDUCTION_KEY, RUNGS_KEY, PopulationSearcher, population_trainable
from tune.replay import Reference, read_reference
from tune.trainable import PRETRAINED_DIR, load_state, pretrained_path, ssot_trainable, trial_dirname

SEARCHES = ("tpe", "grid", "random")
DEFAULT_MAX_FAILURES = 2
_USER_ENV = frozenset(os.environ)  # Ray settings the user chose are left alone


@dataclass
class SearchOptions:
    """Everything a search needs (the command line fills it; tests build it directly).

    ``base`` overrides the task's default config (e.g. ``{"epochs": 10}``); ``space`` maps config
    fields to specs (see :mod:`tune.space`). ``num_samples`` is the number of trials, or for a
    grid search the number of repeats of the whole grid. ``gpus_per_trial=None`` means one GPU per trial when
    the cluster has GPUs, else none.
    """

    task: str
    num_samples: int = 20
    search: str = "tpe"
    space: spaces.Space = field(default_factory=spaces.default_space)
    base: dict[str, Any] = field(default_factory=dict)
    seed: int = 0
    early_stop: bool = True
    grace_period: int = 5
    reduction_factor: int = 3
    gpus_per_trial: float | None = None
    cpus_per_trial: float = 1.0
    max_concurrent: int | None = None
    storage_path: str = "ray_results"
    name: str | None = None
    resume: bool = False
    verbose: int = 1  # 0 silent, 1 a line per finished trial, 2 also Ray's progress tables
    metric: str = DEFAULT_METRIC  # what the search optimises and selects on (ssot.results.metrics)
    keep_checkpoints: bool = False  # keep the last checkpoint of trials that ended (disk: one per trial)
    optuna_storage: str | None = None  # database URL of the Optuna study (tune.study.optuna_storage), e.g. sqlite:///optuna.db
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
    #: Train configs by populations of this many members, each population one Ray trial
    #: (:mod:`tune.population`; feature caches only). None: one Ray trial per config.
    population: int | None = None
    #: Replay the configs of this experiment (its task folder, local or a URI; :mod:`tune.replay`):
    #: ``num_samples`` and the space become the experiment's.
    configs_from: str | None = None

    def validate(self) -> None:
        if self.metric not in SEARCH_METRICS:
            raise ConfigError(f"The 'metric' parameter must be one of {', '.join(SEARCH_METRICS)}. Got {self.metric!r} instead.")
        if self.search not in SEARCHES:
            raise ConfigError(f"The 'search' parameter must be one of {', '.join(SEARCHES)}. Got {self.search!r} instead.")
        if not (isinstance(self.num_samples, int) and self.num_samples >= 1):
            raise ConfigError(f"The 'num_samples' parameter must be an int >= 1. Got {self.num_samples!r} instead.")
        if self.grace_period < 1 or self.reduction_factor < 2:
            raise ConfigError(f"ASHA needs grace_period >= 1 and reduction_factor >= 2. Got {self.grace_period}, {self.reduction_factor}.")
        if self.gpus_per_trial is not None and self.gpus_per_trial < 0:
            raise ConfigError(f"The 'gpus_per_trial' parameter must be >= 0. Got {self.gpus_per_trial!r} instead.")
        if self.cpus_per_trial <= 0:
            raise ConfigError(f"The 'cpus_per_trial' parameter must be > 0. Got {self.cpus_per_trial!r} instead.")
        if not (isinstance(self.max_failures, int) and self.max_failures >= 0):
            raise ConfigError(f"The 'max_failures' parameter must be an int >= 0. Got {self.max_failures!r} instead.")
        for name, amount in self.trial_resources.items():
            if name.lower() in ("cpu", "gpu") or not isinstance(amount, (int, float)) or not amount > 0:
                raise ConfigError(f"The 'trial_resources' parameter must map custom resource names (not CPU/GPU: use "
                                  f"--cpus-per-trial and --gpus-per-trial) to amounts > 0. Got {name!r}: {amount!r} instead.")
        if self.name is not None:
            storage.check_name(self.name, "--name")
        if self.population is not None and not (isinstance(self.population, int) and self.population >= 1):
            raise ConfigError(f"The 'population' parameter must be an int >= 1. Got {self.population!r} instead.")
        if self.population is not None and self.search == "grid":
            raise ConfigError("--population proposes members from an Optuna study: use --search tpe or random, not grid.")
        if self.configs_from is not None and self.search == "grid":
            raise ConfigError("--configs-from replays an experiment's configs: use --search tpe or random, not grid.")
        if self.max_concurrent is not None and self.max_concurrent < 1:
            raise ConfigError(f"The 'max_concurrent' parameter must be >= 1. Got {self.max_concurrent!r} instead.")
        if self.metric not in metrics.selectable_metrics():
            raise ConfigError(f"The 'metric' parameter must be one of {', '.join(metrics.selectable_metrics())}. Got {self.metric!r} instead.")
        spaces.validate_space(self.space)
        if self.optuna_storage is not None and self.search == "grid":
            raise ConfigError("--optuna-storage stores the study of --search tpe or random; --search grid uses no Optuna study.")
        if self.search == "grid" and not spaces.is_grid(self.space):
            raise ConfigError("--search grid needs a grid space (the paper's lambda grid). Got a sampled space.")
        if self.search != "grid" and spaces.is_grid(self.space):
            raise ConfigError(f"--search {self.search} samples the space; a grid space needs --search grid.")


def experiment_root(options: SearchOptions) -> str:
    """``<storage_path>/<name>`` with local paths made absolute (Ray requires it)."""
    root_dir = options.storage_path if storage.is_uri(options.storage_path) else str(Path(options.storage_path).resolve())
    return storage.join(root_dir, options.name or f"ssot-{options.task}")


# ---------------------------------------------------------------------------- the search
def base_config(options: SearchOptions) -> SSOTConfig:
    """The task's defaults with ``options.base`` applied, local paths made absolute."""
    base = dict(options.base)
    for key in PATH_FIELDS:
        if base.get(key) and not storage.is_uri(base[key]):
            base[key] = str(Path(base[key]).expanduser().resolve())
    if not base.get("num_threads"):  # a trial's CPU share, recorded in its config and best_config.json
        base["num_threads"] = max(1, int(options.cpus_per_trial))
    config = SSOTConfig.for_task(options.task, **base)
    if config.epochs < 1:
        raise ConfigError(f"The 'epochs' parameter of a search must be an int >= 1 (ASHA's max_t). Got {config.epochs!r} instead.")
    return config


def check_resources(options: SearchOptions) -> float:
    """Refuse, within seconds, a request the Ray cluster cannot ever satisfy; returns GPUs per trial."""
    import ray

    total = ray.cluster_resources()
    gpus, cpus = total.get("GPU", 0.0), total.get("CPU", 0.0)
    want = options.gpus_per_trial if options.gpus_per_trial is not None else (1.0 if gpus >= 1 else 0.0)
    if want > gpus:
        fix = (f"a value <= {gpus:g} (fractions such as 0.5 pack several trials per GPU), or 0 for CPUs" if gpus > 0
               else "0: the cluster has no GPU, trials run on CPUs")
        raise ConfigError(f"--gpus-per-trial {want:g} asks for more GPUs than the Ray cluster has ({gpus:g}); "
                          f"trials would stay PENDING forever. Use --gpus-per-trial {fix}.")
    if options.cpus_per_trial > cpus:
        if cpus < 1:  # e.g. a head node started with --num-cpus 0 and no worker node yet
            raise ConfigError(f"The Ray cluster has no CPU ({cpus:g}): no trial can run. Add nodes with CPUs "
                              "(`ray start --address ...`), or drop --address to start a local Ray.")
        raise ConfigError(f"--cpus-per-trial {options.cpus_per_trial:g} exceeds the {cpus:g} CPUs of the Ray cluster. "
                          f"Use a value <= {cpus:g}.")
    for name, amount in options.trial_resources.items():
        if amount > total.get(name, 0.0):
            raise ConfigError(f"--trial-resources asks for {amount:g} {name!r} per trial but the Ray cluster has "
                              f"{total.get(name, 0.0):g}; trials would stay PENDING forever. Start a node with "
                              f"`ray start --address ... --resources '{{\"{name}\": N}}'` or drop it.")
    return want


def runnable_slots(options: SearchOptions, gpus_per_trial: float) -> int:
    """How many trials can run at once: the cluster's CPUs (and GPUs) over a trial's request,
    capped by ``max_concurrent``; at least 1. Nodes added later by an autoscaler are not counted."""
    import ray

    total = ray.cluster_resources()
    slots = int(total.get("CPU", 0.0) // options.cpus_per_trial)
    if gpus_per_trial > 0:
        slots = min(slots, int(total.get("GPU", 0.0) // gpus_per_trial))
    for name, amount in options.trial_resources.items():
        slots = min(slots, int(total.get(name, 0.0) // amount))
    if options.max_concurrent:
        slots = min(slots, options.max_concurrent)
    return max(1, slots)


def _searcher(options: SearchOptions, base: SSOTConfig, slots: int, study: str | None = None,
              reference: Reference | None = None) -> Any:
    import optuna
    from ray.tune.search import ConcurrencyLimiter
    from ray.tune.search.optuna import OptunaSearch

    if options.search == "grid":
        return None
    if options.search == "tpe":
        # a population's members are asked together: constant_liar counts the pending ones as bad,
        # so TPE spreads them instead of drawing them all near the current best
        sampler = optuna.samplers.TPESampler(seed=options.seed, multivariate=True, constant_liar=bool(options.population))
        points = [spaces.default_point(options.space, base)]
    else:
        sampler = optuna.samplers.RandomSampler(seed=options.seed)
        points = None
    if reference is not None:
        points = list(reference.configs)
    stored = {"storage": optuna_storage(options.optuna_storage), "study_name": study} if options.optuna_storage else {}
    if options.population:
        members = PopulationSearcher(spaces.optuna_space(options.space), options.metric, metrics.metric(options.metric).direction or "max",
                                     sampler, options.population, options.num_samples, enqueued=points, **stored)
        return ConcurrencyLimiter(members, max_concurrent=slots)
    searcher = (StoredOptunaSearch if stored else OptunaSearch)(
        space=spaces.optuna_space(options.space), metric=options.metric, mode=metrics.metric(options.metric).direction,
        sampler=sampler, points_to_evaluate=points, **stored)
    # The searcher proposes a trial only when a slot is free, so TPE learns from every result
    # reported before (ConcurrencyLimiter: some Ray releases also ignored
    # TuneConfig.max_concurrent_trials with custom searchers).
    return ConcurrencyLimiter(searcher, max_concurrent=slots)


def _scheduler(options: SearchOptions, epochs: int) -> Any:
    from ray.tune.schedulers import ASHAScheduler, FIFOScheduler

    if options.population or not options.early_stop or epochs <= options.grace_period:
        return FIFOScheduler()  # a population stops its members at ASHA's rungs itself
    # metric and mode come from TuneConfig (Ray refuses them twice for a scheduler)
    return ASHAScheduler(time_attr="training_iteration", max_t=epochs,
                         grace_period=options.grace_period, reduction_factor=options.reduction_factor)


def _param_space(options: SearchOptions, base: SSOTConfig, gpus: float, cache_dir: str | None) -> dict[str, Any]:
    constants = {k: v for k, v in base.to_dict().items() if k not in options.space or options.space[k]["type"] == "fixed"}
    constants.update(spaces.fixed_values(options.space))
    constants["_pretrain_cache"] = cache_dir
    constants["device"] = "cuda" if gpus > 0 else "cpu"
    # DataLoader workers beyond the trial's CPU share would oversubscribe the node.
    constants["num_workers"] = min(base.num_workers, int(options.cpus_per_trial))
    if options.search == "grid":
        constants.update(spaces.ray_grid_space(options.space))
    if options.population:
        constants[RUNGS_KEY] = list(asha_rungs(options.grace_period, options.reduction_factor, base.epochs)) if options.early_stop else []
        constants[REDUCTION_KEY], constants[METRIC_KEY] = options.reduction_factor, options.metric
    return constants


def run_search(options: SearchOptions, *, address: str | None = None, num_cpus: int | None = None) -> SearchOutcome:
    """Run or resume the search of ``options`` on one task; write the tidy outputs.

    Connects to the Ray cluster at ``address`` (``"auto"`` for the local one started with
    ``ray start``), else starts a local Ray (shut down again at the end).
    """
    options.validate()
    # a file in the way, no permission, an unreachable store, a missing bucket, no credentials: one line, before any trial
    check_output(options.storage_path, "--storage-path", folder=True)
    if address:
        check_reachable(address)
    base = base_config(options)
    if options.population is not None and base.backbone != "features":
        raise ConfigError(f"--population trains configs on a feature cache; pass --features CACHE.pt (build one with "
                          f"`python -m ssot.features --task {base.task} --out CACHE.pt`).")
    reference = read_reference(options.configs_from, base.task) if options.configs_from else None
    if reference is not None:
        options = replace(options, num_samples=len(reference.configs), space=dict(reference.space))
    task = build_task(base)  # fail fast, before Ray starts, on a missing dataset or unknown task
    if options.metric == "target_acc" and not getattr(task, "labeled_target", True):
        raise ConfigError(f"--metric target_acc needs target labels, but the target of task {base.task!r} is unlabeled. "
                          f"Use a label-free metric: {', '.join(LABEL_FREE)}.")
    root = experiment_root(options)
    path = storage.join(root, base.task)
    existed = storage.exists(path)
    # one driver at a time (a new search or --resume): taken before any work, released at the end
    with ExperimentLock(path):
        return _locked(options, base, root, path, existed=existed, address=address, num_cpus=num_cpus, reference=reference)


def _locked(options: SearchOptions, base: SSOTConfig, root: str, path: str, *, existed: bool, address: str | None,
            num_cpus: int | None, reference: Reference | None = None) -> SearchOutcome:
    """:func:`run_search` once the experiment's lock is held: the checks of what exists (the
    folder before the lock was taken, or anything but the lock now), then Ray."""
    import ray

    exists = existed or storage.exists(storage.join(path, EXPERIMENT_FILE)) or bool(set(storage.entries(path)) - {LOCK_FILE})
    if exists and not options.resume:
        raise SSOTError(f"Experiment {path} already exists. Pass --resume to continue it, or choose another --name.")
    if options.resume and not exists:
        raise SSOTError(f"--resume: no experiment at {path} to resume. Drop --resume to start it.")
    check_pretrained(root, base)
    if options.optuna_storage:  # a bad URL, or a study of that name for a new search, is refused before Ray starts
        check_study(options.optuna_storage, study_name(root.rsplit("/", 1)[-1], base.task), new=not exists)
    wanted = search_meta(options, base, root, reference)
    info, restore = _resumed(options, path, wanted) if exists else (wanted, False)
    if isinstance(info, SearchOutcome):  # finished already
        return info
    if options.trackers:  # a missing package or an unusable tracking URI is refused before Ray starts
        options = replace(options, callbacks=[*options.callbacks, *tracker_callbacks(options.trackers, root.rsplit("/", 1)[-1], base.task, base.epochs)])

    os.environ.setdefault("TUNE_WARN_EXCESSIVE_EXPERIMENT_CHECKPOINT_SYNC_THRESHOLD_S", "0")
    # Ray saves its state (what --resume restores) every 10 s or more, longer when a save is slow;
    # every 5 s keeps a killed driver's loss small (checkpoints are removed only once it is saved)
    os.environ.setdefault("TUNE_GLOBAL_CHECKPOINT_S", "5")
    if options.verbose < 2:  # one line per errored trial (TrialLines), not Ray's whole traceback
        os.environ.setdefault("TUNE_PRINT_ALL_TRIAL_ERRORS", "0")
        # a failing storage: the one line of storage_failure (and of LiveOutputs), not Ray's traceback every 5 s
        for name in ("ray.train._internal.syncer", "ray.tune.execution.experiment_state"):
            logging.getLogger(name).setLevel(logging.CRITICAL)
    started_ray = not ray.is_initialized()
    # MPS for trials that share a GPU: found or started before Ray, whose workers inherit its environment
    sharing = mps.start(options.gpus_per_trial, enabled=options.mps,
                        joined=(f"the Ray cluster at {address}" if address else None) or (None if started_ray else "a Ray started before the search"))
    if started_ray:
        try:
            # without --address, always a new local instance: never join whatever cluster Ray last
            # recorded on this machine (/tmp/ray/ray_current_cluster), which may be unrelated or stale
            ray.init(address=address or "local", num_cpus=None if address else num_cpus, include_dashboard=False,
                     ignore_reinit_error=True, log_to_driver=options.verbose > 1)
        except ConnectionError as exc:
            sharing.stop()
            raise SSOTError(
                f"Cannot connect to the Ray cluster at --address {address} ({exc}). Check that it runs (`ray status`); "
                "a cluster with token authentication needs RAY_AUTH_MODE=token and its token "
                "(~/.ray/auth_token or RAY_AUTH_TOKEN) when the address is explicit, or use --address auto on the head node."
            ) from None
    try:
        gpus = check_resources(options)
        slots = runnable_slots(options, gpus)
        # Ray keeps a single trial pending by default with searchers, so trials started one at a
        # time, each waiting for the previous one's worker to boot; more pending trials than
        # slots made TPE sample ahead blindly (random search). Exactly as many as can run.
        if "TUNE_MAX_PENDING_TRIALS_PG" not in _USER_ENV:
            os.environ["TUNE_MAX_PENDING_TRIALS_PG"] = str(slots)
        return _run(options, base, root, path, gpus, slots, info, restore=restore, mps_record=sharing.record(), reference=reference)
    finally:
        if started_ray:
            ray.shutdown()
        sharing.stop()


def check_pretrained(root: str, base: SSOTConfig) -> None:
    """Refuse, before Ray starts, a shared pretrained model of the search's pretraining config
    (``<root>/_pretrained``) that does not load as a trainer state with
    ``torch.load(weights_only=True)`` (:func:`tune.trainable.load_state`): a file planted there is
    never unpickled, and never silently replaced."""
    path = pretrained_path(storage.join(root, PRETRAINED_DIR), base)
    try:
        data = storage.read_bytes(path)
    except OSError:  # unreadable: the trials report it (e.g. a file where the folder should be)
        return
    if data is not None:
        load_state(data, f"The shared pretrained model {path}")


def check_reachable(address: str, timeout: float = 5.0) -> None:
    """Refuse within ``timeout`` seconds an explicit ``HOST:PORT`` where nothing listens (``ray.init``
    would wait for ever, deaf to Ctrl-C); ``auto`` and ``ray://`` addresses are left to Ray."""
    import socket

    host, sep, port = address.rpartition(":")
    if address == "auto" or "://" in address or not sep or not port.isdigit():
        return
    try:
        socket.create_connection((host or "127.0.0.1", int(port)), timeout=timeout).close()
    except OSError as exc:
        raise SSOTError(f"Cannot connect to the Ray cluster at --address {address}: nothing answers there within "
                        f"{timeout:g} s ({exc}). Start it (`ray start --head --port {port}`) or check the address "
                        "(`ray status` on the head node).") from None


def search_meta(options: SearchOptions, base: SSOTConfig, root: str, reference: Reference | None = None) -> dict[str, Any]:
    """The ``experiment.json`` of a new search of ``options`` (status ``running``); a replayed
    search records its reference (:mod:`tune.replay`), a screen its feature cache's provenance."""
    name = root.rsplit("/", 1)[-1]
    return new_meta(task=base.task, dataset=dataset_of(base.task), name=name, search=options.search, space=options.space,
                    max_epochs=base.epochs, num_samples=options.num_samples, metric_name=options.metric,
                    early_stop=options.early_stop, grace_period=options.grace_period,
                    reduction_factor=options.reduction_factor, base_config=base.to_dict(), validator_directions=DIRECTIONS,
                    optuna_storage=public_url(options.optuna_storage) if options.optuna_storage else None,
                    optuna_study=study_name(name, base.task) if options.optuna_storage else None,
                    population=options.population,
                    features=cache_provenance(base.features_path) if base.features_path else None,
                    **{REFERENCE_KEY: reference.meta() if reference else None})


#: The settings of experiment.json that a resumed search keeps, with the flags that set them.
RESUMED_SETTINGS = {"max_epochs": "--epochs", "num_samples": "--num-samples", "search": "--search", "metric": "--metric",
                    "space": "the space (--lambda-ot-range, --widths, ...)", "early_stop": "--no-early-stop",
                    "grace_period": "--grace-period", "reduction_factor": "--reduction-factor", "population": "--population"}


def check_same_settings(recorded: dict[str, Any], wanted: dict[str, Any], path: str) -> None:
    """Refuse a ``--resume`` whose flags ask for another experiment than the one recorded in
    ``experiment.json`` (Ray restores the recorded one and would ignore them silently).

    Runtime fields (:data:`ssot.config.RUNTIME_FIELDS`: device, data root, loader workers...) may
    differ; settings that an older ``experiment.json`` lacks are not compared.
    """
    differ = [f"{flag} {_shown(wanted[key])} (the experiment's: {_shown(recorded[key])})"
              for key, flag in RESUMED_SETTINGS.items() if key in recorded and recorded[key] != _json(wanted[key])]
    old, new = recorded.get("base_config") or {}, wanted["base_config"]
    differ += [f"config field {k} {_shown(new[k])} (the experiment's: {_shown(old[k])})" for k in new
               if k in old and k not in RUNTIME_FIELDS and k != "epochs" and old[k] != _json(new[k])]
    if differ:
        raise SSOTError(f"--resume continues experiment {path} as it was started, but this command asks for "
                        f"{'; '.join(differ)}. Rerun with the flags it was started with (its experiment.json), or start "
                        "a new search with another --name.")


def _json(value: Any) -> Any:
    return json.loads(json.dumps(value))


def _shown(value: Any) -> str:
    return json.dumps(value) if isinstance(value, (dict, list)) else str(value)


def _restorable(path: str, info: dict[str, Any], options: SearchOptions) -> bool:
    """Whether a resumed search has Ray state to restore (:func:`tune.state.check_resumable`:
    a corrupt one is refused); a checkpoint it would restore a trial from but that is gone is
    rebuilt first (:func:`tune.state.repair_checkpoints`)."""
    fs, folder = storage.filesystem(path)
    if not state.check_resumable(fs, folder, path, int(info["max_epochs"]), expected_trials(info)):
        return False
    rows = collect(path).trials
    statuses = rows.groupby("trial_id")["status"].last().to_dict() if len(rows) else {}
    for line in state.repair_checkpoints(fs, folder, statuses, int(info["max_epochs"])):
        if options.verbose:
            print(f"{info['task']}: trial {line}", flush=True)
    return True


def _resumed(options: SearchOptions, path: str, wanted: dict[str, Any]) -> tuple[dict[str, Any] | SearchOutcome, bool]:
    """The checks of ``--resume``, before Ray starts: ``experiment.json`` readable, the same settings
    (:func:`check_same_settings`), Ray's state sound (:func:`_restorable`). Returns the recorded
    ``experiment.json`` and whether Ray's state is restored, or the outcome of a finished search."""
    info = storage.read_json(storage.join(path, EXPERIMENT_FILE))
    if info is None:
        raise SSOTError(f"--resume: {storage.join(path, EXPERIMENT_FILE)} is missing or not valid JSON, so the experiment "
                        "cannot be resumed; start a new search with another --name.")
    check_same_settings(info, wanted, path)
    if info.get("status") == FINISHED:
        done = collect(path)  # older experiments were marked finished with errored trials in them
        if done.trials.empty or not (done.trials["status"] == ERRORED).any():
            print(f"{info['task']}: experiment {path} already finished; nothing to resume.")
            return done, False
    return info, _restorable(path, info, options)


def _run(options: SearchOptions, base: SSOTConfig, root: str, path: str, gpus: float, slots: int, info: dict[str, Any], *,
         restore: bool, mps_record: dict[str, Any] | None = None, reference: Reference | None = None) -> SearchOutcome:
    epochs = base.epochs
    cache_dir = storage.join(root, PRETRAINED_DIR)  # local, NFS or object storage: every node shares it
    function = population_trainable if options.population else ssot_trainable
    trainable = ray_tune.with_resources(function, {"cpu": options.cpus_per_trial, "gpu": gpus, **options.trial_resources})
    if restore:
        tuner = ray_tune.Tuner.restore(path, trainable, resume_unfinished=True, resume_errored=True)
    else:  # a new search, or one stopped before Ray saved anything: started with experiment.json's settings
        tuner = ray_tune.Tuner(
            trainable,
            param_space=_param_space(options, base, gpus, cache_dir),
            tune_config=ray_tune.TuneConfig(
                metric=options.metric, mode=metrics.metric(options.metric).direction,
                search_alg=_searcher(options, base, slots, info.get("optuna_study"), reference),
                scheduler=_scheduler(options, epochs),
                num_samples=math.ceil(options.num_samples / options.population) if options.population else options.num_samples,
                max_concurrent_trials=options.max_concurrent,
                reuse_actors=True, trial_dirname_creator=trial_dirname,
            ),
            run_config=ray_tune.RunConfig(
                name=base.task, storage_path=root, verbose=max(0, options.verbose - 1),
                callbacks=([TrialLines()] if options.verbose >= 1 else []) + [LiveOutputs(path, info)]
                + [DropEndedCheckpoints(keep_last=options.keep_checkpoints)] + list(options.callbacks),
                # Ray keeps every checkpoint; DropEndedCheckpoints removes those its saved state no longer needs
                checkpoint_config=ray_tune.CheckpointConfig(num_to_keep=None),
                failure_config=ray_tune.FailureConfig(max_failures=options.max_failures),
            ),
        )
    info["status"] = RUNNING
    info["mps"] = mps_record  # this run's (a resumed search records its last run's)
    info.setdefault("max_failures", options.max_failures)  # a resumed search keeps its own (Ray restores it)
    try:
        storage.write_text(storage.join(path, EXPERIMENT_FILE), json.dumps(info, indent=2) + "\n")
        results = _fit(tuner)
        trials = _ray_trials(path)
        finished = len(trials) >= expected_trials(info) and all(t.status in ("TERMINATED", "ERROR") for t in trials)
        info["retries"] = {t.trial_id: _restarts(t, int(info["max_failures"])) for t in trials if _restarts(t, int(info["max_failures"]))}
        frame = trial_frame(results, info, finished=finished)
        return write_outputs(path, info, frame, finished)
    except Exception as exc:  # noqa: BLE001 - a storage that failed mid-search is named in one line; anything else is raised
        raise storage_failure(path, info, exc) from None


def _fit(tuner: Any) -> Any:
    """``tuner.fit()``, with the process's Ctrl-C handler put back afterwards: Ray Tune installs its
    own (a first Ctrl-C saves the search and stops it) and leaves it in place, which would change
    Ctrl-C for whatever runs next in a process that called the search (a notebook, a test)."""
    main = threading.current_thread() is threading.main_thread()
    previous = signal.getsignal(signal.SIGINT) if main else None
    try:
        return tuner.fit()
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)


#: errno values of a storage that fails (read-only, full, over quota, I/O error).
STORAGE_ERRNOS = frozenset({errno.EROFS, errno.ENOSPC, errno.EDQUOT, errno.EIO})


def storage_failure(path: str, info: dict[str, Any], exc: BaseException) -> BaseException:
    """The error to raise for ``exc``, which stopped a search: a :class:`ssot.results.storage.StorageError`
    (exit status 4, one line) when the experiment's storage cannot be written now or ``exc`` came
    from a read-only, full or failing file system; ``exc`` itself otherwise.

    ``experiment.json`` is marked ``errored`` with the reason when it can still be written; either
    way ``--resume`` continues the search once the storage is fixed.
    """
    causes, seen = [], exc
    while seen is not None and len(causes) < 20:
        causes.append(seen)
        seen = seen.__cause__ or seen.__context__
    failed = next((c for c in causes if isinstance(c, OSError) and c.errno in STORAGE_ERRNOS), None)
    reason = storage.write_problem(path) or (" ".join(str(failed).split())[:200] if failed is not None else None)
    if reason is None:
        return exc
    info.update(status=ERRORED, reason=f"the storage failed: {reason}")
    try:
        storage.write_text(storage.join(path, EXPERIMENT_FILE), json.dumps(info, indent=2) + "\n")
        marked = f"{EXPERIMENT_FILE} says errored"
    except OSError:
        marked = f"{EXPERIMENT_FILE} could not be written and still says running"
    return storage.StorageError(f"The storage of experiment {path} failed during the search ({reason}). The trials and "
                                f"checkpoints written before are kept; {marked}. Fix the storage (free space, a read-write "
                                "mount, the store's credentials), then rerun the same command with --resume.")


# ---------------------------------------------------------------------------- small helpers
def _ray_trials(path: str) -> list:
    """Ray's trials as its saved state (``path``) has them, statuses and failure counts included;
    none when nothing ran."""
    from ray.tune import ExperimentAnalysis

    try:
        return list(ExperimentAnalysis(path).trials)
    except Exception:  # noqa: BLE001 - no state at all: nothing ran
        return []


def _restarts(trial: Any, max_failures: int) -> int:
    """Times Ray restarted ``trial`` after a failure (a node lost, a worker killed, an error): its
    failures, but not the last one of a trial that errored after ``max_failures`` restarts."""
    return min(int(getattr(trial, "num_failures", 0) or 0), max_failures)
