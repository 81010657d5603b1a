"""Label-free selection on the hard tasks: three random searches, every selector's regret, the recipe's.

    python examples/selection_regret.py                         # manual: Measured results, Label-free selection: measured
    python examples/selection_regret.py --task P2H              # one task
    python examples/selection_regret.py --confirm-seeds 10 11 12 13 14 15   # + the confirmed regret of the picks

Runs three random searches (seeds 0 1 2) of ``--task`` (default ``embedded``: digits, P2H and
H2P), 32 configs each, every trial to its last epoch, then ``analysis/selection.py``, which prints per task
every selector's regret against the oracle (median and worst over the searches, hyperparameter
and epoch selection, rank correlations) and the recommended recipe's regret per search.

One seed per trial makes that regret noisy, and the oracle's pick is partly its luckiest trial.
``--confirm-seeds`` re-runs the oracle's pick and the recipe's pick of every search of
``--confirm-tasks`` (default P2H H2P) on those seeds (new ones, not the searches' 0 1 2) and
prints the *confirmed* regret: the oracle pick's mean accuracy minus the recipe pick's. Runs go to
``OUT/confirmed-picks/<task>/<search>/<trial>_seed<s>.json`` and are reused when run again.
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402


def confirmed_regret(results: Path, out: Path, tasks: list[str], seeds: list[int]) -> str:
    """The oracle's and the recipe's picks of each search re-run on ``seeds``: a Markdown table of
    their mean accuracies and the confirmed regret, and the median per task."""
    import numpy as np

    from analysis.data import selection as S
    from ssot.results.markdown import markdown_table
    from ssot.results.record import mean_std
    from tune.outputs import trial_config
    from tune.runner import train_on_ray

    experiments = S.read_experiments(results)
    table = S.selection_table(experiments)
    hp = table[(table["selection"] == "hyperparameter") & (table["validator"] == S.RECIPE.selector)]
    jobs, plan = {}, []
    for meta, frame in experiments:
        task, name = meta["task"], meta.get("name", "")
        row = hp[(hp["task"] == task) & (hp["experiment"] == name)]
        if task not in tasks or row.empty:
            continue
        oracle, recipe = row["oracle_trial"].iloc[0], row["picked_trial"].iloc[0]
        final = frame[frame["status"] == "completed"].sort_values("epoch").groupby("trial_id").tail(1).set_index("trial_id", drop=False)
        for trial in dict.fromkeys((oracle, recipe)):
            config = trial_config(final.loc[trial], meta)
            for seed in seeds:
                jobs[f"{task} {name} {trial}", seed] = (config.replace(seed=seed), out / task / name / f"{trial}_seed{seed}.json")
        plan.append((task, name, oracle, recipe, row.iloc[0]))
    records = train_on_ray(jobs, num_cpus=2)
    rows: list[list[str]] = []
    regrets: dict[str, list[float]] = {}
    for task, name, oracle, recipe, row in plan:
        means = {t: mean_std([records[f"{task} {name} {t}", s].score("target_acc") for s in seeds]) for t in (oracle, recipe)}
        regret = 100 * (means[oracle][0] - means[recipe][0])
        regrets.setdefault(task, []).append(regret)
        rows.append([task, name, *(f"{t}: {100 * acc:.1f} -> {100 * means[t][0]:.1f} ± {100 * means[t][1]:.1f}"
                                   for t, acc in ((oracle, row.oracle_acc), (recipe, row.picked_acc))),
                     f"{row.regret:.1f}", f"{regret:.1f}"])
    medians = ", ".join(f"{t} {float(np.median(r)):.1f} (worst {max(r):.1f})" for t, r in regrets.items())
    return (f"Confirmed on seeds {' '.join(map(str, seeds))}: the search seed's accuracy -> mean ± std over them\n\n"
            + markdown_table(["task", "search", "oracle's pick", f"recipe's pick ({S.RECIPE.selector})", "regret (1 seed)",
                              "confirmed regret"], rows, "llllrr")
            + f"\nconfirmed regret, median over searches: {medians}\n")


def body(example: common.Example) -> int:
    if example.task != "embedded":  # the embedded dataset needs no data
        example.check_data()
    results = example.out / "runs"
    task = "digits" if example.smoke and example.task == "embedded" else example.task
    for seed in (0,) if example.smoke else (0, 1, 2):
        example.run("tune/search.py", "--task", task, "--search", "random", *example.search_flags(32), "--no-early-stop",
                    "--seed", seed, *([] if example.smoke else ["--num-cpus", "2"]), *example.data_flags(),
                    "--storage-path", results, "--name", f"random-s{seed}", "--quiet")
    example.run("analysis/selection.py", results, "--out", example.out / "selection")
    if example.args.confirm_seeds and not example.dry:
        seeds = example.args.confirm_seeds[:1] if example.smoke else example.args.confirm_seeds
        tasks = [task] if example.smoke else example.args.confirm_tasks
        print("\n" + confirmed_regret(results, example.out / "confirmed-picks", tasks, seeds), end="")
    return 0


if __name__ == "__main__":
    parser = common.parser(__doc__, tasks=(*common.EMBEDDED, "embedded"), default_task="embedded")
    parser.add_argument("--confirm-seeds", type=int, nargs="+", help="re-run the oracle's and the recipe's picks on these seeds")
    parser.add_argument("--confirm-tasks", nargs="+", default=["P2H", "H2P"], help="tasks whose picks --confirm-seeds re-runs")
    sys.exit(common.main(body, parser.parse_args(), "selection_regret"))
