"""Search SSOT's hyperparameters with Ray Tune (Optuna TPE + ASHA, the paper's grid, or random).

    python tune/search.py --task P2I --num-samples 50          # one GPU box or CPU
    python tune/search.py --task digits --num-samples 20       # embedded default task, CPU
    python tune/search.py --task office31 --num-samples 50     # every task of a dataset
    python tune/search.py --task P2I --search grid             # the paper's 5x5 lambda grid
    python tune/search.py --task A2W --features a2w.pt         # screen on a feature cache
    python tune/search.py --task A2W --features a2w.pt --population 64 --num-samples 200   # 64 configs per Ray trial
    python tune/search.py --task P2H --features p2h.pt --population 16 --configs-from RESULTS/e2e/P2H   # replay a search's configs
    python tune/search.py --task S2H --warm-start RESULTS/x/P2H RESULTS/x/H2P   # start from other tasks' searches
    python tune/search.py --task P2I --address auto            # an existing Ray cluster
    python tune/search.py --task P2I --name my-exp --resume    # continue after a crash
    python tune/search.py --task digits --optuna-storage sqlite:///optuna.db   # optuna-dashboard sqlite:///optuna.db
    python tune/search.py --task digits --tracker mlflow --tracker tensorboard # log the trials to trackers too
    python tune/search.py --task P2I --address HEAD:6379 --storage-path s3://bucket/ssot   # a cluster (docs/clusters.md)
    python tune/search.py --task A2W --image-cache off --gpus-per-trial 1   # JPEGs, one trial per GPU: the defaults turned off

An image task's search trains on its decoded-image cache (prepared before the trials start) and,
on a local GPU machine, packs its trials with MPS when they fit; it says each choice in one line
and records it in experiment.json (``choices``: :mod:`tune.choices`, docs/gpu.md).

Results go to <storage-path>/<name>/<task>/ (trials.csv, best_config.json, experiment.json);
trials.csv and best_config.json (the best so far) are rewritten after each finished trial.
"""
from __future__ import annotations

import argparse
import json
import sys

from ssot import cli
from ssot.data.registry import DATASETS, search_tasks, searched_tasks
from ssot.errors import ConfigError
from ssot.results import space as spaces
from ssot.results.metrics import SEARCH_METRICS
from tune import flags
from tune.options import DEFAULT_GRACE_PERIOD, DEFAULT_MAX_FAILURES, DEFAULT_REDUCTION_FACTOR, SEARCHES, SearchOptions, check_options
from tune.trackers import TRACKERS

#: The config fields that have a flag of their own here (the others: ``--set``).
CONFIG_FLAGS = ("task", "eps", "potential_width", "epochs", "seed", "data_root", "features_path", "image_cache")
#: The flags of the sampled space: flag -> the field it samples.
RANGES = {"--lambda-ot-range": "lambda_ot", "--lambda-ent-range": "lambda_ent", "--eps-range": "eps"}


