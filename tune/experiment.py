"""Run (or resume) a hyperparameter search of SSOT on one task with Ray Tune: :func:`run_search`.

The experiment itself: the checks of what exists (:mod:`tune.resume`), the searcher, the scheduler
and the trials' parameters, then Ray Tune's run on the machine :mod:`tune.cluster` connects to,
with the options of :mod:`tune.options`. An experiment's files (``experiment.json``,
``trials.csv``, ``best_config.json`` in ``<storage_path>/<name>/<task>/``) and the best-trial rule
are owned by :mod:`ssot.results`; the tidy outputs are built by :mod:`tune.outputs` and written
through :mod:`ssot.results.storage`.
"""
from __future__ import annotations

import json
import signal
import threading
import time
from dataclasses import replace
from typing import Any

from ray import tune as ray_tune

from ssot.config import SSOTConfig
from ssot.data import build_task
from ssot.data.features import cache_provenance
from ssot.data.registry import dataset_of
from ssot.errors import ConfigError, SSOTError
from ssot.results import io_errors, metrics, storage
from ssot.results.experiment import EXPERIMENT_FILE, REFERENCE_KEY, new_meta
from ssot.results.lock import ExperimentLock
from ssot.results.metrics import DIRECTIONS, LABEL_FREE
from ssot.results.trials import ERRORED, RUNNING, asha_rungs
from tune import resume, warmstart
from tune import space as spaces
from tune.cluster import Cluster, check_reachable, connected, cpu_share, trials_of

# TrialLines and DropEndedCheckpoints stay importable from here: Ray pickles a search's callbacks
# by their module path and restores them on --resume.
from tune.live import DropEndedCheckpoints, KeepLastGood, LiveOutputs, TrialLines, recorded  # noqa: F401
from tune.members import TRIAL_FORMAT
from tune.options import SearchOptions, base_config, check_options, experiment_root
from tune.optuna_study import StudyMirror, check_study, public_url, study_name
from tune.outputs import SearchOutcome, expected_trials, trial_frame, write_outputs
from tune.replay import Reference, read_reference
from tune.searcher import StudySearcher, StudySync
from tune.tracker_loggers import tracker_callbacks
from tune.trial import METRIC_KEY, PRETRAINED_DIR, REDUCTION_KEY, RUNGS_KEY, load_state, pretrained_path, run_trial, trial_dirname


