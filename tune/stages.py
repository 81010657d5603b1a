"""A whole study: every task screened, confirmed and finalised, then the report (:func:`run_study`).

The stages of one task, each the library function of the project's own command (nothing is
searched, confirmed or trained a second way):

``features``
    the feature cache of the task's source-pretrained backbone: :func:`ssot.features.build_feature_cache`
    (``python -m ssot.features``), into ``features/<task>.pt``;
``screen``
    the population screen of ``num_samples`` configs on that cache: :func:`tune.experiment.run_search`
    (``python tune/search.py --features CACHE --population P``), experiment ``screen/<task>``;
``confirm``
    the screen's ``top`` configs on images over ``seeds``: :func:`tune.confirmation.top_candidates`,
    :func:`tune.confirmation.on_images`, :func:`tune.confirmation.confirm_candidates` and :func:`tune.confirmation.write_confirmation`
    (``python tune/confirm.py``), runs trained by :func:`tune.runner.train_on_ray`, into ``confirm/<task>/``;
``final``
    the confirmed config over ``final_seeds``, on images: :func:`tune.runner.train_on_ray`
    (``python tune/final.py``), run records in ``final/runs/``.

Then the report, once: the table beside the paper (:mod:`ssot.results.final_table`, ``final/results.md``),
then, as the processes a user would run (``tune`` never imports ``analysis``), each task's
sensitivity dashboard (``python -m analysis.sensitivity``), the atlas across tasks
(``python -m analysis.atlas``, two tasks or more) and the study's index page with the screen's
agreement with confirmation (``python -m analysis.study``).

The study's record (:mod:`ssot.results.study`, ``study.json``) says which steps are done; it is
written after every step. A killed study continues with ``--resume``: a done step is never run
again, and an unfinished one continues with its own command's resume (the search's ``--resume``,
the run records of confirmation and final runs reused). The files an unfinished report step or
confirmation had begun to write are its own derived outputs, made again from what is kept.
"""
from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ssot import cli
from ssot.config import SSOTConfig
from ssot.data.registry import dataset_of
from ssot.errors import ConfigError, ResultsError, SSOTError, one_line
from ssot.results import numbers
from ssot.results import study as records
from ssot.results.final_table import result_paths, results_table, write_results
from ssot.results.lock import LOCK_FILE, ExperimentLock, LockedError
from ssot.results.metrics import SEARCH_METRICS
from ssot.results.outputs import check_output
from ssot.results.record import RunRecord, read_record
from ssot.results.record import run_path as final_run_path
from ssot.results.study import StudyPaths, StudyRecord, read_study, step_key, write_study
from tune.options import SEARCHES

__all__ = ["Confirmation", "SHRINKABLE", "StudyOptions", "StudyOutcome", "run_study", "check_study", "image_config", "screen_options", "steps_of",
           "DEFAULT_CONFIRM_SEEDS", "DEFAULT_FINAL_SEEDS", "DEFAULT_POPULATION"]

Log = Callable[[str], None]

#: Seeds of confirmation (new to the screen's seed 0 and to the final runs) and of the final runs
#: (``tune/final.py``'s, the project's final-run seeds).
DEFAULT_CONFIRM_SEEDS, DEFAULT_FINAL_SEEDS = (3, 4, 5), (0, 1, 2)
#: Configs trained at once per population in a screen: TPE proposes each population from the
#: results of those before it (one population of all configs would be random search).
DEFAULT_POPULATION = 16


@dataclass(frozen=True)
class Confirmation:
    """How a task's confirmation runs: its ``top`` configs over ``seeds``, raced within
    ``race_budget`` runs (None: every config on every seed), each run stopped at ``epochs``
    (None: the config's; the final runs keep all)."""

    top: int
    seeds: tuple[int, ...]
    race_budget: int | None = None
    epochs: int | None = None

    @property
    def runs(self) -> int:
        """Runs at most."""
        return self.race_budget if self.race_budget is not None else self.top * len(self.seeds)

    def check(self, where: str) -> None:
        if self.race_budget is not None and (self.race_budget < 2 * self.top or len(self.seeds) < 2):
            raise ConfigError(f"{where}: a race of {self.top} configs needs 2 seeds or more and at least {2 * self.top} runs. "
                              f"Got {len(self.seeds)} seeds and {self.race_budget} runs.")
        if self.epochs is not None and self.epochs < 1:
            raise ConfigError(f"{where}: confirmation epochs must be an int >= 1. Got {self.epochs!r} instead.")
        if self.top < 1 or not self.seeds:
            raise ConfigError(f"{where}: confirmation needs a config and a seed. Got top {self.top}, seeds {list(self.seeds)}.")


