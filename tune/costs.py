r"""A study's cost before it runs: the work of every step in units, times a machine's rates (:func:`plan_study`).

The work of a task with :math:`n_s` source images, :math:`n_t` target images (of the partial
classes), an evaluation source of :math:`n_e = \min(n_s, \text{source\_eval\_samples})` images,
batch size :math:`b`, :math:`I_s = \lfloor n_s / b \rfloor` iterations per pass over the source,
:math:`I` adaptation iterations per epoch (``iters_per_epoch`` or :math:`I_s`), :math:`E` epochs and
:math:`E_p` pretraining epochs; with a machine's rates (:mod:`tune.rates`: :math:`c` a pretraining
iteration, :math:`s` an SSOT iteration, :math:`v` an evaluated image, :math:`x` an encoded image,
:math:`r` a run's fixed cost, :math:`w` a worker's start):

- one run on images: :math:`T_{run}(E) = r + E_p I_s c + E I s + (E + 1)(n_t + n_e) v`
  (the evaluation after pretraining and after every epoch);
- ``features``: the pretraining and its evaluation, then every image encoded once, and the
  decoded-image cache prepared where one is used:
  :math:`r + E_p I_s c + (n_t + n_e) v + (n_s + n_t)(x + p)`;
- ``screen``: populations of :math:`P` configs (``ceil(N / P)`` of them, :math:`A` at a time); the
  source pretraining on the features once (the search shares it), then per population and epoch
  :math:`I \cdot it(P_e) + (n_t + n_e)\, ev(P_e)` with :math:`P_e` the members alive in epoch
  :math:`e` (ASHA inside a population keeps the top :math:`\lceil P_e / \eta \rceil` at each rung: a
  count known in advance), plus the search's fixed cost: the sum over populations divided by :math:`A`;
- ``confirm``: :math:`K \times S` runs (a race: at most its budget), :math:`R` at a time (CPUs per run,
  or runs per GPU), each :math:`T_{run}` at the confirmation's epochs; in waves of :math:`R`, after
  new workers started (the screen's trials took the machine): :math:`w + \lceil KS / R \rceil T_{run}`;
  packed runs on a GPU: :math:`KS \, T_{run} / \text{speedup}`;
- ``final``: the same for the final seeds, in the confirmation's warm workers;
- ``report``: per task a dashboard (fixed + per trials.csv row + per bootstrap resample and
  trial), the atlas (fixed + per task), the index page.

Predicted seconds are wall time of the rates' machine: GPU-hours on a one-GPU machine. A study
ran on that machine prints them beside what it measured (:func:`compare_lines`). With a budget,
:func:`fit_budget` shrinks confirmation, lever by lever, until the plan fits, and says what each
lever gave up.
"""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ssot.config import SSOTConfig
from ssot.data.registry import dataset_of, task
from ssot.errors import ConfigError
from ssot.results.study import ALL_TASKS, STAGES, StudyRecord, stage_of
from ssot.results.trials import asha_rungs
from tune.options import DEFAULT_GRACE_PERIOD, DEFAULT_REDUCTION_FACTOR
from tune.rates import Rates
from tune.stages import StudyOptions, image_config, steps_of

__all__ = ["TaskSize", "task_size", "StepCost", "Plan", "plan_study", "fit_budget", "alive_per_epoch", "trial_epochs", "compare_lines",
           "goal_lines", "GOAL_HOURS"]

#: The goal of a full study (the paper's 26 tasks, 50 configs screened, top 5 confirmed over 3 seeds,
#: 3 final seeds) on one H100 or H200.
GOAL_HOURS = 12.0


# ------------------------------------------------------------------------------------ sizes
@dataclass(frozen=True)
class TaskSize:
    """The sizes a task's work depends on (module docstring). ``estimated``: counts from the
    published totals, the partial target's share of them estimated by its classes' share."""

    task: str
    dataset: str
    backbone: str
    n_source: int
    n_target: int
    n_source_eval: int
    classes: int
    feature_dim: int
    estimated: bool = False


