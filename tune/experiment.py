"""Run (or resume) a hyperparameter search of SSOT on one task, and write its tidy outputs.

An experiment is one search on one task, in ``<storage_path>/<name>/<task>/``: Ray's own files
plus

- ``experiment.json``: task, search kind, metric, space, status (``running`` / ``finished``);
- ``trials.csv``: one row per trial and epoch, every hyperparameter and metric, and the trial's
  final status: ``completed`` (reached the last epoch), ``early-stopped`` (cut by ASHA),
  ``diverged`` (non-finite loss; ``reason`` says where), ``errored`` or ``running``;
- ``best_config.json``: the best completed trial's full config, ready for
  ``python -m ssot.train --config``.

Trials are compared on their *final-epoch* target accuracy; ASHA-truncated trials reach Optuna
as complete with a truncated value, so the tables keep them apart by status.
"""
from __future__ import annotations

import datetime as dt
import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
from ray import tune as ray_tune

from ssot.config import SSOTConfig
from ssot.data import build_task
from ssot.errors import ConfigError, SSOTError
from tune import space as spaces
from tune.trainable import ssot_trainable, trial_dirname

METRIC, MODE = "target_acc", "max"
SEARCHES = ("tpe", "grid", "random")
METRIC_COLUMNS = ["target_acc", "source_acc", "loss_total", "loss_ce", "loss_ot", "loss_ent", "ot_value",
                  "outlier_mass", "n_pred_classes", "source_only_target_acc", "time_s"]
PATH_FIELDS = ("data_root", "features_path", "pretrained_path")


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

    def validate(self) -> None:
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
        if self.max_concurrent is not None and self.max_concurrent < 1:
            raise ConfigError(f"The 'max_concurrent' parameter must be >= 1. Got {self.max_concurrent!r} instead.")
        spaces.validate_space(self.space)
        if self.search == "grid" and not spaces.is_grid(self.space):
            raise ConfigError("--search grid needs a grid space (the paper's lambda grid). Got a sampled space.")
        if self.search != "grid" and spaces.is_grid(self.space):
            raise ConfigError(f"--search {self.search} samples the space; a grid space needs --search grid.")


@dataclass
class SearchOutcome:
    """What a finished (or interrupted) search left: its folder, table and best config."""

    path: str
    trials: pd.DataFrame
    best_config: SSOTConfig | None
    finished: bool


# ---------------------------------------------------------------------------- storage helpers
def _fs(uri: str) -> tuple[Any, str]:
    """A pyarrow filesystem and path for a local path or any URI Ray accepts."""
    import pyarrow.fs

    if "://" in uri:
        return pyarrow.fs.FileSystem.from_uri(uri)
    return pyarrow.fs.LocalFileSystem(), str(Path(uri).resolve())


def _exists(uri: str) -> bool:
    import pyarrow.fs

    fs, path = _fs(uri)
    return fs.get_file_info(path).type != pyarrow.fs.FileType.NotFound


def write_text(uri: str, text: str) -> None:
    fs, path = _fs(uri)
    fs.create_dir(path.rsplit("/", 1)[0], recursive=True)
    with fs.open_output_stream(path) as out:
        out.write(text.encode())


def read_text(uri: str) -> str:
    fs, path = _fs(uri)
    with fs.open_input_stream(path) as fh:
        return fh.read().decode()


def _join(root: str, *parts: str) -> str:
    return "/".join([root.rstrip("/"), *parts])


def experiment_root(options: SearchOptions) -> str:
    """``<storage_path>/<name>`` with local paths made absolute (Ray requires it)."""
    storage = options.storage_path if "://" in options.storage_path else str(Path(options.storage_path).resolve())
    return _join(storage, options.name or f"ssot-{options.task}")


