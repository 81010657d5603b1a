"""Confirm the top configs of each search over new seeds and pick by the mean (the winner's curse).

    python tune/confirm.py RESULTS_DIR --top 3 --seeds 0 1 2          # -> RESULTS_DIR/confirmed/
    python tune/confirm.py RESULTS_DIR --top 3 --seeds 0 1 2 --out confirmed --address auto
    python tune/final.py RESULTS_DIR/confirmed --seeds 0 1 2 --out final   # confirmed configs, as exported ones

Every finished experiment under RESULTS_DIR (searched recursively) has its ``--top`` best trials
(the best-trial rule of ``tune/py``: trials that reached the last epoch, ranked by the
experiment's metric) re-run once per seed, each (trial, seed) a Ray task with the search's
resource flags. Each run record is written to ``OUT/runs/<task>/<trial>_seed<s>.json`` as soon as
it ends and reused when the command is run again, so an interrupted confirmation continues where
it stopped. The table (mean +- std per config beside its single-seed score in the search) goes to
``OUT/confirmation.csv`` and ``OUT/confirmation.md``, the confirmed config (best mean, ties to the
search's rank) of each task to ``OUT/<task>.json``; existing files are never overwritten (see
``tune/confirmation.py``). Exit statuses: :mod:`ssot.cli` (2: bad input; 1: a run did not
complete, diverged).
"""
from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

if __package__ in (None, ""):  # run as a file: the one script idiom, see ssot/cli.py ("Scripts")
    sys.path[0] = str(Path(__file__).resolve().parents[1])

from ssot import cli  # noqa: E402
from ssot.errors import ResultsError, one_line  # noqa: E402
from ssot.results import storage  # noqa: E402
from tune import confirmation  # noqa: E402
from tune.final import train_on_ray  # noqa: E402


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python tune/confirm.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("results_dir", help="folder (or URI, e.g. s3://bucket/prefix) holding finished experiments, searched recursively")
    parser.add_argument("--top", type=int, default=3, help="candidates per experiment: its best trials (default 3)")
    cli.add_seeds(parser, help="seeds of each candidate")
    parser.add_argument("--out", type=Path, help="output folder (default: RESULTS_DIR/confirmed)")
    r = parser.add_argument_group("resources (as tune/search.py)")
    cli.add_trial_resources(r, "run")
    cli.add_ray_flags(r)
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
    cli.check_resources_args(args)
    candidates = confirmation.gather_candidates(args.results_dir, args.top,
                                                lambda line: print(f"warning: {one_line(line)}", file=sys.stderr))
    cli.check_output(out, "--out", folder=True,
                     new=[p.name for p in confirmation.output_paths(out, sorted({c.task for c in candidates}))])
    jobs = {(c.label, s): (c.config.replace(seed=s), confirmation.run_path(out, c.task, c.trial_id, s))
            for c in candidates for s in args.seeds}
    records = train_on_ray(jobs, num_cpus=args.num_cpus, address=args.address, cpus_per_run=args.cpus_per_trial,
                           gpus_per_run=args.gpus_per_trial)
    table = confirmation.confirmation_table(candidates, records, args.seeds)
    paths = confirmation.write_confirmation(table, candidates, out)
    print(confirmation.to_markdown(table), end="")
    print(f"wrote {', '.join(map(str, paths))}")
    return cli.runs_status(records.values())


def main(argv: Sequence[str] | None = None) -> int:
    """Command line entry point (``ssot-confirm``); the exit status of :mod:`ssot.cli` (1: a run diverged)."""
    return cli.command(build_parser(), confirm, argv, kept=lambda args: _out(args) / confirmation.RUNS_DIR)


if __name__ == "__main__":
    sys.exit(main())