def task_size(config: SSOTConfig) -> TaskSize:
    """The sizes of ``config``'s task: the published counts of a paper benchmark
    (:attr:`ssot.data.registry.DatasetSpec.published_counts`), or the embedded task itself (built
    in memory: its counts are exact)."""
    spec = task(config.task)
    data = spec.spec
    source_eval = config.source_eval_samples
    if data.on_disk:
        n_s = data.published_counts[spec.source]
        partial, k = len(data.target_class_names), data.num_classes
        n_t = data.published_per_class * partial if data.published_per_class else round(data.published_counts[spec.target] * partial / k)
        n_e = n_s if source_eval == 0 else min(n_s, source_eval)
        return TaskSize(spec.name, data.name, config.backbone, n_s, n_t, n_e, k, 2048, estimated=data.published_per_class is None)
    if data.users_own:
        raise ConfigError(f"Task {config.task!r} has no known sizes to plan with (its images are the user's own).")
    from ssot.data import build_task
    from ssot.data.base import num_samples
    from ssot.models import build_backbone

    built = build_task(config)
    n_s, n_t = num_samples(built.source), num_samples(built.target_eval)
    n_e = n_s if source_eval == 0 else min(n_s, source_eval)
    _, dim = build_backbone(config.replace(pretrained=False))
    return TaskSize(spec.name, data.name, config.backbone, n_s, n_t, n_e, len(built.class_names), dim)


# ------------------------------------------------------------------------------------ the plan
@dataclass
class StepCost:
    """The predicted wall seconds of one step, and the work it counts."""

    task: str
    step: str
    seconds: float
    work: str = ""

    @property
    def stage(self) -> str:
        return stage_of(self.step)