# ---------------------------------------------------------------------------- the search
class TrialLines(ray_tune.Callback):
    """One printed line per finished trial (Ray's own tables are ``--verbose 2``)."""

    def on_trial_complete(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        self._line(trials, trial, "")

    def on_trial_error(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        self._line(trials, trial, " ERRORED")

    @staticmethod
    def _line(trials: list, trial: Any, suffix: str) -> None:
        done = sum(t.status in ("TERMINATED", "ERROR") for t in trials) + 1
        r, c = trial.last_result or {}, trial.config
        acc = f"target_acc {r['target_acc']:.4f}" if "target_acc" in r else "no result"
        flag = " DIVERGED" if r.get("diverged") else suffix
        print(f"[{min(done, len(trials))}/{len(trials)}] trial {trial.trial_id}: epoch {r.get('epoch', 0)}, {acc}  "
              f"lambda_ot {c.get('lambda_ot', float('nan')):.3g} lambda_ent {c.get('lambda_ent', float('nan')):.3g} "
              f"eps {c.get('eps', float('nan')):.3g} width {c.get('potential_width')}{flag}", flush=True)


def base_config(options: SearchOptions) -> SSOTConfig:
    """The task's defaults with ``options.base`` applied, local paths made absolute."""
    base = dict(options.base)
    for key in PATH_FIELDS:
        if base.get(key) and "://" not in str(base[key]):
            base[key] = str(Path(base[key]).expanduser().resolve())
    return SSOTConfig.for_task(options.task, **base)


def check_resources(options: SearchOptions) -> float:
    """Refuse, within seconds, a request the Ray cluster cannot ever satisfy; returns GPUs per trial."""
    import ray

    total = ray.cluster_resources()
    gpus, cpus = total.get("GPU", 0.0), total.get("CPU", 0.0)
    want = options.gpus_per_trial if options.gpus_per_trial is not None else (1.0 if gpus >= 1 else 0.0)
    if want > gpus:
        raise ConfigError(f"--gpus-per-trial {want:g} asks for more GPUs than the Ray cluster has ({gpus:g}); "
                          f"trials would stay PENDING forever. Use --gpus-per-trial 0 (CPU) or a fraction <= {gpus:g}.")
    if options.cpus_per_trial > cpus:
        raise ConfigError(f"--cpus-per-trial {options.cpus_per_trial:g} exceeds the {cpus:g} CPUs of the Ray cluster. "
                          f"Use a value <= {cpus:g}.")
    return want


def _searcher(options: SearchOptions, base: SSOTConfig) -> Any:
    import optuna
    from ray.tune.search import ConcurrencyLimiter
    from ray.tune.search.optuna import OptunaSearch

    if options.search == "grid":
        return None
    if options.search == "tpe":
        sampler = optuna.samplers.TPESampler(seed=options.seed, multivariate=True)
        points = [spaces.default_point(options.space, base)]
    else:
        sampler = optuna.samplers.RandomSampler(seed=options.seed)
        points = None
    searcher = OptunaSearch(space=spaces.optuna_space(options.space), metric=METRIC, mode=MODE, sampler=sampler, points_to_evaluate=points)
    # ConcurrencyLimiter enforces the limit inside the searcher itself: some Ray releases
    # ignored TuneConfig.max_concurrent_trials with custom searchers.
    return ConcurrencyLimiter(searcher, max_concurrent=options.max_concurrent) if options.max_concurrent else searcher


def _scheduler(options: SearchOptions, epochs: int) -> Any:
    from ray.tune.schedulers import ASHAScheduler, FIFOScheduler

    if not options.early_stop or epochs <= options.grace_period:
        return FIFOScheduler()
    # metric and mode come from TuneConfig (Ray refuses them twice for a scheduler)
    return ASHAScheduler(time_attr="training_iteration", max_t=epochs,
                         grace_period=options.grace_period, reduction_factor=options.reduction_factor)


def _param_space(options: SearchOptions, base: SSOTConfig, gpus: float, cache_dir: str | None) -> dict[str, Any]:
    constants = {k: v for k, v in base.to_dict().items() if k not in options.space or options.space[k]["type"] == "fixed"}
    constants.update(spaces.fixed_values(options.space))
    constants.update({"_threads": max(1, int(options.cpus_per_trial)), "_pretrain_cache": cache_dir})
    constants["device"] = "cuda" if gpus > 0 else "cpu"
    # DataLoader workers beyond the trial's CPU share would oversubscribe the node.
    constants["num_workers"] = min(base.num_workers, int(options.cpus_per_trial))
    if options.search == "grid":
        constants.update(spaces.ray_grid_space(options.space))
    return constants


def run_search(options: SearchOptions, *, address: str | None = None, num_cpus: int | None = None) -> SearchOutcome:
    """Run or resume the search of ``options`` on one task; write the tidy outputs.

    Connects to the Ray cluster at ``address`` (``"auto"`` for the local one started with
    ``ray start``), else starts a local Ray (shut down again at the end).
    """
    import ray

    options.validate()
    base = base_config(options)
    build_task(base)  # fail fast, before Ray starts, on a missing dataset or unknown task
    root = experiment_root(options)
    path = _join(root, base.task)
    exists = _exists(_join(path, "experiment.json")) or _exists(path)
    if exists and not options.resume:
        raise SSOTError(f"Experiment {path} already exists. Pass --resume to continue it, or choose another --name.")
    if options.resume and not exists:
        raise SSOTError(f"--resume: no experiment at {path} to resume. Drop --resume to start it.")

    # Ray keeps a single trial pending by default with searchers, so trials start one at a time,
    # each waiting for the previous one's worker to boot: let as many be pending as may run.
    os.environ.setdefault("TUNE_MAX_PENDING_TRIALS_PG", str(options.max_concurrent or 16))
    os.environ.setdefault("TUNE_WARN_EXCESSIVE_EXPERIMENT_CHECKPOINT_SYNC_THRESHOLD_S", "0")
    started_ray = not ray.is_initialized()
    if started_ray:
        try:
            ray.init(address=address, num_cpus=None if address else num_cpus, include_dashboard=False,
                     ignore_reinit_error=True, log_to_driver=options.verbose > 1)
        except ConnectionError as exc:
            raise SSOTError(
                f"Cannot connect to the Ray cluster at --address {address} ({exc}). Check that it runs (`ray status`); "
                "a cluster with token authentication needs RAY_AUTH_MODE=token and its token "
                "(~/.ray/auth_token or RAY_AUTH_TOKEN) when the address is explicit, or use --address auto on the head node."
            ) from None
    try:
        gpus = check_resources(options)
        return _run(options, base, root, path, gpus, resume=exists)
    finally:
        if started_ray:
            ray.shutdown()


def _run(options: SearchOptions, base: SSOTConfig, root: str, path: str, gpus: float, *, resume: bool) -> SearchOutcome:
    epochs = base.epochs
    info = _read_json(_join(path, "experiment.json")) if resume else None
    if info is not None and info.get("status") == "finished":
        print(f"{base.task}: experiment {path} already finished; nothing to resume.")
        return collect(path)
    cache_dir = None if "://" in root else _join(root, "_pretrained")
    trainable = ray_tune.with_resources(ssot_trainable, {"cpu": options.cpus_per_trial, "gpu": gpus})
    if resume and ray_tune.Tuner.can_restore(path):
        tuner = ray_tune.Tuner.restore(path, trainable, resume_unfinished=True, resume_errored=True)
    else:
        tuner = ray_tune.Tuner(
            trainable,
            param_space=_param_space(options, base, gpus, cache_dir),
            tune_config=ray_tune.TuneConfig(
                metric=METRIC, mode=MODE, search_alg=_searcher(options, base), scheduler=_scheduler(options, epochs),
                num_samples=options.num_samples, max_concurrent_trials=options.max_concurrent,
                reuse_actors=True, trial_dirname_creator=trial_dirname,
            ),
            run_config=ray_tune.RunConfig(
                name=base.task, storage_path=root, verbose=max(0, options.verbose - 1),
                callbacks=[TrialLines()] if options.verbose >= 1 else [],
                checkpoint_config=ray_tune.CheckpointConfig(num_to_keep=1),
                failure_config=ray_tune.FailureConfig(max_failures=0),
            ),
        )
    if info is None:
        info = {"task": base.task, "dataset": _dataset_of(base.task), "name": root.rsplit("/", 1)[-1],
                "search": options.search, "metric": METRIC, "mode": MODE, "max_epochs": epochs,
                "num_samples": options.num_samples, "space": options.space, "early_stop": options.early_stop,
                "grace_period": options.grace_period, "reduction_factor": options.reduction_factor,
                "base_config": base.to_dict(), "status": "running", "started": _now(), "finished": None}
    info["status"] = "running"
    write_text(_join(path, "experiment.json"), json.dumps(info, indent=2) + "\n")
    results = tuner.fit()
    finished = _all_terminated(path, expected_trials(info))
    frame = trial_frame(results, info, finished=finished)
    return _write_outputs(path, info, frame, finished)


def expected_trials(info: dict[str, Any]) -> int:
    """Trials a complete search has: ``num_samples``, times the number of cells for a grid."""
    cells = math.prod(len(s["values"]) for s in info["space"].values() if s["type"] == "grid")
    return info["num_samples"] * cells


def _all_terminated(path: str, expected: int) -> bool:
    """Whether Ray's saved state has all ``expected`` trials, each in a final state (an
    interrupted search may not have created every trial yet)."""
    from ray.tune import ExperimentAnalysis

    try:
        analysis = ExperimentAnalysis(path)
    except Exception:  # noqa: BLE001 - no state at all: nothing ran
        return False
    trials = analysis.trials
    return len(trials) >= expected and all(t.status in ("TERMINATED", "ERROR") for t in trials)


def _write_outputs(path: str, info: dict[str, Any], frame: pd.DataFrame, finished: bool) -> SearchOutcome:
    write_text(_join(path, "trials.csv"), frame.to_csv(index=False))
    best = best_config(frame, info)
    if best is not None:
        write_text(_join(path, "best_config.json"), json.dumps(best.to_dict(), indent=2) + "\n")
    info["status"] = "finished" if finished else "running"
    info["finished"] = _now() if finished else None
    write_text(_join(path, "experiment.json"), json.dumps(info, indent=2) + "\n")
    return SearchOutcome(path, frame, best, finished)


def collect(path: str) -> SearchOutcome:
    """Re-read the outputs of an experiment folder."""
    info = _read_json(_join(path, "experiment.json")) or {}
    frame = pd.read_csv(_fs(_join(path, "trials.csv"))[1], dtype={"trial_id": str}) if _exists(_join(path, "trials.csv")) else pd.DataFrame()
    best = SSOTConfig.from_json(_fs(_join(path, "best_config.json"))[1]) if _exists(_join(path, "best_config.json")) else None
    return SearchOutcome(path, frame, best, info.get("status") == "finished")


# ---------------------------------------------------------------------------- tidy table
def trial_frame(results: Any, info: dict[str, Any], *, finished: bool) -> pd.DataFrame:
    """One row per (trial, epoch) with hyperparameters, metrics and the trial's final status."""
    rows: list[dict[str, Any]] = []
    searched = list(info["space"])
    hyper = list(dict.fromkeys(["lambda_ot", "lambda_ent", "eps", "potential_width", *searched]))
    for result in results:
        params = result.config or {}
        trial_id = _trial_id(result)
        history = result.metrics_dataframe if result.metrics_dataframe is not None else pd.DataFrame()
        if len(history) and "epoch" in history:
            # A trial restored from its checkpoint replays the epochs reported after it: keep the
            # last report of each epoch (the one the trial's final state descends from).
            history = history.drop_duplicates(subset="epoch", keep="last")
        records = history.to_dict("records") if len(history) else []
        status, reason = _status(records, result.error, info["max_epochs"], finished)
        common = {"task": info["task"], "trial_id": trial_id, "search": info["search"], **{h: params.get(h) for h in hyper}}
        if not records:
            rows.append({**common, "epoch": math.nan, **{m: math.nan for m in METRIC_COLUMNS}, "status": status, "reason": reason})
        for rec in records:
            rows.append({**common, "epoch": rec.get("epoch"), **{m: rec.get(m, math.nan) for m in METRIC_COLUMNS},
                         "status": status, "reason": reason})
    columns = ["task", "trial_id", "search", *hyper, "epoch", *METRIC_COLUMNS, "status", "reason"]
    frame = pd.DataFrame(rows, columns=columns)
    return frame.sort_values(["trial_id", "epoch"], kind="stable").reset_index(drop=True)


def _trial_id(result: Any) -> str:
    metrics = result.metrics or {}
    if metrics.get("trial_id"):
        return str(metrics["trial_id"])
    return Path(str(result.path)).name


def _status(records: list[dict[str, Any]], error: Any, max_epochs: int, finished: bool) -> tuple[str, str]:
    if records and int(records[-1].get("diverged", 0) or 0):
        return "diverged", str(records[-1].get("reason", ""))
    if error is not None:
        return "errored", str(error).strip().splitlines()[-1][:300] if str(error).strip() else type(error).__name__
    if records and int(records[-1].get("epoch", 0)) >= max_epochs:
        return "completed", ""
    return ("early-stopped", "") if finished else ("running", "")


def final_results(frame: pd.DataFrame) -> pd.DataFrame:
    """Each trial's last row (its final accuracy and status)."""
    if frame.empty:
        return frame
    return frame.sort_values(["trial_id", "epoch"]).groupby("trial_id", as_index=False).tail(1)


def best_completed_trial(trials: pd.DataFrame) -> tuple[str | None, float]:
    """The completed trial with the highest final-epoch ``target_acc``.

    Parameters
    ----------
    trials : pandas.DataFrame
        ``trials.csv``: one row per (trial, epoch) with at least ``trial_id``, ``epoch``,
        ``target_acc`` and ``status``.

    Returns
    -------
    tuple
        ``(trial_id, accuracy)``, or ``(None, nan)`` when no trial completed with a finite accuracy.
    """
    done = trials[trials["status"] == "completed"].copy()
    done["epoch"] = pd.to_numeric(done["epoch"], errors="coerce")
    done["target_acc"] = pd.to_numeric(done["target_acc"], errors="coerce")
    done = done.dropna(subset=["epoch"])
    if done.empty:
        return None, math.nan
    last = done.sort_values("epoch").groupby("trial_id", sort=False).tail(1)
    last = last[last["target_acc"].map(lambda v: math.isfinite(v))]
    if last.empty:
        return None, math.nan
    best = last.loc[last["target_acc"].idxmax()]
    return str(best["trial_id"]), float(best["target_acc"])


def best_config(frame: pd.DataFrame, info: dict[str, Any]) -> SSOTConfig | None:
    """The config of the completed trial with the best final-epoch target accuracy."""
    trial_id, _ = best_completed_trial(frame)
    if trial_id is None:
        return None
    last = final_results(frame)
    row = last[last["trial_id"].astype(str) == trial_id].iloc[0]
    values = dict(info["base_config"])
    for name in info["space"]:
        kind = type(getattr(SSOTConfig(), name))  # cast the CSV's numbers back to the field's type
        values[name] = kind(row[name]) if kind in (int, float) else row[name]
    return SSOTConfig.from_dict(values, source=f"best trial {row['trial_id']}")


def summary_lines(frame: pd.DataFrame, info: dict[str, Any], top: int = 5) -> list[str]:
    """A printed summary: counts per status and the best trials on final accuracy."""
    last = final_results(frame)
    if last.empty:
        return [f"{info['task']}: no trial results."]
    counts = last["status"].value_counts().to_dict()
    lines = [f"{info['task']}: {len(last)} trials (" + ", ".join(f"{v} {k}" for k, v in sorted(counts.items())) + ")"]
    done = last[last["status"] == "completed"].sort_values("target_acc", ascending=False).head(top)
    lines.append(f"  top {len(done)} completed trials by final target_acc (source-only baseline "
                 f"{last['source_only_target_acc'].dropna().mean():.4f}):")
    for _, r in done.iterrows():
        lines.append(f"    {r['trial_id']:>14}  target_acc {r['target_acc']:.4f}  lambda_ot {r['lambda_ot']:.4g}  "
                     f"lambda_ent {r['lambda_ent']:.4g}  eps {r['eps']:.4g}  width {int(r['potential_width'])}")
    return lines


# ---------------------------------------------------------------------------- small helpers
def _dataset_of(task: str) -> str:
    from ssot.data import dataset_of

    return dataset_of(task)


def _read_json(uri: str) -> dict[str, Any] | None:
    if not _exists(uri):
        return None
    try:
        return json.loads(read_text(uri))
    except json.JSONDecodeError:
        return None


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")

