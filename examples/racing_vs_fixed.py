"""Racing against fixed 3-seed confirmation at the same number of runs, replayed on measured runs.

    # 1. a pool: the top 5 trials of a search, each on 24 seeds (seed 0 was the search's own)
    python tune/confirm.py runs/selection/random-s0/P2H --top 5 --seeds $(seq 1 24) --out runs/racing-P2H
    # 2. the replay: fixed confirmation and the race, each on 2000 random orders of seeds 1-12,
    #    scored against the truth (each candidate's mean over seeds 13-24)
    python examples/racing_vs_fixed.py runs/racing-P2H --replay-seeds 12 --top 5 3

The pool's seeds are split: the first ``--replay-seeds`` feed the replays, the rest measure the
truth, so the truth is never the data a procedure picked on. For each ``--top K`` (the best K of
the pool's candidates by search rank), fixed confirmation runs every candidate on 3 seeds
(``3K`` runs) and picks the best mean; the race (``tune/racing.py``, first test after 2 seeds,
confidence 0.95) has the same budget of ``3K`` runs. Printed per K: how often each procedure picks
the truly best candidate, its mean regret (points), the runs it spent and the mean probability it
reported that its pick is the best.
"""
from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

if __package__ in (None, ""):  # run as a file: the one script idiom, see ssot/cli.py ("Scripts")
    sys.path[0] = str(Path(__file__).resolve().parents[1])

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from ssot import cli  # noqa: E402
from ssot.errors import ResultsError  # noqa: E402
from ssot.results.markdown import markdown_table  # noqa: E402
from tune import confirmation, racing  # noqa: E402


def read_pool(folder: Path) -> tuple[pd.DataFrame, str, str]:
    """``(values, metric, mode)``: the confirmation's values, one row per candidate (search rank
    order), one column per seed, from ``confirmation.csv`` and the run records it names."""
    table_path = folder / confirmation.CSV_NAME
    if not table_path.is_file():
        raise ResultsError(f"{table_path} does not exist: run tune/confirm.py with --out {folder} first.")
    table = pd.read_csv(table_path, dtype={"trial_id": str}).sort_values("search_rank")
    if table["task"].nunique() != 1:
        raise ResultsError(f"{table_path} holds several tasks; pass a confirmation of one experiment.")
    metric, mode = table["metric"].iloc[0], table["mode"].iloc[0]
    rows = {}
    for row in table.itertuples():
        seeds = [int(s) for s in str(row.seeds).split()]
        records = [json.loads((folder / confirmation.RUNS_DIR / row.task / f"{row.trial_id}_seed{s}.json").read_text()) for s in seeds]
        rows[row.trial_id] = pd.Series([confirmation.run_value(r, metric) for r in records], index=seeds)
    return pd.DataFrame(rows).T, metric, mode


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python examples/racing_vs_fixed.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("pool", type=Path, help="a tune/confirm.py --out folder: few candidates, many seeds")
    parser.add_argument("--replay-seeds", type=int, default=12, help="the first N seeds feed the replays, the rest the truth")
    parser.add_argument("--top", type=int, nargs="+", default=[5, 3], help="numbers of candidates K to compare at (3K runs)")
    parser.add_argument("--replays", type=int, default=2000, help="random seed orders replayed")
    return parser


def compare(args: argparse.Namespace) -> int:
    values, metric, mode = read_pool(args.pool)
    seeds = list(values.columns)
    if not 3 <= args.replay_seeds < len(seeds):
        raise ResultsError(f"The '--replay-seeds' argument must be an int in [3, {len(seeds) - 1}]. Got {args.replay_seeds} instead.")
    replay_part, truth_part = values[seeds[:args.replay_seeds]], values[seeds[args.replay_seeds:]]
    print(f"pool: {len(values)} candidates x {len(seeds)} seeds of {metric}; replays on seeds {seeds[0]}-{seeds[args.replay_seeds - 1]}, "
          f"truth = mean over seeds {seeds[args.replay_seeds]}-{seeds[-1]}")
    truth_rows = [[t, f"{100 * values.loc[t].iloc[:args.replay_seeds].mean():.2f}", f"{100 * truth_part.loc[t].mean():.2f}",
                   f"{100 * truth_part.loc[t].std(ddof=1):.2f}"] for t in values.index]
    print(markdown_table(["trial (search rank order)", "mean on replay seeds", "truth: mean", "truth: std"], truth_rows, "lrrr"))
    rows = []
    for k in args.top:
        names = list(values.index[:k])
        pool = {t: list(replay_part.loc[t]) for t in names}
        truth = {t: float(truth_part.loc[t].mean()) for t in names}
        for r in racing.replay(pool, truth, mode, fixed_seeds=3, replays=args.replays):
            rows.append([str(k), r.procedure, f"{100 * r.correct:.1f} %", f"{100 * r.regret:.2f}", f"{r.runs:.1f}",
                         f"{r.p_best:.2f}"])
    print(markdown_table(["K", "procedure", "picks the truly best", "mean regret (points)", "runs", "reported P(best)"],
                         rows, "llrrrr"), end="")
    print(f"(truth gap best - second: "
          f"{100 * float(np.diff(np.sort(truth_part.mean(1).to_numpy())[-2:])[0]):.2f} points among all {len(values)})")
    return cli.EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    return cli.command(build_parser(), compare, argv)


if __name__ == "__main__":
    sys.exit(main())