@dataclass
class Plan:
    """A study's predicted cost per step (and so per task and stage), on the rates' machine."""

    machine: str
    rates: str
    steps: list[StepCost]
    gave_up: list[str] = field(default_factory=list)
    fits: bool | None = None  # with a budget: whether the plan fits it
    gpus_per_run: float | None = None  # the GPUs of a run the plan counts with (packing), kept for --resume

    @property
    def total_s(self) -> float:
        return sum(s.seconds for s in self.steps)

    def by_stage(self, tasks: Sequence[str] | None = None) -> dict[str, float]:
        out = {stage: 0.0 for stage in STAGES}
        for s in self.steps:
            if tasks is None or s.task in tasks:
                out[s.stage] += s.seconds
        return out

    def dominant(self) -> tuple[str, float]:
        """The stage that costs most, and its share of the total."""
        stages = self.by_stage()
        stage = max(stages, key=lambda k: stages[k])
        return stage, stages[stage] / self.total_s if self.total_s else 0.0

    def to_record(self) -> dict[str, Any]:
        """The plan as the study's record keeps it (:class:`ssot.results.study.StudyRecord`'s ``plan``)."""
        return {"machine": self.machine, "rates": self.rates, "gave_up": list(self.gave_up), "gpus_per_run": self.gpus_per_run,
                "steps": [{"task": s.task, "step": s.step, "seconds": round(s.seconds, 3), "work": s.work} for s in self.steps]}

    def lines(self, unit: str = "h") -> list[str]:
        """The printed plan: per task its stages, per dataset and in all, the dominant stage."""
        scale, fmt = (3600.0, "{:.2f}") if unit == "h" else (60.0, "{:.1f}")
        tasks = list(dict.fromkeys(s.task for s in self.steps if s.task != ALL_TASKS))
        head = ["task", *STAGES[:-1], "total"]
        rows: list[list[str]] = []
        by_dataset: dict[str, list[float]] = {}
        for t in tasks:
            stages = self.by_stage([t])
            stages.pop("report")
            total = sum(stages.values())
            rows.append([t, *(fmt.format(v / scale) for v in stages.values()), fmt.format(total / scale)])
            d = dataset_of(t)
            by_dataset[d] = [a + b for a, b in zip(by_dataset.get(d, [0.0] * 5), [*stages.values(), total])]
        widths = [max(len(str(r[i])) for r in [head, *rows]) for i in range(len(head))]
        out = [f"plan on {self.machine} (rates: {self.rates}); {'hours' if unit == 'h' else 'minutes'} of wall time:"]
        out.append("  " + "  ".join(h.rjust(w) if i else h.ljust(w) for i, (h, w) in enumerate(zip(head, widths))))
        for r in rows:
            out.append("  " + "  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))))
        if len(by_dataset) > 1 or len(tasks) > 1:
            for d, values in by_dataset.items():
                out.append(f"  {d}: " + ", ".join(f"{s} {fmt.format(v / scale)}" for s, v in zip(STAGES[:-1], values[:-1]))
                           + f"; total {fmt.format(values[-1] / scale)}")
        report = self.by_stage()["report"]
        atlas = ", atlas" if len(tasks) >= 2 else ""
        out.append(f"  report (table, {len(tasks)} dashboard(s){atlas}, index): {fmt.format(report / scale)}")
        stage, share = self.dominant()
        out.append(f"  in all: {self.total_s / 3600:.2f} h ({self.total_s / 60:.1f} min); {stage} dominates ({100 * share:.0f} %)")
        for line in self.gave_up:
            out.append(f"  budget: {line}")
        return out


def alive_per_epoch(members: int, epochs: int, rungs: Sequence[int], reduction_factor: int) -> list[int]:
    """Members of a population trained in each epoch: all until a rung, then the top
    ``ceil(n / reduction_factor)`` (:meth:`ssot.population.Population._rung`); divergence not counted."""
    alive, out = members, []
    for epoch in range(1, epochs + 1):
        out.append(alive)
        if epoch in rungs and epoch < epochs and alive > 1:
            alive = max(1, math.ceil(alive / reduction_factor))
    return out


def trial_epochs(options: StudyOptions, epochs: int) -> list[int]:
    """The epoch each config of a screen reaches: populations of ``options.members``, ASHA inside."""
    rungs = asha_rungs(DEFAULT_GRACE_PERIOD, DEFAULT_REDUCTION_FACTOR, epochs) if options.early_stop else ()
    out: list[int] = []
    left = options.num_samples
    while left > 0:
        members = min(options.members, left)
        alive = alive_per_epoch(members, epochs, rungs, DEFAULT_REDUCTION_FACTOR)
        out += [sum(1 for count in alive if k < count) for k in range(members)]
        left -= members
    return out


@dataclass(frozen=True)
class _Machine:
    cpus: int
    gpus: int
    device: str


def _runs_at_once(options: StudyOptions, machine: _Machine) -> int:
    if machine.device == "cuda" and machine.gpus:
        per_gpu = 1.0 / options.gpus_per_run if options.gpus_per_run else 1.0
        return max(1, int(machine.gpus * per_gpu))
    return max(1, int(machine.cpus // options.cpus_per_run))


def _run_seconds(config: SSOTConfig, size: TaskSize, rates: Rates) -> float:
    m = rates.model(config.backbone)
    i_s = max(1, size.n_source // config.batch_size)
    i = config.iters_per_epoch or i_s
    return (m.run_s + config.pretrain_epochs * i_s * m.ce_iter_s + config.epochs * i * m.ssot_iter_s
            + (config.epochs + 1) * (size.n_target + size.n_source_eval) * m.eval_img_s)


def _runs_seconds(runs: int, config: SSOTConfig, size: TaskSize, rates: Rates, options: StudyOptions, machine: _Machine,
                  cold: bool) -> float:
    one = _run_seconds(config, size, rates)
    packed = machine.device == "cuda" and options.gpus_per_run is not None and options.gpus_per_run < 1 and rates.packing
    at_once = _runs_at_once(options, machine)
    if packed:
        wall = runs * one / float(rates.packing["speedup"])  # type: ignore[index]
    else:
        wall = math.ceil(runs / at_once) * one * (rates.model(config.backbone).shared if min(runs, at_once) > 1 else 1.0)
    return wall + (rates.model(config.backbone).worker_s if cold and runs else 0.0)


def _screen_seconds(options: StudyOptions, size: TaskSize, config: SSOTConfig, rates: Rates, machine: _Machine) -> tuple[float, str]:
    s = rates.screen(size.dataset)
    members = options.members
    sizes = [members] * (options.num_samples // members) + ([options.num_samples % members] if options.num_samples % members else [])
    i_s = max(1, size.n_source // config.batch_size)
    i = config.iters_per_epoch or i_s
    rungs = asha_rungs(DEFAULT_GRACE_PERIOD, DEFAULT_REDUCTION_FACTOR, config.epochs) if options.early_stop else ()
    images = size.n_target + size.n_source_eval
    work = 0.0
    for p in sizes:
        for alive in alive_per_epoch(p, config.epochs, rungs, DEFAULT_REDUCTION_FACTOR):
            work += i * s.iteration(alive) + s.evaluation(alive, images)
    # a GPU trains one population at a time; on CPUs the populations that run at once share the
    # machine's cores (tune.cluster.cpu_share), and the rates were measured with all of them
    at_once = min(len(sizes), machine.gpus) if machine.device == "cuda" and machine.gpus else 1
    pretrain = config.pretrain_epochs * i_s * s.pretrain_iter_s + s.evaluation(1, images)
    member_epochs = sum(sum(alive_per_epoch(p, config.epochs, rungs, DEFAULT_REDUCTION_FACTOR)) for p in sizes)
    return (s.search_s + pretrain + work / at_once,
            f"{len(sizes)} population(s) of <= {members}, {member_epochs} member-epochs of {i} iterations")


def plan_study(options: StudyOptions, rates: Rates, sizes: Mapping[str, TaskSize]) -> Plan:
    """The predicted wall seconds of every step of the study of ``options`` on the machine of
    ``rates`` (module docstring); ``sizes`` by task (:func:`task_size`)."""
    machine = _Machine(options.num_cpus or rates.cpus, rates.gpus, rates.device)
    steps: list[StepCost] = []
    for t in options.tasks:
        size, config = sizes[t], image_config(options, t)
        m = rates.model(config.backbone)
        i_s = max(1, size.n_source // config.batch_size)
        encoded = size.n_source + size.n_target
        features = (m.run_s + config.pretrain_epochs * i_s * m.ce_iter_s + (size.n_target + size.n_source_eval) * m.eval_img_s
                    + encoded * (m.encode_img_s + m.prepare_img_s))
        steps.append(StepCost(t, "features", features, f"{config.pretrain_epochs * i_s} pretraining iterations, {encoded} images encoded"))
        seconds, work = _screen_seconds(options, size, config, rates, machine)
        steps.append(StepCost(t, "screen", seconds, work))
        confirming = options.confirmation(t)
        confirm_config = config.replace(epochs=min(confirming.epochs, config.epochs)) if confirming.epochs else config
        steps.append(StepCost(t, "confirm", _runs_seconds(confirming.runs, confirm_config, size, rates, options, machine, cold=True),
                              f"{confirming.runs} runs of {confirm_config.epochs} epochs"))
        steps.append(StepCost(t, "final", _runs_seconds(len(options.final_seeds), config, size, rates, options, machine, cold=False),
                              f"{len(options.final_seeds)} runs of {config.epochs} epochs"))
    r = rates.report
    bootstrap = 200 if options.bootstrap is None else options.bootstrap
    steps.append(StepCost(ALL_TASKS, "table", 0.0))
    for t in options.tasks:
        rows = sum(trial_epochs(options, image_config(options, t).epochs))
        steps.append(StepCost(t, "dashboard", r.dashboard_s + rows * r.dashboard_row_s + bootstrap * options.num_samples * r.dashboard_boot_s,
                              f"{rows} rows, {bootstrap} resamples"))
    if len(options.tasks) >= 2:
        steps.append(StepCost(ALL_TASKS, "atlas", r.atlas_s + len(options.tasks) * r.atlas_task_s))
    steps.append(StepCost(ALL_TASKS, "index", r.index_s))
    steps[0].seconds += rates.ray_start_s  # Ray starts once, before the first stage
    order = {key: i for i, key in enumerate(steps_of(options.tasks))}
    steps.sort(key=lambda s: order.get((s.task, s.step), len(order)))
    return Plan(machine=rates.machine, rates=rates.measured, steps=steps, gpus_per_run=options.gpus_per_run)


# ------------------------------------------------------------------------------------ the budget
def fit_budget(options: StudyOptions, rates: Rates, sizes: Mapping[str, TaskSize], hours: float) -> tuple[StudyOptions, Plan]:
    """The study of ``options`` shrunk until its plan fits ``hours`` (or as far as it goes), and its plan.

    First (1) pack 4 runs per GPU under MPS where the rates measured it (nothing given up in the
    results). Then the confirmation of one dataset at a time, the one whose confirmation costs most
    first, lever by lever, each only as far as needed: (2) race its candidates (:mod:`tune.racing`:
    one beaten after 2 seeds stops) with fewer runs per task, or when even the smallest race is too
    much, 2 seeds per candidate; (3) stop its confirmation runs early, down to half their epochs (the
    final runs keep all); (4) confirm fewer configs, down to 2. So the datasets that cost little keep
    their whole confirmation. The plan's ``gave_up`` says what each lever gave up, and where;
    ``fits`` whether the result fits.
    """
    if not hours > 0:
        raise ConfigError(f"The '--budget' argument must be a number of hours > 0. Got {hours!r} instead.")
    budget = hours * 3600.0
    current = options
    gave_up: list[str] = []

    def total(o: StudyOptions) -> float:
        return plan_study(o, rates, sizes).total_s

    if total(current) > budget and rates.device == "cuda" and rates.packing and current.gpus_per_run is None:
        per_gpu = int(rates.packing.get("runs_per_gpu", 4))
        current = dataclasses.replace(current, gpus_per_run=1.0 / per_gpu)
        gave_up.append(f"confirmation and final runs packed {per_gpu} per GPU under MPS ({rates.packing['speedup']:g}x one run's "
                       "throughput, measured): nothing given up in the results; needs the GPU memory of 4 runs")

    def confirm_cost(o: StudyOptions, dataset: str) -> float:
        return sum(s.seconds for s in plan_study(o, rates, sizes).steps if s.step == "confirm" and dataset_of(s.task) == dataset)

    datasets = sorted(dict.fromkeys(dataset_of(t) for t in current.tasks), key=lambda d: -confirm_cost(current, d))
    for dataset in datasets:
        if total(current) <= budget:
            break
        current, lines = _shrink(current, dataset, rates, sizes, budget)
        gave_up += [f"{dataset}: {line}" for line in lines]
    plan = plan_study(current, rates, sizes)
    plan.fits = plan.total_s <= budget
    plan.gave_up = gave_up
    if not plan.fits:
        stage, share = plan.dominant()
        plan.gave_up.append(f"does not fit {hours:g} h: {plan.total_s / 3600:.2f} h remain, {stage} dominates "
                            f"({100 * share:.0f} %); no lever shrinks it further")
    return current, plan


def _shrink(options: StudyOptions, dataset: str, rates: Rates, sizes: Mapping[str, TaskSize],
            budget: float) -> tuple[StudyOptions, list[str]]:
    """:func:`fit_budget`'s levers (2) to (4) on one dataset's confirmation; the options and what they gave up."""
    tasks = [t for t in options.tasks if dataset_of(t) == dataset]
    first = options.confirmation(tasks[0])
    longest = max(image_config(options, t).epochs for t in tasks)
    changes: dict[str, Any] = dict(options.shrunk.get(dataset, {}))

    def with_(**more: Any) -> StudyOptions:
        return dataclasses.replace(options, shrunk={**options.shrunk, dataset: {**changes, **more}})

    def fits(**more: Any) -> bool:
        return plan_study(with_(**more), rates, sizes).total_s <= budget

    full = first.top * len(first.seeds)
    if len(first.seeds) >= 3 and first.top >= 2:
        raced = next((runs for runs in range(full - 1, 2 * first.top, -1) if fits(race_budget=runs)), None)
        changes.update({"race_budget": raced} if raced is not None else {"seeds": list(first.seeds[:2])})
    low = max(1, math.ceil(longest / 2))
    if not fits():
        changes["epochs"] = next((e for e in range(longest - 1, low, -1) if fits(epochs=e)), low)
    if not fits() and first.top > 2:
        def top(k: int) -> dict[str, Any]:
            return {"top": k, **({"race_budget": max(2 * k + 1, math.ceil(changes["race_budget"] * k / first.top))}
                                 if "race_budget" in changes else {})}

        changes.update(top(next((k for k in range(first.top - 1, 2, -1) if fits(**top(k))), 2)))
        if "epochs" in changes:  # with fewer configs, the runs may keep more of their epochs
            changes["epochs"] = next((e for e in range(longest, changes["epochs"], -1) if fits(epochs=e)), changes["epochs"])
            if changes["epochs"] == longest:
                del changes["epochs"]
    lines = []
    if "race_budget" in changes:
        lines.append(f"confirmation races its candidates (one beaten after 2 seeds at 95 % confidence stops): at most "
                     f"{changes['race_budget']} runs per task instead of {full}; the pick's mean may rest on fewer seeds")
    if "seeds" in changes:
        lines.append(f"confirmation runs each candidate on 2 seeds ({' '.join(map(str, changes['seeds']))}) instead of "
                     f"{len(first.seeds)}: the pick's mean rests on 2 seeds")
    if "epochs" in changes:
        lines.append(f"confirmation runs stop at epoch {changes['epochs']} of {longest}: candidates are compared before the end "
                     "of training (the final runs keep every epoch)")
    if "top" in changes:
        lines.append(f"confirms the screen's top {changes['top']} instead of {first.top}: a config the screen ranked lower is "
                     "never tried on images")
    return with_(), lines


# ------------------------------------------------------------------------------------ predicted vs measured
def compare_lines(record: StudyRecord) -> list[str]:
    """Predicted beside measured wall time per stage and in all (the steps the record holds)."""
    predicted, measured = record.predicted(), record.measured()
    if not predicted:
        return []
    out = [f"cost on {record.plan.get('machine')} (predicted from {record.plan.get('rates')}):",
           f"  {'stage':<9} {'predicted':>10} {'measured':>10} {'measured/predicted':>19}"]
    total_p = total_m = 0.0
    for stage in STAGES:
        p = sum(v for (_, s), v in predicted.items() if s == stage)
        m = sum(v for (_, s), v in measured.items() if s == stage)
        total_p, total_m = total_p + p, total_m + m
        ratio = f"{m / p:.2f}" if p > 0 and m > 0 else ""
        out.append(f"  {stage:<9} {p:>9.0f}s {m:>9.0f}s {ratio:>19}")
    out.append(f"  {'total':<9} {total_p:>9.0f}s {total_m:>9.0f}s {total_m / total_p if total_p else 0:>19.2f}")
    loads = [float(step["load"]) for step in record.steps.values() if step.get("load") is not None]
    if loads:
        out.append(f"  load average at the steps' ends: {min(loads):.1f} to {max(loads):.1f} (mean {sum(loads) / len(loads):.1f}); "
                   "on a shared machine the others' work slows every step alike")
    return out


def goal_lines(options: StudyOptions, rates: Rates, plan: Plan, *, all_tasks: bool) -> list[str]:
    """The plan against the goal of a full study (:data:`GOAL_HOURS` on one H100/H200), for
    ``--all`` on a GPU: whether it meets it, and which stage and dataset dominate when it does not."""
    if not all_tasks or rates.device != "cuda":
        return []
    hours = plan.total_s / 3600.0
    if hours <= GOAL_HOURS:
        return [f"goal: {hours:.1f} h <= {GOAL_HOURS:g} h on one GPU: met"]
    stage, share = plan.dominant()
    by_dataset: dict[str, float] = {}
    for s in plan.steps:
        if s.stage == stage:
            by_dataset[dataset_of(s.task) or "all"] = by_dataset.get(dataset_of(s.task) or "all", 0.0) + s.seconds
    worst = max(by_dataset, key=lambda d: by_dataset[d])
    return [f"goal: {hours:.1f} h > {GOAL_HOURS:g} h on one GPU: not met; {stage} dominates ({100 * share:.0f} % of the plan, "
            f"{worst} {by_dataset[worst] / 3600:.1f} h of it); --budget {GOAL_HOURS:g} shrinks confirmation to fit"]


def machine_dict(rates: Rates) -> dict[str, Any]:
    """The record's description of the machine a plan is for."""
    return {"label": rates.machine, "device": rates.device, "cpus": rates.cpus, "gpus": rates.gpus}


def sizes_for(options: StudyOptions) -> dict[str, TaskSize]:
    """:func:`task_size` of every task of the study (the embedded ones built once per dataset and settings)."""
    return {t: task_size(image_config(options, t)) for t in options.tasks}


def datasets_of(options: StudyOptions) -> list[str]:
    """The datasets of the study's tasks, in order."""
    return list(dict.fromkeys(dataset_of(t) for t in options.tasks))