def build_parser() -> argparse.ArgumentParser:
    space = spaces.default_space()
    p = cli.Parser(prog="python tune/search.py", description=__doc__.split("\n\n")[0])
    datasets = ", ".join(name for name in DATASETS if searched_tasks(name))
    cli.add_config_flag(p, "task", f"or a dataset ({datasets}): one search per task of it", required=True)
    p.add_argument("--num-samples", type=int, metavar="N",
                   help="configs per task, trained --population at a time per Ray trial; with --search grid: repeats of "
                        "the grid (default: 20; with --search grid 1)")
    p.add_argument("--search", choices=SEARCHES, default="tpe",
                   help="tpe (Optuna's TPE) or random sample the space below; grid runs the paper's 5x5 grid of lambda_OT "
                        "x lambda_Ent")
    g = p.add_argument_group("search space (TPE and random: log-uniform ranges; widths are a choice)")
    for flag, field in RANGES.items():
        low, high = space[field]["low"], space[field]["high"]
        g.add_argument(flag, type=float, nargs=2, metavar=("LOW", "HIGH"),
                       help=f"the range of {field} (default: {low:g} {high:g})")
    g.add_argument("--widths", type=int, nargs="+", metavar="W",
                   help=f"the widths of g to choose from (default: {cli.shown(space['potential_width']['values'])})")
    cli.add_config_flag(g, "eps", "with --search grid its fixed value (TPE and random sample --eps-range)")
    cli.add_config_flag(g, "potential_width", "with --search grid its fixed value (TPE and random choose from --widths)")
    t = p.add_argument_group("training")
    cli.add_config_flag(t, "epochs", "per trial: ASHA's max_t")
    cli.add_config_flag(t, "seed", "and of the search's sampler")
    cli.add_config_flag(t, "data_root")
    cli.add_config_flag(t, "features_path", "here: screen on it instead of images")
    cli.add_config_flag(t, "image_cache", "here: prepared by the search before its trials start")
    t.add_argument("--population", type=int, metavar="P",
                   help="configs per Ray trial, trained at once as one population (P > 1 needs --features: stacked weights, "
                        "ASHA's rungs inside the population; TPE proposes each trial's configs from every result so far) "
                        "(default: 1)")
    t.add_argument("--configs-from", metavar="EXPERIMENT",
                   help="replay the configs of a finished search (its task folder, e.g. RESULTS/e2e/P2H): the screen trains "
                        "exactly those (--num-samples and the space become that search's); analysis/proxy.py compares the two")
    t.add_argument("--warm-start", nargs="+", metavar="EXPERIMENT",
                   help="start from finished searches of other tasks in the same space (their task folders or URIs, e.g. "
                        "RESULTS/NAME/P2H): each one's best config is tried first, in this order, and TPE is informed by "
                        "their trials (docs/search.md, Warm start)")
    t.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                   help="any other config field, JSON-parsed value (e.g. --set lr=3e-4 --set use_mask=false; repeatable)")
    t.add_argument("--metric", default="target_acc", choices=SEARCH_METRICS,
                   help="what TPE, ASHA and best_config.json optimise; target_acc is the oracle (uses target labels), "
                        "the others are label-free validators")
    t.add_argument("--smoke-test", action="store_true", help="tiny search to check the setup: 2 trials x 2 short epochs")
    s = p.add_argument_group("early stopping (ASHA on epochs)")
    s.add_argument("--grace-period", type=int, default=DEFAULT_GRACE_PERIOD, metavar="EPOCHS",
                   help="epochs every trial runs before ASHA may stop it")
    s.add_argument("--reduction-factor", type=int, default=DEFAULT_REDUCTION_FACTOR, metavar="R",
                   help="ASHA keeps the top 1/R of the trials at each rung")
    s.add_argument("--no-early-stop", action="store_true", help="run every trial to the last epoch")
    r = p.add_argument_group("resources and storage")
    flags.add_trial_resources(r, cpus_default=None, cpus_auto="1 per trial; populations share the machine's CPUs",
                              gpus_auto="image trials on a local GPU machine: as many per GPU as fit, up to 4, with MPS, "
                                        "docs/gpu.md; else 1 if the cluster has GPUs, else 0")
    r.add_argument("--max-concurrent", type=int, metavar="N",
                   help="most trials running at once (default: as many as the resources hold)")
    flags.add_ray_flags(r)
    r.add_argument("--trial-resources", type=_resources, default={}, metavar="JSON",
                   help="custom Ray resources per trial, e.g. '{\"worker_node\": 1}' to run trials only on nodes started with "
                        "ray start --resources '{\"worker_node\": N}' (default: none)")
    r.add_argument("--no-mps", action="store_true", help="do not use NVIDIA MPS for trials that share a GPU (by default a "
                   "search whose trials share a GPU uses a running MPS daemon or starts one for its lifetime; docs/gpu.md)")
    r.add_argument("--max-failures", type=int, default=DEFAULT_MAX_FAILURES, metavar="N",
                   help="restarts of a failed trial (node lost, worker killed, error) from its last checkpoint before it counts as errored")
    r.add_argument("--storage-path", default="ray_results", metavar="PATH",
                   help="local folder (shared, e.g. NFS, on a cluster) or a URI Ray accepts, e.g. s3://bucket/prefix "
                        "(endpoint and credentials from AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_DEFAULT_REGION)")
    r.add_argument("--name", help="experiment name, a folder under --storage-path (default: ssot-<task>)")
    r.add_argument("--resume", action="store_true", help="continue an existing experiment of this name")
    r.add_argument("--optuna-storage", metavar="URL", help="keep the search's Optuna study (its record, study <name>/<task>) in "
                                                          "this database (sqlite:///PATH, postgresql://...) instead of the "
                                                          "experiment folder's study.journal; watch it with `optuna-dashboard URL`")
    r.add_argument("--tracker", action="append", default=[], choices=TRACKERS,
                   help="also log every trial (parameters, each epoch's metrics, status) to this tracker (repeatable): "
                        "MLflow at $MLFLOW_TRACKING_URI (else sqlite:///./mlflow.db), TensorBoard event files in the "
                        "trial folders, W&B offline runs in wandb/ under $WANDB_DIR (else the current folder) "
                        "(pip install -e '.[trackers]')")
    r.add_argument("--keep-checkpoints", action="store_true",
                   help="keep the last checkpoint of every trial (otherwise removed when the trial ends)")
    cli.add_quiet(r, verbose="Ray's progress tables too")
    return p