#: What ``--budget`` may change in a dataset's confirmation (:class:`Confirmation`'s fields).
SHRINKABLE = ("top", "seeds", "race_budget", "epochs")


@dataclass
class StudyOptions:
    """Everything a study needs (``tune/study.py`` fills it from the command line).

    ``base`` overrides every stage's config (``{"epochs": 5, "data_root": ...}``); the screen
    trains the task's config on its feature cache, confirmation and final runs the same config on
    images. The budget's levers (``tune/costs.py``) are ``shrunk`` (per dataset, what its
    confirmation gives up: :data:`SHRINKABLE` fields of :class:`Confirmation`) and ``gpus_per_run``
    (packing: runs per GPU).
    """

    tasks: list[str]
    out: str
    num_samples: int = 50
    population: int = DEFAULT_POPULATION
    top: int = 5
    seeds: tuple[int, ...] = DEFAULT_CONFIRM_SEEDS
    final_seeds: tuple[int, ...] = DEFAULT_FINAL_SEEDS
    search: str = "tpe"
    metric: str = "target_acc"
    early_stop: bool = True
    base: dict[str, Any] = field(default_factory=dict)
    shrunk: dict[str, dict[str, Any]] = field(default_factory=dict)
    gpus_per_run: float | None = None
    cpus_per_run: float = 1.0
    bootstrap: int | None = None  # the dashboards' and the atlas's bootstrap resamples (None: theirs)
    images: bool = True  # the report's static figures (PDF/PNG)
    resume: bool = False
    num_cpus: int | None = None
    address: str | None = None
    verbose: int = 1

    @property
    def members(self) -> int:
        """Configs per population: ``population``, at most ``num_samples``."""
        return max(1, min(self.population, self.num_samples))

    def confirmation(self, task: str) -> Confirmation:
        """How ``task``'s confirmation runs: ``top`` and ``seeds``, with what the budget shrank for its dataset."""
        changes = dict(self.shrunk.get(dataset_of(task), {}))
        if "seeds" in changes:
            changes["seeds"] = tuple(changes["seeds"])
        return dataclasses.replace(Confirmation(top=self.top, seeds=tuple(self.seeds)), **changes)

    def settings(self) -> dict[str, Any]:
        """What defines the study's results (recorded; ``--resume`` refuses others)."""
        return {"tasks": list(self.tasks), "num_samples": self.num_samples, "population": self.members, "top": self.top,
                "seeds": list(self.seeds), "final_seeds": list(self.final_seeds), "search": self.search,
                "metric": self.metric, "early_stop": self.early_stop, "base": dict(self.base),
                "shrunk": {k: dict(v) for k, v in self.shrunk.items()},
                "bootstrap": self.bootstrap, "images": self.images}

    def validate(self) -> None:
        """Refuse, in one line naming the flag, options that cannot make a study."""
        if not self.tasks:
            raise ConfigError("--task names no task: pass tasks or a dataset, or --all.")
        if len(set(self.tasks)) != len(self.tasks):
            raise ConfigError(f"--task names a task twice: {' '.join(self.tasks)}.")
        for flag, value, low in (("--num-samples", self.num_samples, 1), ("--population", self.population, 1), ("--top", self.top, 1)):
            if not (isinstance(value, int) and value >= low):
                raise ConfigError(f"The '{flag}' argument must be an int in [{low}, inf). Got {value!r} instead.")
        if self.top > self.num_samples:
            raise ConfigError(f"--top {self.top} exceeds --num-samples {self.num_samples}: the screen has fewer configs to confirm.")
        cli.check_seeds(self.seeds)
        cli.check_seeds(self.final_seeds)
        shared = sorted(set(self.seeds) & set(self.final_seeds))
        if shared:
            raise ConfigError(f"--confirm-seeds and --final-seeds share seed(s) {' '.join(map(str, shared))}: a final run on a seed "
                              "that chose its config repeats that run and reports it with the selection's luck (the winner's "
                              "curse). Give the final runs other seeds.")
        if self.search not in SEARCHES or self.search == "grid":
            raise ConfigError(f"--search must be tpe or random (a screen samples configs). Got {self.search!r} instead.")
        if self.metric not in SEARCH_METRICS:
            raise ConfigError(f"--metric must be one of {', '.join(SEARCH_METRICS)}. Got {self.metric!r} instead.")
        for dataset, changes in self.shrunk.items():
            unknown = sorted(set(changes) - set(SHRINKABLE))
            if unknown:
                raise ConfigError(f"The budget of {dataset} changes {', '.join(unknown)}; it may change {', '.join(SHRINKABLE)}.")
        for task in self.tasks:
            self.confirmation(task).check(f"The confirmation of {task}")
        if self.bootstrap is not None and self.bootstrap < 0:
            raise ConfigError(f"The '--bootstrap' argument must be an int in [0, inf). Got {self.bootstrap} instead.")
        if self.cpus_per_run <= 0:
            raise ConfigError(f"--cpus-per-trial must be a number > 0. Got {self.cpus_per_run!r} instead.")
        image_config(self, self.tasks[0])  # the config overrides, validated (naming the field)


