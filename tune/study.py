"""One command for a whole study: every task screened, confirmed and finalised, its cost predicted first.

    python tune/study.py --task embedded3 --num-samples 16                    # six embedded tasks, CPU minutes
    python tune/study.py --task office31 --data-root DIR --out studies/office31
    python tune/study.py --all --data-root DIR --plan --rates nvidia-h200     # the paper's 26 tasks: the plan only
    python tune/study.py --all --data-root DIR --budget 12 --rates nvidia-h200
    python tune/study.py --out studies/office31 --resume                     # after a kill: continue

Per task, the four stages of the project's own commands (``tune/stages.py``): the feature cache
(``python -m ssot.features``), the population screen on it (``python tune/search.py --features
--population``), the confirmation of its top ``--top`` configs on images over ``--confirm-seeds``
(``python tune/confirm.py``) and the final runs of the confirmed config over ``--final-seeds``
(``python tune/final.py``); then the table beside the paper, each task's sensitivity dashboard,
the atlas across tasks and the index page (``STUDY/index.html``). Before any work it prints the
plan: the predicted hours of each stage and task (``tune/costs.py``), from rates measured on this
machine by a short calibration (``tune/rates.py``) or from ``--rates FILE``; at the end, the
predicted beside the measured cost of each stage. ``--budget HOURS`` shrinks confirmation until the
plan fits, and says what it gave up. Exit statuses: :mod:`ssot.cli` (2: bad input, before any work;
1: a run diverged or a trial errored; 130: interrupted, ``--resume`` continues).
"""
from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from ssot import cli
from ssot.data.registry import BENCHMARKS, DATASETS, search_tasks, tasks_of
from ssot.errors import ConfigError
from ssot.results.metrics import SEARCH_METRICS
from ssot.results.outputs import check_output
from tune import flags
from tune.stages import DEFAULT_CONFIRM_SEEDS, DEFAULT_FINAL_SEEDS, DEFAULT_POPULATION, StudyOptions

#: The config fields with a flag of their own here (the others: ``--set``).
CONFIG_FLAGS = ("epochs", "pretrain_epochs", "seed", "device", "data_root")


def paper_tasks() -> list[str]:
    """The paper's 26 tasks: every task of its four image benchmarks."""
    return [task for name in BENCHMARKS for task in tasks_of(name)]


def build_parser() -> argparse.ArgumentParser:
    p = cli.Parser(prog="python tune/study.py", description=__doc__.split("\n\n")[0])
    which = p.add_mutually_exclusive_group()
    datasets = ", ".join(name for name, spec in DATASETS.items() if not spec.users_own)
    cli.add_config_flag(which, "task", f"several tasks, or datasets ({datasets}): every task of each", nargs="+", default_text="")
    which.add_argument("--all", action="store_true", help="the paper's 26 tasks (Office-31, ImageCLEF-DA, Office-Home, VisDA-2017)")
    p.add_argument("--out", type=Path, metavar="FOLDER", help="the study folder (default: studies/<the tasks or datasets>)")
    p.add_argument("--resume", action="store_true", help="continue the study in --out (its recorded settings; flags given must agree)")
    s = p.add_argument_group("the stages")
    s.add_argument("--num-samples", type=int, metavar="N", help="configs screened per task (default: 50)")
    s.add_argument("--population", type=int, metavar="P", help=f"configs trained at once per population of the screen "
                   f"(default: {DEFAULT_POPULATION}, at most --num-samples)")
    s.add_argument("--search", choices=("tpe", "random"), help="the screen's sampler (default: tpe)")
    s.add_argument("--metric", choices=SEARCH_METRICS, help="what the screen and confirmation select on (default: target_acc, "
                   "the oracle)")
    s.add_argument("--no-early-stop", action="store_true", help="the screen runs every config to the last epoch")
    s.add_argument("--top", type=int, metavar="K", help="configs of each screen confirmed on images (default: 5)")
    s.add_argument("--confirm-seeds", type=int, nargs="+", metavar="S",
                   help=f"seeds of confirmation (default: {' '.join(map(str, DEFAULT_CONFIRM_SEEDS))})")
    s.add_argument("--final-seeds", type=int, nargs="+", metavar="S",
                   help=f"seeds of the final runs of the confirmed config (default: {' '.join(map(str, DEFAULT_FINAL_SEEDS))}, "
                        "tune/final.py's)")
    c = p.add_argument_group("config (every stage)")
    for field in CONFIG_FLAGS:
        cli.add_config_flag(c, field, default_text="the task's")
    c.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                   help="any other config field, JSON-parsed value (e.g. --set iters_per_epoch=10; repeatable)")
    k = p.add_argument_group("cost")
    k.add_argument("--plan", action="store_true", help="print the plan (predicted hours per stage and task) and stop")
    k.add_argument("--budget", type=float, metavar="HOURS", help="shrink confirmation until the plan fits HOURS, and say what it gave up")
    k.add_argument("--rates", metavar="FILE", help="rates recorded earlier (a file, or a shipped one: nvidia-h200) instead of "
                   "calibrating on this machine")
    k.add_argument("--save-rates", type=Path, metavar="FILE", help="write the rates calibrated here to FILE (never overwritten)")
    r = p.add_argument_group("report")
    r.add_argument("--bootstrap", type=int, metavar="N", help="bootstrap resamples of the dashboards' and the atlas's intervals "
                   "(default: theirs)")
    cli.add_no_images(r)
    g = p.add_argument_group("resources")
    flags.add_trial_resources(g, "run of confirmation and final runs")
    flags.add_ray_flags(g)
    cli.add_quiet(g, verbose="every run's line and the search's progress")
    return p


