"""Confirm the top configs of each search over new seeds and pick by the mean (the winner's curse).

    python tune/confirm.py RESULTS --top 3 --seeds 0 1 2          # -> RESULTS/confirmed/
    python tune/confirm.py RESULTS --top 3 --seeds 0 1 2 --out confirmed --address auto
    python tune/final.py RESULTS/confirmed --seeds 0 1 2 --out final   # confirmed configs, as exported ones
    python tune/confirm.py RESULTS --top 5 --race --seeds 1 2 3 4 5 6 7 8 9 10 --budget 15   # racing

Every finished experiment under RESULTS (searched recursively) has its ``--top`` best trials
(the best-trial rule of ``tune/py``: trials that reached the last epoch, ranked by the
experiment's metric) re-run once per seed, each (trial, seed) a Ray task with the search's
resource flags. Each run record is written to ``OUT/runs/<task>/<trial>_seed<s>.json`` as soon as
it ends and reused when the command is run again, so an interrupted confirmation continues where
it stopped. The table (mean +- std per config beside its single-seed score in the search) goes to
``OUT/confirmation.csv`` and ``OUT/confirmation.md``, the confirmed config (best mean, ties to the
search's rank) of each task to ``OUT/<task>.json``; existing files are never overwritten (see
``tune/confirmation.py``).

With ``--race`` (``tune/racing.py``) the seeds are a pool taken in order: every candidate runs the
first ``--first-test`` seeds, then each round gives the next seed to the candidates still in
contention and drops those a one-sided paired t-test finds worse than the leader at
``--confidence``; an experiment stops when one candidate remains or its next round would pass
``--budget`` runs (default: ``3 x --top``, the cost of a fixed 3-seed confirmation). The table
says how each candidate left the race and how likely the pick is to be the best. Runs are
reused as without ``--race`` (same files), so a raced confirmation resumes too. Exit statuses: :mod:`ssot.cli` (2: bad input; 1: a run did not
complete, diverged).
"""
from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from ssot import cli
from ssot.errors import ResultsError, one_line
from ssot.results import discovery, outputs, storage
from tune import confirmation, flags, racing
from tune.runner import train_on_ray


def build_parser() -> argparse.ArgumentParser:
    parser = cli.Parser(prog="python tune/confirm.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("results_dir", metavar="RESULTS",
                        help="folder (or URI, e.g. s3://bucket/prefix) holding finished experiments, searched recursively")
    parser.add_argument("--top", type=int, default=3, metavar="K", help="candidates per experiment: its best trials")
    cli.add_seeds(parser, help="seeds of each candidate")
    parser.add_argument("--out", type=Path, metavar="FOLDER", help="output folder (default: RESULTS/confirmed)")
    cli.add_config_flag(parser, "image_cache", "overrides the searches' (prepared before any run starts)",
                        default_text="the searches'")
    g = parser.add_argument_group("racing (tune/racing.py)")
    g.add_argument("--race", action="store_true",
                   help="spend seeds only on candidates still in contention (--seeds is the pool, taken in order)")
    g.add_argument("--budget", type=int, metavar="N", help="with --race: most runs per experiment (default: 3 x --top)")
    g.add_argument("--confidence", type=float, default=0.95,
                   help="with --race: eliminate a candidate when the leader is better at this one-sided confidence")
    g.add_argument("--first-test", type=int, default=2, metavar="N",
                   help="with --race: seeds every candidate runs before the first test")
    r = parser.add_argument_group("resources (as tune/search.py)")
    flags.add_trial_resources(r, "run")
    flags.add_ray_flags(r)
    return parser


def _out(args: argparse.Namespace) -> Path:
    return args.out if args.out is not None else Path(args.results_dir) / "confirmed"


def confirm(args: argparse.Namespace) -> int:
    """The command's work: gather the candidates, check the outputs, run or reuse every (candidate,
    seed), write the table and the confirmed configs."""
    out = _out(args)
    if storage.is_uri(args.results_dir) and args.out is None:
        raise ResultsError(f"The results {args.results_dir} are not a local folder: pass --out, the local folder "
                           "to write the confirmation to.")
    cli.check_seeds(args.seeds)
    if args.top < 1:
        raise ResultsError(f"The '--top' argument must be an int in [1, inf). Got {args.top} instead.")
    flags.check_resources_args(args)
    _rule(args)  # the racing flags, refused before any work
    candidates = confirmation.gather_candidates(args.results_dir, args.top,
                                                lambda line: print(f"warning: {one_line(line)}", file=sys.stderr))
    outputs.check_output(out, "--out", folder=True, inputs=discovery.experiment_inputs(args.results_dir),
                     new=[p.name for p in confirmation.output_paths(out, sorted({c.task for c in candidates}))])

    override = {"image_cache": args.image_cache} if args.image_cache is not None else {}

    def runs(pairs: Sequence[tuple[confirmation.Candidate, int]]) -> dict:
        with cli.flag_errors(override):
            jobs = {(c.label, s): (c.config.replace(seed=s, **override), confirmation.run_path(out, c.task, c.trial_id, s))
                    for c, s in pairs}
        return train_on_ray(jobs, num_cpus=args.num_cpus, address=args.address, cpus_per_run=args.cpus_per_trial,
                            gpus_per_run=args.gpus_per_trial)

    records, races = confirmation.confirm_candidates(candidates, args.seeds, runs, _rule(args) if args.race else None)
    table = confirmation.confirmation_table(candidates, records, args.seeds, races)
    paths = confirmation.write_confirmation(table, candidates, out)
    print(confirmation.to_markdown(table), end="")
    print(f"wrote {', '.join(map(str, paths))}")
    return cli.runs_status(records.values())


def _rule(args: argparse.Namespace) -> racing.RaceRule:
    """The race's rule from the flags, or a one-line error naming the flag."""
    if not args.race:
        if args.budget is not None:
            raise ResultsError("The '--budget' argument only applies with --race. Add --race or drop --budget.")
        return racing.RaceRule()
    budget = 3 * args.top if args.budget is None else args.budget
    if args.first_test < 2:
        raise ResultsError(f"The '--first-test' argument must be an int in [2, inf). Got {args.first_test} instead.")
    if not 0.5 <= args.confidence < 1:
        raise ResultsError(f"The '--confidence' argument must be a float in [0.5, 1). Got {args.confidence} instead.")
    if len(args.seeds) < args.first_test:
        raise ResultsError(f"The '--seeds' argument must give at least --first-test = {args.first_test} seeds with --race. "
                           f"Got {len(args.seeds)} instead.")
    if budget < args.top * args.first_test:
        raise ResultsError(f"The '--budget' argument must cover the first round (--top x --first-test = "
                           f"{args.top * args.first_test} runs). Got {budget} instead.")
    return racing.RaceRule(confidence=args.confidence, first_test=args.first_test, budget=budget)


def main(argv: Sequence[str] | None = None) -> int:
    """Command line entry point (``ssot-confirm``); the exit status of :mod:`ssot.cli` (1: a run diverged)."""
    return cli.command(build_parser(), confirm, argv, kept=lambda args: _out(args) / confirmation.RUNS_DIR)


if __name__ == "__main__":
    sys.exit(main())