@dataclass
class StudyOutcome:
    """What a study left: its folder, record and exit status (:mod:`ssot.cli`)."""

    paths: StudyPaths
    record: StudyRecord
    status: int


# ------------------------------------------------------------------------------------ configs
def image_config(options: StudyOptions, task: str) -> SSOTConfig:
    """The config of ``task``'s runs on images: the task's defaults with the study's overrides, one
    torch thread per CPU of a run (its share of the machine, recorded as a search's trials record it)."""
    base = dict(options.base)
    base.setdefault("num_threads", max(1, int(options.cpus_per_run)))
    return SSOTConfig.for_task(task, **base)


def screen_options(options: StudyOptions, task: str, cache: Path, paths: StudyPaths, resume: bool) -> Any:
    """The :class:`tune.options.SearchOptions` of ``task``'s screen (``tune/search.py --features
    CACHE --population P`` with the study's settings)."""
    from tune.options import SearchOptions

    base = {k: v for k, v in options.base.items() if k != "num_threads"}  # a population's CPUs are its share (tune.cluster)
    base.update(backbone="features", features_path=str(cache))
    seed = int(base.get("seed", 0))
    return SearchOptions(task=task, num_samples=options.num_samples, search=options.search, base=base, seed=seed,
                         early_stop=options.early_stop, storage_path=str(paths.screens), name=paths.SCREEN_NAME,
                         resume=resume, verbose=1 if options.verbose >= 2 else 0, metric=options.metric,
                         population=options.members, cpus_per_trial=None, gpus_per_trial=None)


def steps_of(tasks: Sequence[str]) -> list[tuple[str, str]]:
    """Every step of a study of ``tasks``, in the order it runs: the stages of each task, then the
    report (the table, one dashboard per task, the atlas with two tasks or more, the index page)."""
    steps = [(t, s) for t in tasks for s in records.TASK_STAGES]
    steps.append((records.ALL_TASKS, "table"))
    steps += [(t, "dashboard") for t in tasks]
    if len(tasks) >= 2:
        steps.append((records.ALL_TASKS, "atlas"))
    steps.append((records.ALL_TASKS, "index"))
    return steps


# ------------------------------------------------------------------------------------ checks
def check_study(options: StudyOptions) -> None:
    """Everything refused before any work, without torch or Ray: the options, the study folder (one
    that exists needs ``--resume``; ``--resume`` needs one), and every task's data."""
    from ssot.data import check_task

    options.validate()
    root = Path(options.out)
    if options.resume:
        if not records.is_study(root):
            raise ResultsError(f"--resume: no study in {root} ({records.STUDY_FILE} is missing). Drop --resume to start it.")
    elif root.exists() and (not root.is_dir() or any(root.iterdir())):
        raise ResultsError(f"The study folder {root} already exists; pass --resume to continue it, or choose another --out.")
    check_output(root, "--out", folder=True, exists_ok=True)
    for task in options.tasks:
        check_task(image_config(options, task))