# ---------------------------------------------------------------------------- the search
def run_search(options: SearchOptions, *, address: str | None = None, num_cpus: int | None = None) -> SearchOutcome:
    """Run or resume the search of ``options`` on one task; write the tidy outputs.

    Connects to the Ray cluster at ``address`` (``"auto"`` for the local one started with
    ``ray start``), else starts a local Ray (shut down again at the end). Every check of the
    options, the data and the experiment folder happens before Ray starts.
    """
    check_options(options)  # the options, the storage location, the data: one line, before any trial
    if address:
        check_reachable(address)
    cpus, why = cpu_share(options, address, num_cpus)
    base = base_config(options, cpus)
    if options.members > 1 and base.backbone != "features":
        raise ConfigError(f"--population trains configs on a feature cache; pass --features CACHE.pt (build one with "
                          f"`python -m ssot.features --task {base.task} --out CACHE.pt`).")
    reference = read_reference(options.configs_from, base.task) if options.configs_from else None
    warm = warmstart.source_paths(options.warm_start) if options.warm_start is not None else []
    if warm:
        warmstart.check_optuna()
    if reference is not None:
        options = replace(options, num_samples=len(reference.configs), space=dict(reference.space))
    task = build_task(base)  # fail fast, before Ray starts, on a missing dataset or unknown task
    if options.metric == "target_acc" and not getattr(task, "labeled_target", True):
        raise ConfigError(f"--metric target_acc needs target labels, but the target of task {base.task!r} is unlabeled. "
                          f"Use a label-free metric: {', '.join(LABEL_FREE)}.")
    root = experiment_root(options)
    path = storage.join(root, base.task)
    folder, existed = storage.exists(path), resume.recorded(path)
    # one driver at a time (a new search or --resume): taken before any work, released at the end
    with ExperimentLock(path):
        # what the folder holds besides the lock (a folder that existed before the lock counts)
        exists = existed or resume.recorded(path)
        if exists and not options.resume:
            raise SSOTError(f"Experiment {path} already exists. Pass --resume to continue it, or choose another --name.")
        if options.resume and not exists:
            if not folder:
                raise SSOTError(f"--resume: no experiment at {path} to resume. Drop --resume to start it.")
            print(f"{base.task}: nothing of experiment {path} was recorded (its driver stopped before it began); "
                  "starting it.", flush=True)
        check_pretrained(root, base)
        if options.optuna_storage:  # a bad URL, or a study of that name for a new search, is refused before Ray starts
            check_study(options.optuna_storage, study_name(root.rsplit("/", 1)[-1], base.task), new=not exists)
        rungs, stopping = early_stopping(options, base.epochs)
        # the sources are read for a new search; a resumed one compares their paths with experiment.json's
        sources = warmstart.read_sources(warm, base.task, options.space) if warm and not exists else []
        wanted = search_meta(options, base, root, reference, rungs,
                             [s.meta() for s in sources] if sources else [{"path": p} for p in warm])
        info, restore = resume.resumed(path, wanted, options.verbose) if exists else (wanted, False)
        if isinstance(info, SearchOutcome):  # finished already
            return info
        if warm and not sources and not restore:  # a resumed search that Ray had not saved yet starts anew
            sources = warmstart.read_sources(warm, base.task, options.space)
        if options.trackers:  # a missing package or an unusable tracking URI is refused before Ray starts
            options = replace(options, callbacks=[*options.callbacks, *tracker_callbacks(options.trackers, root.rsplit("/", 1)[-1], base.task, base.epochs)])
        with connected(options, cpus, address=address, num_cpus=num_cpus) as cluster:
            if options.verbose:
                print(f"{base.task}: {cluster.describe(options, why)}", flush=True)
                print(f"{base.task}: {stopping}", flush=True)
            if options.verbose and sources:
                print(f"{base.task}: {warmstart.describe(sources)}", flush=True)
            return _run(options, base, root, path, cluster, info, restore=restore, reference=reference, rungs=rungs,
                        sources=sources)


def check_pretrained(root: str, base: SSOTConfig) -> None:
    """Refuse, before Ray starts, a shared pretrained model of the search's pretraining config
    (``<root>/_pretrained``) that does not load as a trainer state with
    ``torch.load(weights_only=True)`` (:func:`tune.trial.load_state`): a file planted there is
    never unpickled, and never silently replaced."""
    path = pretrained_path(storage.join(root, PRETRAINED_DIR), base)
    try:
        data = storage.read_bytes(path)
    except OSError:  # unreadable: the trials report it (e.g. a file where the folder should be)
        return
    if data is not None:
        load_state(data, f"The shared pretrained model {path}")