def _resources(text: str) -> dict[str, float]:
    """Parse ``--trial-resources``: a JSON object of resource names to amounts."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        value = None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"must be a JSON object such as '{{\"worker_node\": 1}}', got {text!r}")
    return value


def _space(args: argparse.Namespace) -> spaces.Space:
    """The space of the flags (a grid's fixed values, or the sampled ranges and widths), refused
    naming the flag."""
    given = {flag: rng for flag, rng in ((f, getattr(args, RANGES[f] + "_range")) for f in RANGES) if rng}
    if args.search == "grid":
        if given or args.widths:
            raise ConfigError(f"{', '.join([*given, *(['--widths'] if args.widths else [])])} set the sampled space; "
                              "--search grid runs the paper's grid (set its fixed values with --eps and --potential-width).")
        fixed = {field: getattr(args, field) for field in ("eps", "potential_width") if getattr(args, field) is not None}
        return spaces.paper_grid_space(**fixed)
    pinned = [cli.config_flag(f) for f in ("eps", "potential_width") if getattr(args, f) is not None]
    if pinned:
        raise ConfigError(f"{' and '.join(pinned)} set{'s' if len(pinned) == 1 else ''} a fixed value of --search grid; "
                          f"--search {args.search} samples eps and the width (set their ranges with --eps-range and --widths).")
    space = spaces.default_space()
    for flag, (low, high) in given.items():
        if not 0 < low < high:
            raise ConfigError(f"{flag} must be LOW HIGH with 0 < LOW < HIGH. Got {low:g} {high:g} instead.")
        space[RANGES[flag]] = {"type": "loguniform", "low": low, "high": high}
    if args.widths:
        if min(args.widths) < 1:
            raise ConfigError(f"--widths must be ints >= 1. Got {cli.shown(args.widths)} instead.")
        space["potential_width"] = {"type": "choice", "values": args.widths}
    return space


def options_for(args: argparse.Namespace, task: str, name: str | None) -> SearchOptions:
    """The options of the search of ``task`` that the flags ask for."""
    base = cli.parse_set(args.set)
    for field in ("epochs", "data_root", "features_path", "image_cache"):
        if getattr(args, field) is not None:
            base[field] = getattr(args, field)
    if args.features_path:
        base["backbone"] = "features"
    seed = args.seed if args.seed is not None else 0
    base.setdefault("seed", seed)
    num_samples = args.num_samples if args.num_samples is not None else (1 if args.search == "grid" else 20)
    if args.smoke_test:
        base.update(epochs=2, pretrain_epochs=1, iters_per_epoch=5)
        num_samples = 2
    return SearchOptions(task=task, num_samples=num_samples, search=args.search, space=_space(args), base=base, seed=seed,
                         early_stop=not args.no_early_stop, grace_period=args.grace_period,
                         reduction_factor=args.reduction_factor, gpus_per_trial=args.gpus_per_trial,
                         cpus_per_trial=args.cpus_per_trial, max_concurrent=args.max_concurrent,
                         storage_path=args.storage_path, name=name, resume=args.resume,
                         verbose=0 if args.quiet else 2 if args.verbose else 1,
                         keep_checkpoints=args.keep_checkpoints, metric=args.metric, optuna_storage=args.optuna_storage,
                         max_failures=args.max_failures, trial_resources=args.trial_resources,
                         trackers=args.tracker, mps=not args.no_mps, population=args.population,
                         configs_from=args.configs_from, warm_start=args.warm_start)


_STATES = {
    cli.EXIT_OK: "finished",
    cli.EXIT_FAILED: "some trials errored: fix the cause (each trial's error.txt) and rerun with --resume",
    cli.EXIT_NO_RESULT: "no trial reached a result (all errored or diverged)",
    cli.EXIT_INTERRUPTED: "interrupted: rerun with --resume to continue",
}


def search(args: argparse.Namespace) -> int:
    """The command's work: one search per task (every task of a dataset); the worst status. The
    flags and every task's data are checked before Ray and torch load (:func:`tune.options.check_options`)."""
    flags.check_resources_args(args)
    tasks = search_tasks(args.task)
    name = args.name or (f"ssot-{args.task}" if searched_tasks(args.task) is not None else None)
    typed = [field for field in CONFIG_FLAGS if getattr(args, field) is not None]  # errors name these fields' flags
    with cli.flag_errors(typed):
        plans = [options_for(args, task, name) for task in tasks]
        for options in plans:
            check_options(options)
    from tune.experiment import run_search  # Ray, Optuna and torch: once everything is checked
    from tune.outputs import exit_status_of, summary_lines

    worst = cli.EXIT_OK
    for options in plans:
        kind = "oracle: ranks trials with target labels" if args.metric == "target_acc" else "label-free validator"
        print(f"{options.task}: selecting on {args.metric} ({kind})", flush=True)
        with cli.flag_errors(typed):
            outcome = run_search(options, address=args.address, num_cpus=args.num_cpus)
        print("\n".join(summary_lines(outcome.trials, outcome.info or {"task": options.task})))
        code = exit_status_of(outcome)
        print(f"  {_STATES[code]}; table {outcome.path}/trials.csv"
              + (f", best config {outcome.path}/best_config.json" if outcome.best_config else ""))
        if code in (cli.EXIT_OK, cli.EXIT_FAILED) and outcome.best_config is not None:
            print("\n".join(next_commands(outcome.path, outcome.info or {})))
        worst = max(worst, code)
        if code == cli.EXIT_INTERRUPTED:
            break
    return worst


def next_commands(path: str, info: dict[str, object]) -> list[str]:
    """The summary's last lines: the commands that use a finished search (its experiment's folder,
    ``<storage-path>/<name>``, holds one task folder per task)."""
    root = path.rsplit("/", 1)[0]
    lines = ["  next:",
             f"    python analysis/sensitivity.py {root}                       # the dashboard: {root}/dashboard.html",
             f"    python tune/confirm.py {root} --top 3 --seeds 1 2 3         # re-run the top 3 configs on new seeds",
             f"    python tune/export.py {root} --out configs                  # the best config of every task"]
    from tune.record import STUDY_FILE

    study = info.get("optuna_storage") or f"{path}/{STUDY_FILE}"
    lines.append(f"    optuna-dashboard {study}   # the Optuna study {info.get('optuna_study')}: the search's record")
    return lines


def main(argv: list[str] | None = None) -> int:
    """Command line entry point (``ssot-search``): the worst status of the searches
    (:func:`tune.outputs.exit_status_of`, the table of :mod:`ssot.cli`)."""
    return cli.command(build_parser(), search, argv, interrupted="rerun with --resume to continue")


if __name__ == "__main__":
    sys.exit(main())