# ------------------------------------------------------------------------------------ the study
class Progress:
    """The study's progress lines: the step, done / left, and an ETA from the plan's remaining
    seconds at the pace measured so far (measured / predicted over the finished steps)."""

    def __init__(self, record: StudyRecord, steps: Sequence[tuple[str, str]], log: Log):
        self.record, self.steps, self.log = record, list(steps), log
        self.predicted = {(r["task"], r["step"]): float(r["seconds"]) for r in record.plan.get("steps", [])}

    def pace(self) -> float:
        spent = [(float(self.record.steps[step_key(t, s)]["seconds"]), self.predicted.get((t, s), 0.0))
                 for t, s in self.steps if self.record.done(t, s) and "reused" not in self.record.steps[step_key(t, s)]]
        measured, planned = sum(m for m, _ in spent), sum(p for _, p in spent)
        return measured / planned if planned > 0 and measured > 0 else 1.0

    def line(self, task: str, step: str, seconds: float) -> str:
        done = sum(self.record.done(t, s) for t, s in self.steps)
        left = [(t, s) for t, s in self.steps if not self.record.done(t, s)]
        eta = sum(self.predicted.get(k, 0.0) for k in left) * self.pace()
        planned = self.predicted.get((task, step))
        versus = f" (predicted {_duration(planned)})" if planned else ""
        where = "study" if task == records.ALL_TASKS else task
        tail = f"; ETA {_duration(eta)}" if left and self.predicted else ""
        return f"[study] {where} {step} done in {_duration(seconds)}{versus}; {done}/{len(self.steps)} steps done, {len(left)} left{tail}"


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def run_study(options: StudyOptions, plan: Mapping[str, Any] | None = None, machine: Mapping[str, Any] | None = None,
              *, log: Log | None = None) -> StudyOutcome:
    """Run (or with ``options.resume`` continue) the study of ``options`` (module docstring).

    ``plan`` is the predicted cost (:meth:`tune.costs.Plan.to_record`), recorded with a new study
    (a resumed one keeps its own) and used for the ETA; ``machine`` describes where it runs.
    Everything is checked before any work (:func:`check_study`).
    """
    check_study(options)
    log = log or (say if options.verbose >= 1 else _quiet)  # --quiet: the plan and the cost only (tune/study.py prints them)
    paths = StudyPaths(Path(options.out).resolve())
    paths.root.mkdir(parents=True, exist_ok=True)
    try:
        with ExperimentLock(str(paths.root), notes=log):
            return _run(options, paths, plan, machine, log)
    except LockedError:
        raise ResultsError(f"The study {paths.root} is in use by another tune/study.py (its lock "
                           f"{paths.root / LOCK_FILE}). Wait for it to end; if it no longer runs, delete the lock "
                           "and rerun.") from None


