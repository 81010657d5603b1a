"""Racing against fixed 3-seed confirmation at the same number of runs, replayed on measured runs.

    python examples/racing_vs_fixed.py              # P2H (manual: Measured results, Label-free selection: measured)
    python examples/racing_vs_fixed.py --task H2P
    python examples/racing_vs_fixed.py --pool runs/racing-P2H   # only the replay, on a pool measured already

Runs a random search (seed 0, 32 configs, every trial to its last epoch), then a pool: its top 5
trials on seeds 1-16 (``tune/confirm.py``; seed 0 was the search's own). The seeds are split: the
replays use seeds 1-8, the truth is each candidate's mean over seeds 9-16, so the truth is never
the data a procedure picked on. For K = 5 and K = 3 candidates, fixed confirmation runs every
candidate on 3 seeds (3K runs) and picks the best mean; the race (``tune/racing.py``: first test
after 2 seeds, confidence 0.95) has the same budget of 3K runs; each is replayed on 2000 random
orders of the replay seeds. Printed: how often each picks the truly best candidate, its mean
regret (points), the runs it spent and the probability it reported that its pick is the best.
Then the race itself, ``tune/confirm.py --race`` on seeds 1-8 with a budget of 15 runs (its runs
are the pool's, reused).
"""
from __future__ import annotations

import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402


def read_pool(folder: Path):
    """``(values, metric, mode)``: a confirmation's values, one row per candidate (search rank
    order), one column per seed, from ``confirmation.csv`` and the run records it names."""
    import json

    import pandas as pd

    from tune import confirmation

    table = pd.read_csv(folder / confirmation.CSV_NAME, dtype={"trial_id": str}).sort_values("search_rank")
    metric, mode = table["metric"].iloc[0], table["mode"].iloc[0]
    rows = {}
    for row in table.itertuples():
        seeds = [int(s) for s in str(row.seeds).split()]
        records = [json.loads((folder / confirmation.RUNS_DIR / row.task / f"{row.trial_id}_seed{s}.json").read_text()) for s in seeds]
        rows[row.trial_id] = pd.Series([confirmation.run_value(r, metric) for r in records], index=seeds)
    return pd.DataFrame(rows).T, metric, mode


def replay_table(pool_dir: Path, replay_seeds: int, tops: list[int], replays: int) -> str:
    """Fixed confirmation and the race replayed on the pool (module docstring), as Markdown."""
    import numpy as np

    from ssot.results.markdown import markdown_table
    from tune import racing

    values, metric, mode = read_pool(pool_dir)
    seeds = list(values.columns)
    replay_part, truth_part = values[seeds[:replay_seeds]], values[seeds[replay_seeds:]]
    lines = [f"pool: {len(values)} candidates x {len(seeds)} seeds of {metric}; replays on seeds {seeds[0]}-{seeds[replay_seeds - 1]}, "
             f"truth = the mean over seeds {seeds[replay_seeds]}-{seeds[-1]}\n",
             markdown_table(["trial (search rank order)", "mean on the replay seeds", "truth: mean", "truth: std"],
                            [[t, f"{100 * replay_part.loc[t].mean():.2f}", f"{100 * truth_part.loc[t].mean():.2f}",
                              f"{100 * truth_part.loc[t].std(ddof=1):.2f}"] for t in values.index], "lrrr")]
    rows = []
    for k in tops:
        names = list(values.index[:k])
        pool = {t: list(replay_part.loc[t]) for t in names}
        truth = {t: float(truth_part.loc[t].mean()) for t in names}
        for r in racing.replay(pool, truth, mode, fixed_seeds=3, replays=replays):
            rows.append([str(k), r.procedure, f"{100 * r.correct:.1f} %", f"{100 * r.regret:.2f}", f"{r.runs:.1f}", f"{r.p_best:.2f}"])
    lines.append(markdown_table(["K", "procedure", "picks the truly best", "mean regret (points)", "runs", "reported P(best)"],
                                rows, "llrrrr"))
    gap = np.sort(truth_part.mean(axis=1).to_numpy())
    lines.append(f"truth: best - second = {100 * (gap[-1] - gap[-2]):.2f} points, best - worst of the {len(gap)} = {100 * (gap[-1] - gap[0]):.2f}\n")
    return "\n".join(lines)


def body(example: common.Example) -> int:
    if example.args.pool:  # a pool measured already: the replay only
        print(replay_table(example.args.pool, example.args.replay_seeds, [5, 3], 2000))
        return 0
    example.check_data()
    results, pool, raced = example.out / "runs", example.out / "pool", example.out / "raced"
    top, seeds, replay = (2, range(1, 6), 3) if example.smoke else (5, range(1, 17), 8)
    example.run("tune/search.py", "--task", example.task, "--search", "random", *example.search_flags(32), "--no-early-stop",
                "--seed", "0", *example.data_flags(), "--storage-path", results, "--name", "random-s0", "--quiet")
    example.run("tune/confirm.py", results / "random-s0" / example.task, "--top", top, "--seeds", *seeds, "--out", pool)
    if not example.dry:
        print("\n" + replay_table(pool, replay, [top, 3] if top > 3 else [top], 200 if example.smoke else 2000))
        shutil.copytree(pool / "runs", raced / "runs", dirs_exist_ok=True)  # the race reuses the pool's runs
    example.run("tune/confirm.py", results / "random-s0" / example.task, "--top", top, "--race", "--seeds", *seeds[:replay],
                "--budget", 3 * top, "--out", raced)
    return 0


if __name__ == "__main__":
    parser = common.parser(__doc__, default_task="P2H")
    parser.add_argument("--pool", type=Path, help="replay this tune/confirm.py --out folder (5 candidates) instead of running")
    parser.add_argument("--replay-seeds", type=int, default=8, help="with --pool: the first N seeds feed the replays, the rest the truth")
    sys.exit(common.main(body, parser.parse_args(), "racing_vs_fixed"))
