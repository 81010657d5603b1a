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
``tune/confirmation.py``). User errors print one line and exit with status 2; the status is 1
when a run did not complete (diverged).
"""
from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

if __package__ in (None, ""):  # run as a file: the one script idiom, see ssot/cli.py ("Scripts")
    sys.path[0] = str(Path(__file__).resolve().parents[1])

from ssot.errors import ResultsError, SSOTError, check_output, one_line  # noqa: E402
from ssot.results import storage  # noqa: E402
from ssot.results.final_table import check_new, check_seeds  # noqa: E402
from tune import confirmation  # noqa: E402
from tune.final import train_on_ray  # noqa: E402


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python tune/confirm.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("results_dir", help="folder (or URI, e.g. s3://bucket/prefix) holding finished experiments, searched recursively")
    parser.add_argument("--top", type=int, default=3, help="candidates per experiment: its best trials (default 3)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2], help="seeds of each candidate (default: 0 1 2)")
    parser.add_argument("--out", type=Path, help="output folder (default: RESULTS_DIR/confirmed)")
    r = parser.add_argument_group("resources (as tune/search.py)")
    r.add_argument("--gpus-per-trial", type=float, help="GPUs per run; default 1 if the cluster has GPUs else 0")
    r.add_argument("--cpus-per-trial", type=float, default=1.0, help="CPUs per run")
    r.add_argument("--num-cpus", type=int, help="CPUs of the local Ray instance (default: all)")
    r.add_argument("--address", help="join an existing Ray cluster ('auto' or host:port)")
    return parser


def _check_args(args: argparse.Namespace) -> None:
    check_seeds(args.seeds)
    for name, value, low in (("--top", args.top, 1), ("--num-cpus", args.num_cpus, 1)):
        if value is not None and value < low:
            raise ResultsError(f"The '{name}' argument must be an int in [{low}, inf). Got {value} instead.")
    if args.cpus_per_trial <= 0 or (args.gpus_per_trial is not None and args.gpus_per_trial < 0):
        raise ResultsError(f"The '--cpus-per-trial' argument must be > 0 and '--gpus-per-trial' >= 0. "
                           f"Got {args.cpus_per_trial:g} and {args.gpus_per_trial} instead.")


def main(argv: Sequence[str] | None = None) -> int:
    """Command line entry point; returns 0, 1 (a run did not complete) or 2 (user error)."""
    args = build_parser().parse_args(argv)
    out = args.out if args.out is not None else Path(args.results_dir) / "confirmed"
    try:
        if storage.is_uri(args.results_dir) and args.out is None:
            raise ResultsError(f"The results {args.results_dir} are not a local folder: pass --out, the local folder "
                               "to write the confirmation to.")
        _check_args(args)
        candidates = confirmation.gather_candidates(args.results_dir, args.top,
                                                    lambda line: print(f"warning: {one_line(line)}", file=sys.stderr))
        check_output(out, "--out", folder=True)
        check_new(confirmation.output_paths(out, sorted({c.task for c in candidates})))
        jobs = {(c.label, s): (c.config.replace(seed=s), confirmation.run_path(out, c.task, c.trial_id, s))
                for c in candidates for s in args.seeds}
        records = train_on_ray(jobs, num_cpus=args.num_cpus, address=args.address, cpus_per_run=args.cpus_per_trial,
                               gpus_per_run=args.gpus_per_trial)
        table = confirmation.confirmation_table(candidates, records, args.seeds)
        paths = confirmation.write_confirmation(table, candidates, out)
    except SSOTError as exc:
        print(f"error: {one_line(exc)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"interrupted; finished runs are kept in {out / confirmation.RUNS_DIR}, rerun the same command to continue", file=sys.stderr)
        return 130
    print(confirmation.to_markdown(table), end="")
    print(f"wrote {', '.join(map(str, paths))}")
    return 0 if all(r.completed for r in records.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