def _run(options: StudyOptions, paths: StudyPaths, plan: Mapping[str, Any] | None, machine: Mapping[str, Any] | None,
         log: Log) -> StudyOutcome:
    settings = options.settings()
    if options.resume:
        record = read_study(paths.root)
        differ = record.differences(settings)
        if differ:
            raise ConfigError(f"--resume: the study {paths.root} was started with other settings ({'; '.join(differ)}). "
                              "Rerun with its settings (python tune/study.py --out FOLDER --resume takes them from it).")
        record.status = records.RUNNING
        log(f"[study] resuming {paths.root}: {len(record.steps)} step(s) done")
    else:
        record = StudyRecord(settings=settings, machine=dict(machine or {}), plan=dict(plan or {}))
    write_study(paths.root, record)
    steps = steps_of(options.tasks)
    progress = Progress(record, steps, log)
    worst = cli.EXIT_OK
    todo = [(t, s) for t, s in steps if s in records.TASK_STAGES and not record.done(t, s)]
    if todo:
        start = time.monotonic()  # Ray's start counts in the first step, as the plan counts it
        with _ray(options):
            for task, stage in todo:
                log(f"[study] {task} {stage} ...")
                status, details = STAGE_FUNCTIONS[stage](options, paths, record, task, log)
                worst = max(worst, status)
                if status in (cli.EXIT_INTERRUPTED, cli.EXIT_NO_RESULT):
                    write_study(paths.root, record)
                    log(f"[study] {task} {stage} did not finish (exit status {status}); rerun with --resume to continue")
                    return StudyOutcome(paths, record, status)
                record.finish(task, stage, time.monotonic() - start, load=_load(), **details)
                write_study(paths.root, record)
                log(progress.line(task, stage, record.steps[step_key(task, stage)]["seconds"]))
                start = time.monotonic()
    for task, step in steps:
        if step in records.TASK_STAGES or record.done(task, step):
            continue
        start = time.monotonic()
        details = REPORT_FUNCTIONS[step](options, paths, record, task, log)
        record.finish(task, step, time.monotonic() - start, load=_load(), **details)
        write_study(paths.root, record)
        log(progress.line(task, step, record.steps[step_key(task, step)]["seconds"]))
    _remove(paths.partial)  # the report's scratch folder, empty once every step moved its output into place
    record.status = records.FINISHED
    write_study(paths.root, record)
    if record.done(records.ALL_TASKS, "index"):
        log(f"[study] finished: {paths.index}")
    return StudyOutcome(paths, record, worst)


@contextmanager
def _ray(options: StudyOptions) -> Iterator[None]:
    """One Ray instance for every stage of the study (each stage's own call joins it), shut down at
    the end; its processes are ended if this driver is killed (:mod:`tune.reaper`)."""
    from tune.cluster import connected
    from tune.options import SearchOptions

    request = SearchOptions(task="", gpus_per_trial=options.gpus_per_run, cpus_per_trial=options.cpus_per_run, verbose=0)
    with connected(request, options.cpus_per_run, address=options.address, num_cpus=options.num_cpus):
        yield


# ------------------------------------------------------------------------------------ the stages
StageResult = tuple[int, dict[str, Any]]


def features_stage(options: StudyOptions, paths: StudyPaths, record: StudyRecord, task: str, log: Log) -> StageResult:
    """The feature cache of ``task`` (``python -m ssot.features --task TASK --out features/TASK.pt``).
    A cache written before a kill that the record missed is checked (its checksum) and kept."""
    from ssot.data.features import read_feature_cache
    from ssot.features import build_feature_cache

    out = paths.features(task)
    if out.exists():
        read_feature_cache(out)  # a damaged or foreign file is refused in one line (exit status 2)
        log(f"{task}: feature cache {out} is complete (written before the study stopped); kept")
        return cli.EXIT_OK, {"reused": True}
    meta = build_feature_cache(image_config(options, task), out, progress=options.verbose >= 2)
    acc = meta.get("source_only_target_acc")
    log(f"{task}: wrote {out}" + (f" (source-only target_acc {acc:.4f})" if acc is not None else ""))
    return cli.EXIT_OK, {}


def screen_stage(options: StudyOptions, paths: StudyPaths, record: StudyRecord, task: str, log: Log) -> StageResult:
    """The population screen of ``task`` on its cache (``python tune/search.py --features CACHE
    --population P``); a screen begun before a kill continues with the search's ``--resume``."""
    from tune.experiment import run_search
    from tune.outputs import exit_status_of

    begun = paths.screen(task).exists()
    outcome = run_search(screen_options(options, task, paths.features(task), paths, resume=begun),
                         address=options.address, num_cpus=options.num_cpus)
    status = exit_status_of(outcome)
    trials = outcome.trials["trial_id"].nunique() if not outcome.trials.empty else 0
    log(f"{task}: screened {trials} configs ({outcome.status}) in {paths.screen(task)}")
    return status, {}


