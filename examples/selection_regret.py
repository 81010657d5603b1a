"""The regret tables of docs/selection.md, from the three random searches (search seeds 0, 1, 2).

    python examples/selection_regret.py runs/selection                 # the tables of the searches there
    python examples/selection_regret.py runs/selection --run-missing   # run the absent searches first (hours on 2 CPUs)
    python examples/selection_regret.py runs/selection --confirm-seeds 10 11 12 13 14 15 16 17   # + confirmed regret

Each search is the command (S = 0, 1, 2; ``--task embedded`` is digits, P2H and H2P)::

    python tune/search.py --task embedded --search random --num-samples 32 --no-early-stop --seed S \\
        --num-cpus 2 --storage-path runs/selection --name random-sS

Printed: per task, every selector's regret against the oracle's pick (points of target accuracy;
median and worst over the search seeds) for hyperparameter selection (the final epoch of each
trial) and epoch selection (within each trial), with the rank correlations; then the recommended
label-free recipe's regret per task and seed (``analysis/data/selection.py``, ``RECIPE``).

One seed per trial makes that regret noisy, and the oracle's pick is partly its luckiest trial.
``--confirm-seeds`` re-runs, for every search of ``--confirm-tasks``, the oracle's pick and the
recipe's pick on those seeds (new ones: not the searches' 0, 1, 2) and prints the *confirmed*
regret: the oracle pick's mean accuracy minus the recipe pick's. Runs go to
``RESULTS/confirmed-picks/<task>/<search>/<trial>_seed<s>.json`` and are reused when run again.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

if __package__ in (None, ""):  # run as a file: the one script idiom, see ssot/cli.py ("Scripts")
    sys.path[0] = str(Path(__file__).resolve().parents[1])

import numpy as np  # noqa: E402

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
    parser.add_argument("--confirm-seeds", type=int, nargs="+", help="re-run the oracle's and the recipe's picks on these seeds")
    parser.add_argument("--confirm-tasks", nargs="+", default=["P2H", "H2P"], help="tasks whose picks --confirm-seeds re-runs")
    parser.add_argument("--num-cpus", type=int, help="CPUs of the local Ray instance of --confirm-seeds (default: all)")
    return parser


def confirmed_regret(experiments, table, args: argparse.Namespace) -> str:
    """The oracle's and the recipe's picks of each search re-run on ``--confirm-seeds``: a
    Markdown table of their mean accuracies and the confirmed regret, with the median per task."""
    from ssot.results.markdown import markdown_table
    from ssot.results.record import mean_std
    from tune.final import train_on_ray
    from tune.outputs import trial_config

    hp = table[(table["selection"] == "hyperparameter") & (table["validator"] == S.RECIPE.selector)]
    jobs, plan = {}, []
    for meta, frame in experiments:
        task, name = meta["task"], meta.get("name", "")
        row = hp[(hp["task"] == task) & (hp["experiment"] == name)]
        if task not in args.confirm_tasks or row.empty:
            continue
        oracle, recipe = row["oracle_trial"].iloc[0], row["picked_trial"].iloc[0]
        final = frame[frame["status"] == "completed"].sort_values("epoch").groupby("trial_id").tail(1).set_index("trial_id", drop=False)
        for trial in dict.fromkeys((oracle, recipe)):
            config = trial_config(final.loc[trial], meta)
            for seed in args.confirm_seeds:
                path = args.results / "confirmed-picks" / task / name / f"{trial}_seed{seed}.json"
                jobs[f"{task} {name} {trial}", seed] = (config.replace(seed=seed), path)
        plan.append((task, name, oracle, recipe, row.iloc[0]))
    records = train_on_ray(jobs, num_cpus=args.num_cpus)
    rows, regrets = [], {}
    for task, name, oracle, recipe, row in plan:
        stats = {}
        for trial in (oracle, recipe):
            mean, std = mean_std([records[f"{task} {name} {trial}", s].score("target_acc") for s in args.confirm_seeds])
            stats[trial] = (mean, std)
        regret = 100 * (stats[oracle][0] - stats[recipe][0])
        regrets.setdefault(task, []).append(regret)
        rows.append([task, name, f"{oracle}: {100 * row.oracle_acc:.1f} -> {100 * stats[oracle][0]:.1f} ± {100 * stats[oracle][1]:.1f}",
                     f"{recipe}: {100 * row.picked_acc:.1f} -> {100 * stats[recipe][0]:.1f} ± {100 * stats[recipe][1]:.1f}",
                     f"{row.regret:.1f}", f"{regret:.1f}"])
    medians = ", ".join(f"{t} {float(np.median(r)):.1f} (worst {max(r):.1f})" for t, r in regrets.items())
    return (f"Confirmed on seeds {' '.join(map(str, args.confirm_seeds))}: search seed's accuracy -> mean ± std over them\n\n"
            + markdown_table(["task", "search", "oracle's pick", f"recipe's pick ({S.RECIPE.selector})", "regret (1 seed)",
                              "confirmed regret"], rows, "llllrr")
            + f"\nconfirmed regret, median over searches: {medians}\n")


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
    if args.confirm_seeds:
        cli.check_seeds(args.confirm_seeds)
        print("\n" + confirmed_regret(experiments, table, args), end="")
    return cli.EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    return cli.command(build_parser(), regret, argv)


if __name__ == "__main__":
    sys.exit(main())
