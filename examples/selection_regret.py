"""The regret tables of docs/selection.md, from the three random searches (search seeds 0, 1, 2).

    python examples/selection_regret.py runs/selection                 # the tables of the searches there
    python examples/selection_regret.py runs/selection --run-missing   # run the absent searches first (hours on 2 CPUs)

Each search is the command (S = 0, 1, 2; ``--task embedded`` is digits, P2H and H2P)::

    python tune/search.py --task embedded --search random --num-samples 32 --no-early-stop --seed S \\
        --num-cpus 2 --storage-path runs/selection --name random-sS

Printed: per task, every selector's regret against the oracle's pick (points of target accuracy;
median and worst over the search seeds) for hyperparameter selection (the final epoch of each
trial) and epoch selection (within each trial), with the rank correlations; then the recommended
label-free recipe's regret per task and seed (``analysis/data/selection.py``, ``RECIPE``).
"""
from __future__ import annotations

import argparse
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

if __package__ in (None, ""):  # run as a file: the one script idiom, see ssot/cli.py ("Scripts")
    sys.path[0] = str(Path(__file__).resolve().parents[1])

from analysis.data import selection as S  # noqa: E402
from ssot import cli  # noqa: E402
from ssot.errors import ResultsError  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
SEEDS = (0, 1, 2)


def search_command(results: Path, seed: int) -> list[str]:
    """The search of one seed, exactly as docs/selection.md gives it."""
    return [sys.executable, str(REPO / "tune" / "search.py"), "--task", "embedded", "--search", "random", "--num-samples", "32",
            "--no-early-stop", "--seed", str(seed), "--num-cpus", "2", "--storage-path", str(results), "--name", f"random-s{seed}"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python examples/selection_regret.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("results", type=Path, help="the --storage-path of the searches (holds random-s0, random-s1, random-s2)")
    parser.add_argument("--run-missing", action="store_true", help="run the searches whose folder is absent first")
    return parser


def regret(args: argparse.Namespace) -> int:
    missing = [s for s in SEEDS if not (args.results / f"random-s{s}").is_dir()]
    if missing and not args.run_missing:
        raise ResultsError(f"No search random-s{missing[0]} under {args.results}: pass --run-missing to run it "
                           "(hours on 2 CPUs) or the folder holding the three searches.")
    for seed in missing:
        print("running", " ".join(search_command(args.results, seed)[1:]), flush=True)
        subprocess.run(search_command(args.results, seed), check=True)
    experiments = [e for s in SEEDS for e in S.read_experiments(args.results / f"random-s{s}")]
    table = S.selection_table(experiments)
    if table.empty:
        raise ResultsError(f"no completed trial with validator scores under {args.results}")
    print(S.task_tables(S.summary(table)))
    print(S.recipe_markdown(table), end="")
    return cli.EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    return cli.command(build_parser(), regret, argv)


if __name__ == "__main__":
    sys.exit(main())