def confirm_stage(options: StudyOptions, paths: StudyPaths, record: StudyRecord, task: str, log: Log) -> StageResult:
    """The screen's top configs of ``task`` on images over seeds (``python tune/confirm.py``), as
    :meth:`StudyOptions.confirmation` says (raced, or stopped early, where the budget shrank it); run records reused on resume, the confirmed config in
    ``confirm/<task>/<task>.json``."""
    from tune import confirmation, racing
    from tune.runner import train_on_ray

    out = paths.confirm(task)
    plan = options.confirmation(task)
    base = image_config(options, task)
    if plan.epochs is not None:
        base = base.replace(epochs=min(plan.epochs, base.epochs))
    candidates = confirmation.on_images(confirmation.top_candidates(paths.screen(task), plan.top), base)
    if len(candidates) < plan.top:
        log(f"{task}: only {len(candidates)} config(s) of the screen reached its last epoch; confirming those")

    def runs(pairs: Sequence[tuple[confirmation.Candidate, int]]) -> dict:
        jobs = {(c.label, s): (c.config.replace(seed=s), confirmation.run_path(out, c.task, c.trial_id, s)) for c, s in pairs}
        return train_on_ray(jobs, num_cpus=options.num_cpus, address=options.address, cpus_per_run=options.cpus_per_run,
                            gpus_per_run=options.gpus_per_run, log=log if options.verbose >= 1 else _quiet)

    rule = None
    if plan.race_budget is not None and len(candidates) > 1:
        rule = racing.RaceRule(budget=max(plan.race_budget, 2 * len(candidates)))
    found, races = confirmation.confirm_candidates(candidates, plan.seeds, runs, rule, log=log)
    table = confirmation.confirmation_table(candidates, found, plan.seeds, races)
    _clear(confirmation.output_paths(out, [task]))  # this step's own tables, begun before a kill: made again
    confirmation.write_confirmation(table, candidates, out)
    record.confirmations[task] = [
        {"trial_id": str(r["trial_id"]), "search_rank": int(r["search_rank"]),
         "search_value": numbers.finite(r["search_value"]), "mean": numbers.finite(r["mean"]),
         "std": numbers.finite(r["std"]), "seeds": str(r["seeds"]), "confirmed": bool(r["confirmed"])}
        for r in table.to_dict("records")]
    pick = table[table["confirmed"]].iloc[0]
    log(f"{task}: confirmed trial {pick['trial_id']} (screen's #{pick['search_rank']}), mean {pick['mean']:.4f} over seeds {pick['seeds']}")
    return cli.runs_status(found.values()), {"runs": len(found)}


def final_stage(options: StudyOptions, paths: StudyPaths, record: StudyRecord, task: str, log: Log) -> StageResult:
    """The confirmed config of ``task`` over ``final_seeds`` on images (``python tune/final.py``),
    with all its epochs; run records reused on resume."""
    from tune.runner import train_on_ray

    confirmed = SSOTConfig.from_json(paths.confirm(task) / f"{task}.json")
    config = confirmed.replace(epochs=image_config(options, task).epochs)
    jobs = {(task, s): (config.replace(seed=s), final_run_path(paths.final, task, s)) for s in options.final_seeds}
    found = train_on_ray(jobs, num_cpus=options.num_cpus, address=options.address, cpus_per_run=options.cpus_per_run,
                         gpus_per_run=options.gpus_per_run, log=log if options.verbose >= 1 else _quiet)
    return cli.runs_status(found.values()), {"runs": len(found)}


STAGE_FUNCTIONS: dict[str, Callable[[StudyOptions, StudyPaths, StudyRecord, str, Log], StageResult]] = {
    "features": features_stage, "screen": screen_stage, "confirm": confirm_stage, "final": final_stage}


# ------------------------------------------------------------------------------------ the report
def table_step(options: StudyOptions, paths: StudyPaths, record: StudyRecord, task: str, log: Log) -> dict[str, Any]:
    """The final table beside the paper (``final/results.csv`` and ``results.md``)."""
    from ssot.results.final_table import to_markdown

    runs: dict[str, list[RunRecord]] = {t: [read_record(final_run_path(paths.final, t, s)) for s in options.final_seeds]
                                        for t in options.tasks}
    table = results_table(runs)
    _clear(result_paths(paths.final))
    csv_path, md_path = write_results(table, paths.final)
    log(to_markdown(table).rstrip())
    log(f"wrote {csv_path} and {md_path}")
    return {}