def _label(args: argparse.Namespace) -> str:
    return "all" if args.all else "-".join(args.task)


def _tasks(names: Sequence[str]) -> list[str]:
    tasks: list[str] = []
    for name in names:
        tasks += [t for t in search_tasks(name) if t not in tasks]
    return tasks


def options_from(args: argparse.Namespace) -> StudyOptions:
    """The study's options from the flags; with ``--resume``, the recorded settings, the flags given
    checked against them by the study."""
    out = args.out
    if args.resume and out is None:
        raise ConfigError("--resume continues the study in --out: pass --out FOLDER.")
    if not args.resume and not (args.all or args.task):
        raise ConfigError("Name the study's tasks: --task TASK|DATASET ... or --all.")
    if out is None:
        out = Path("studies") / _label(args)
    given: dict = {}
    planned: dict = {}
    if args.resume:
        from ssot.results.study import read_study

        recorded = read_study(out)
        given, planned = recorded.settings, recorded.plan
    base = dict(given.get("base", {}))
    base.update(cli.parse_set(args.set))
    for field in CONFIG_FLAGS:
        if getattr(args, field) is not None:
            base[field] = getattr(args, field)
    tasks = paper_tasks() if args.all else _tasks(args.task) if args.task else list(given["tasks"])

    def pick(flag_value, key, default):
        return flag_value if flag_value is not None else given.get(key, default)

    return StudyOptions(
        tasks=tasks, out=str(out), num_samples=pick(args.num_samples, "num_samples", 50),
        population=pick(args.population, "population", DEFAULT_POPULATION), top=pick(args.top, "top", 5),
        seeds=tuple(pick(args.confirm_seeds, "seeds", DEFAULT_CONFIRM_SEEDS)),
        final_seeds=tuple(pick(args.final_seeds, "final_seeds", DEFAULT_FINAL_SEEDS)),
        search=pick(args.search, "search", "tpe"), metric=pick(args.metric, "metric", "target_acc"),
        early_stop=not args.no_early_stop if (args.no_early_stop or not given) else bool(given.get("early_stop", True)),
        base=base, shrunk=dict(given.get("shrunk") or {}),
        gpus_per_run=args.gpus_per_trial if args.gpus_per_trial is not None else planned.get("gpus_per_run"),
        cpus_per_run=args.cpus_per_trial or 1.0,
        bootstrap=pick(args.bootstrap, "bootstrap", None), images=not args.no_images if (args.no_images or not given) else bool(given.get("images", True)),
        resume=args.resume, num_cpus=args.num_cpus, address=args.address, verbose=0 if args.quiet else 2 if args.verbose else 1)


def study(args: argparse.Namespace) -> int:
    """The command's work: the options and data checked, the plan printed (calibrating this machine
    unless ``--rates``), the study run or continued, its predicted beside its measured cost printed."""
    from tune import costs
    from tune.rates import read_rates, write_rates
    from tune.stages import check_study, run_study

    flags.check_resources_args(args)
    typed = [f for f in CONFIG_FLAGS if getattr(args, f) is not None]
    with cli.flag_errors(typed):
        options = options_from(args)
        if args.plan:
            options.validate()
        else:
            check_study(options)
    if args.resume and (args.budget is not None or args.rates or args.save_rates):
        raise ConfigError("--budget, --rates and --save-rates plan a new study; a resumed study keeps the plan it started with.")
    if args.budget is not None and not args.budget > 0:
        raise ConfigError(f"The '--budget' argument must be a number of hours > 0. Got {args.budget:g} instead.")
    if args.save_rates is not None:
        check_output(args.save_rates, "--save-rates", folder=False)
    if args.resume:
        from ssot.results.study import read_study

        recorded = read_study(options.out)
        if args.plan:  # what was predicted, and what is measured so far
            print("\n".join(costs.compare_lines(recorded)))
            return cli.EXIT_OK
        print(f"resuming the study {options.out}: {len(recorded.steps)} step(s) done; its plan was made on "
              f"{recorded.plan.get('machine', 'an unknown machine')}", flush=True)
        outcome = run_study(options)
    else:
        with cli.flag_errors(typed):
            sizes = costs.sizes_for(options)
        rates = read_rates(args.rates) if args.rates else None
        if rates is None:
            from tune.calibrate import calibrate

            print(f"calibrating this machine for {', '.join(costs.datasets_of(options))} (--rates FILE skips this) ...", flush=True)
            rates = calibrate(options, sizes)
        if args.save_rates is not None:
            print(f"wrote the rates to {write_rates(rates, args.save_rates)}")
        plan = costs.plan_study(options, rates, sizes)
        if args.budget is not None:
            options, plan = costs.fit_budget(options, rates, sizes, args.budget)
        print("\n".join(plan.lines("h" if plan.total_s > 3 * 3600 else "min")), flush=True)
        for line in costs.goal_lines(options, rates, plan, all_tasks=args.all):
            print(line, flush=True)
        if args.plan:
            return cli.EXIT_OK
        outcome = run_study(options, plan.to_record(), costs.machine_dict(rates))
    print("\n".join(costs.compare_lines(outcome.record)))
    return outcome.status


def main(argv: list[str] | None = None) -> int:
    """Command line entry point (``ssot-study``)."""
    return cli.command(build_parser(), study, argv, interrupted="rerun with --resume to continue")


if __name__ == "__main__":
    sys.exit(main())