def search_meta(options: SearchOptions, base: SSOTConfig, root: str, reference: Reference | None = None,
                rungs: tuple[int, ...] | None = None, warm_start: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The ``experiment.json`` of a new search of ``options`` (status ``running``); a replayed
    search records its reference (:mod:`tune.replay`), a warm-started one its sources
    (:mod:`tune.warmstart`), a screen its feature cache's provenance.
    ``early_stop`` says whether ASHA stops trials (``rungs``: its epochs), not only whether it was asked."""
    name = root.rsplit("/", 1)[-1]
    if rungs is None:
        rungs = early_stopping(options, base.epochs)[0]
    return new_meta(task=base.task, dataset=dataset_of(base.task), name=name, search=options.search, space=options.space,
                    max_epochs=base.epochs, num_samples=options.num_samples, metric_name=options.metric,
                    early_stop=bool(rungs), rungs=list(rungs), grace_period=options.grace_period,
                    reduction_factor=options.reduction_factor, base_config=base.to_dict(), validator_directions=DIRECTIONS,
                    optuna_storage=public_url(options.optuna_storage) if options.optuna_storage else None,
                    optuna_study=study_name(name, base.task) if options.optuna_storage else None,
                    population=options.population, trial_format=TRIAL_FORMAT,
                    features=cache_provenance(base.features_path) if base.features_path else None,
                    elapsed_s=0.0, warm_start=warm_start or None,
                    **{REFERENCE_KEY: reference.meta() if reference else None})


def _run(options: SearchOptions, base: SSOTConfig, root: str, path: str, cluster: Cluster, info: dict[str, Any], *,
         restore: bool, reference: Reference | None, rungs: tuple[int, ...],
         sources: list[warmstart.Source] | None = None) -> SearchOutcome:
    epochs = base.epochs
    cache_dir = storage.join(root, PRETRAINED_DIR)  # local, NFS or object storage: every node shares it
    trainable = ray_tune.with_resources(run_trial, {"cpu": cluster.cpus_per_trial, "gpu": cluster.gpus_per_trial,
                                                    **options.trial_resources})
    if restore:
        tuner = ray_tune.Tuner.restore(path, trainable, resume_unfinished=True, resume_errored=True)
    else:  # a new search, or one stopped before Ray saved anything: started with experiment.json's settings
        searcher = _searcher(options, base, cluster.slots, info.get("optuna_study"), reference, sources)
        tuner = ray_tune.Tuner(
            trainable,
            param_space=_param_space(options, base, cluster, cache_dir, rungs),
            tune_config=ray_tune.TuneConfig(
                metric=options.metric, mode=metrics.metric(options.metric).direction,
                search_alg=searcher, scheduler=_scheduler(options, epochs, rungs), num_samples=trials_of(options),
                # a searcher limits itself to the free slots (tune.searcher); Ray's limit is for the grid
                max_concurrent_trials=options.max_concurrent if searcher is None else None,
                reuse_actors=True, trial_dirname_creator=trial_dirname,
            ),
            run_config=ray_tune.RunConfig(
                name=base.task, storage_path=root, verbose=max(0, options.verbose - 1),
                callbacks=([TrialLines(path)] if options.verbose >= 1 else []) + [LiveOutputs(path, info), KeepLastGood(path)]
                + [DropEndedCheckpoints(keep_last=options.keep_checkpoints)]
                + ([StudySync(searcher)] if searcher is not None and searcher.mirror is not None else [])
                + list(options.callbacks),
                # Ray keeps every checkpoint; DropEndedCheckpoints removes those its saved state no longer needs
                checkpoint_config=ray_tune.CheckpointConfig(num_to_keep=None),
                failure_config=ray_tune.FailureConfig(max_failures=options.max_failures),
            ),
        )
    info["status"] = RUNNING
    info["mps"] = cluster.mps  # this run's (a resumed search records its last run's)
    info.setdefault("max_failures", options.max_failures)  # a resumed search keeps its own (Ray restores it)
    started = time.monotonic()
    earlier = float(info.get("elapsed_s") or 0.0)  # a resumed search adds its runs' wall times
    try:
        storage.write_text(storage.join(path, EXPERIMENT_FILE), json.dumps(info, indent=2) + "\n")
        _fit(tuner)
        trials = recorded(path)
        finished = len(trials) >= expected_trials(info) and all(t.ended for t in trials)
        info["retries"] = {t.trial_id: min(t.failures, int(info["max_failures"])) for t in trials if t.failures}
        info["elapsed_s"] = round(earlier + time.monotonic() - started, 1)
        return write_outputs(path, info, trial_frame(trials, info), finished)
    except Exception as exc:  # noqa: BLE001 - a storage that failed mid-search is named in one line; anything else is raised
        info["elapsed_s"] = round(earlier + time.monotonic() - started, 1)
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


def storage_failure(path: str, info: dict[str, Any], exc: BaseException) -> BaseException:
    """The error to raise for ``exc``, which stopped a search: a :class:`ssot.results.storage.StorageError`
    (exit status 4, one line) when the experiment's storage cannot be written now or ``exc`` came
    from a read-only, full or failing file system (:func:`ssot.results.io_errors.failed_storage`);
    ``exc`` itself otherwise.

    ``experiment.json`` is marked ``errored`` with the reason when it can still be written; either
    way ``--resume`` continues the search once the storage is fixed.
    """
    reason = storage.write_problem(path) or io_errors.failed_storage(exc)
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


# ---------------------------------------------------------------------------- searcher, scheduler, parameters
def _searcher(options: SearchOptions, base: SSOTConfig, slots: int, study: str | None = None,
              reference: Reference | None = None, sources: list[warmstart.Source] | None = None) -> StudySearcher | None:
    """The search's searcher (:mod:`tune.searcher`; none for a grid): TPE or random sampling,
    seeded, asking the paper's default config first (TPE) or a reference's configs in order
    (``--configs-from``), or warm-started: the sources' best configs, then the default, and TPE
    informed by their trials (:mod:`tune.warmstart`); its study copied to ``--optuna-storage``."""
    import optuna

    if options.search == "grid":
        return None
    sampler: optuna.samplers.BaseSampler
    if options.search == "tpe" and sources:
        sampler = warmstart.WarmStartSampler(sources, spaces.optuna_space(options.space), seed=options.seed,
                                             constant_liar=options.members > 1)
        points = warmstart.first_points(sources, spaces.default_point(options.space, base))
    elif options.search == "tpe":
        # the members of a trial are asked together: constant_liar counts the pending ones as bad,
        # so TPE spreads them instead of drawing them all near the current best
        sampler = optuna.samplers.TPESampler(seed=options.seed, multivariate=True, constant_liar=options.members > 1)
        points = [spaces.default_point(options.space, base)]
    else:
        sampler = optuna.samplers.RandomSampler(seed=options.seed)
        points = []
    if reference is not None:
        points = list(reference.configs)
    direction = metrics.metric(options.metric).direction or "max"
    mirror = StudyMirror(options.optuna_storage, study, direction, options.metric) if options.optuna_storage and study else None
    return StudySearcher(spaces.optuna_space(options.space), options.metric, direction, sampler, members=options.members,
                         total=options.num_samples, max_epochs=base.epochs, enqueued=points, slots=slots, mirror=mirror)


def early_stopping(options: SearchOptions, epochs: int) -> tuple[tuple[int, ...], str]:
    """ASHA's rungs for this search (none: no early stopping) and a line saying so, truthfully:
    ``--no-early-stop``, or a schedule too short for any rung (``epochs <= grace period``), is off."""
    if not options.early_stop:
        return (), "early stopping: off (--no-early-stop)"
    rungs = asha_rungs(options.grace_period, options.reduction_factor, epochs)
    if not rungs:
        return (), (f"early stopping: off ({epochs} epochs <= --grace-period {options.grace_period}: ASHA has no rung "
                    "before the last epoch)")
    inside = " inside each population" if options.members > 1 else ""
    stops = [r for r in rungs if r < epochs]  # a rung at the last epoch stops nothing
    return rungs, (f"early stopping: ASHA{inside} at epochs {', '.join(map(str, stops))} (keeps the top "
                   f"1/{options.reduction_factor} at each)")


def _scheduler(options: SearchOptions, epochs: int, rungs: tuple[int, ...]) -> Any:
    from ray.tune.schedulers import ASHAScheduler, FIFOScheduler

    if options.members > 1 or not rungs:
        return FIFOScheduler()  # a population stops its members at ASHA's rungs itself
    # metric and mode come from TuneConfig (Ray refuses them twice for a scheduler)
    return ASHAScheduler(time_attr="training_iteration", max_t=epochs,
                         grace_period=options.grace_period, reduction_factor=options.reduction_factor)


def _param_space(options: SearchOptions, base: SSOTConfig, cluster: Cluster, cache_dir: str | None,
                 rungs: tuple[int, ...]) -> dict[str, Any]:
    constants = {k: v for k, v in base.to_dict().items() if k not in options.space or options.space[k]["type"] == "fixed"}
    constants.update(spaces.fixed_values(options.space))
    constants["_pretrain_cache"] = cache_dir
    constants["device"] = "cuda" if cluster.gpus_per_trial > 0 else "cpu"
    # DataLoader workers beyond the trial's CPU share would oversubscribe the node.
    constants["num_workers"] = min(base.num_workers, int(cluster.cpus_per_trial))
    if options.search == "grid":
        constants.update(spaces.ray_grid_space(options.space))
    # early stopping inside a trial of several members (a trial of one has no one to rank against)
    constants[RUNGS_KEY], constants[REDUCTION_KEY], constants[METRIC_KEY] = list(rungs), options.reduction_factor, options.metric
    return constants