def _report_flags(options: StudyOptions) -> list[str]:
    flags = ["--bootstrap", str(options.bootstrap)] if options.bootstrap is not None else []
    return flags + ([] if options.images else ["--no-images"])


def dashboard_step(options: StudyOptions, paths: StudyPaths, record: StudyRecord, task: str, log: Log) -> dict[str, Any]:
    """``python -m analysis.sensitivity screen/<task> --out dashboards/<task>.html``, written aside and moved into place."""
    work = _fresh(paths.partial / f"dashboard-{task}")
    page = work / f"{task}.html"
    run_command("analysis.sensitivity", [str(paths.screen(task)), "--out", str(page), *_report_flags(options)], log)
    paths.dashboards.mkdir(parents=True, exist_ok=True)
    for item in sorted(work.iterdir(), key=lambda p: p.suffix == ".html"):  # the page last: there means complete
        target = paths.dashboards / item.name
        _remove(target)
        os.replace(item, target)
    work.rmdir()
    return {}


def atlas_step(options: StudyOptions, paths: StudyPaths, record: StudyRecord, task: str, log: Log) -> dict[str, Any]:
    """``python -m analysis.atlas screen --out atlas``, written aside and moved into place."""
    work = _fresh(paths.partial / "atlas")
    flags = _report_flags(options)
    run_command("analysis.atlas", [str(paths.screen_root), "--out", str(work / "atlas"), *flags], log)
    _remove(paths.atlas)
    os.replace(work / "atlas", paths.atlas)
    shutil.rmtree(work)
    return {}


def index_step(options: StudyOptions, paths: StudyPaths, record: StudyRecord, task: str, log: Log) -> dict[str, Any]:
    """``python -m analysis.study STUDY``: the index page and the screen's agreement with confirmation."""
    others = [(t, s) for t, s in steps_of(options.tasks) if s != "index"]
    if all(record.done(t, s) for t, s in others):
        record.status = records.FINISHED  # the page is the study's last step: it shows the study finished
    write_study(paths.root, record)  # what the page reads: every step so far
    try:
        run_command("analysis.study", [str(paths.root), "--overwrite"], log)
    except BaseException:
        record.status = records.RUNNING
        write_study(paths.root, record)
        raise
    return {}


REPORT_FUNCTIONS: dict[str, Callable[[StudyOptions, StudyPaths, StudyRecord, str, Log], dict[str, Any]]] = {
    "table": table_step, "dashboard": dashboard_step, "atlas": atlas_step, "index": index_step}


def run_command(module: str, args: Sequence[str], log: Log) -> None:
    """Run ``python -m module args`` as a user would; its output goes to ``log``; a failure is one
    line naming the command and its last error line."""
    command = [sys.executable, "-m", module, *args]
    done = subprocess.run(command, capture_output=True, text=True)
    lines = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]
    for line in lines[-3:]:
        log(f"  {line}")
    if done.returncode != 0:
        last = next((line for line in reversed(lines) if line.startswith("error")), lines[-1] if lines else "")
        raise SSOTError(f"`python -m {module} {' '.join(args)}` failed (exit status {done.returncode}): {one_line(last)}")


# ------------------------------------------------------------------------------------ files
def _clear(paths: Sequence[Path]) -> None:
    """Remove the derived files an unfinished step of this study began to write (they are made
    again from the kept inputs: run records, experiments)."""
    for path in paths:
        Path(path).unlink(missing_ok=True)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)


def _fresh(folder: Path) -> Path:
    """An empty work folder of a report step (what a killed attempt left there is removed)."""
    _remove(folder)
    folder.mkdir(parents=True)
    return folder


def _quiet(line: str) -> None:
    pass


def _load() -> float | None:
    """The machine's load average over the last minute (recorded with each step: a shared machine's
    other work slows a step as much as its own does), None where the system does not say."""
    try:
        return round(os.getloadavg()[0], 1)
    except OSError:
        return None


def say(line: str) -> None:
    """Print a progress line at once (a study's output is often a file: ``... > study.log``)."""
    print(line, flush=True)
