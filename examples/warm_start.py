"""Warm start against cold start on the six embedded3 tasks (leave one out), and the atlas of the cold searches.

    python examples/warm_start.py                          # everything, resumable (manual: Warm start on embedded3)
    python examples/warm_start.py --seeds 0 --lock /tmp/ssot-heavy.lock   # one chunk: the searches of seed 0
    python examples/warm_start.py --stage report           # the tables and the figure from what has run
    python examples/warm_start.py --smoke-test             # tiny searches of two tasks: checks the commands, not the numbers

Every search is a screen on a feature cache (``python -m ssot.features``, the source-pretrained
digits CNN of seed 0): populations of 10 configs, 6 epochs, ASHA inside each population at epochs
1 and 3 (the top third goes on at each), every trial with training seed 0 (``--set seed=0``), so a
config's accuracy on a task is one deterministic number and the searches differ only in the
configs they propose; the source accuracy and the DEV validator, which no search here selects
on, are computed on 200 source samples (``--set source_eval_samples=200``) to save time.
Stages, each skipping what is finished and resuming what was interrupted:

1. ``caches``: one cache per task;
2. ``cold``: per sampler seed S (``--seeds``, default 0-4) and task, a 50-trial TPE search
   (``--name cold-sS``);
3. ``warm``: per seed S and task T, a 40-trial search warm-started from the five other tasks'
   cold searches of the same seed (``--warm-start``, in the order of the dataset's tasks;
   ``--name warm-sS``);
4. ``atlas``: the transfer replays of the first seed's cold searches (``tune/transfer.py``,
   training seed 0 as in the searches) and their atlas (``analysis/atlas.py``);
5. ``report``: the atlas's tables (those of ``examples/atlas.py``) and, per task and seed, the trials each search needed to come within 1 point of the
   best config its seed's cold search found, and the regret after 10 and 20 trials
   (:mod:`analysis.data.warmstart`); ``OUT/warm_start.md``, ``OUT/warm_start.csv`` and the figure
   ``OUT/warm_start.png``.

``--lock FILE`` runs each command under ``flock FILE`` (a shared machine's heavy-job lock), so
other jobs interleave between the searches.
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402

STAGES = ("caches", "cold", "warm", "atlas", "report")
COLD_TRIALS, WARM_TRIALS, POPULATION = 50, 40, 10
#: The transfer replays' training seed: the screens train every trial with seed 0, so a replay
#: is the searches' own deterministic number (the spread over training seeds is not measured).
TRANSFER_SEEDS = ("0",)
#: The screen every search runs (besides its cache, trials and seed).
SCREEN = ["--epochs", "6", "--grace-period", "1", "--reduction-factor", "3", "--set", "seed=0", "--set", "source_eval_samples=200"]
SMOKE_SCREEN = ["--epochs", "2", "--grace-period", "1", "--reduction-factor", "2", "--set", "seed=0",
                "--set", "pretrain_epochs=1", "--set", "iters_per_epoch=3"]
SMOKE_CACHE = ["--epochs", "1", "--pretrain-epochs", "1", "--iters-per-epoch", "3"]


def status(folder: Path) -> str | None:
    """``experiment.json``'s status of a search folder (None: not started)."""
    info = common.read_json(folder / "experiment.json") if (folder / "experiment.json").is_file() else None
    return None if info is None else str(info.get("status"))


def search(example: common.Example, results: Path, name: str, task: str, cache: Path, trials: int, seed: int,
           *more: str | Path) -> None:
    """One screen search, skipped when finished, resumed when interrupted."""
    state = None if example.dry else status(results / name / task)
    if state == "finished":
        return
    population, screen = (2, SMOKE_SCREEN) if example.smoke else (POPULATION, SCREEN)
    example.run("tune/search.py", "--task", task, "--features", cache, "--population", population, "--num-samples", trials,
                "--seed", seed, *screen, *more, "--storage-path", results, "--name", name, "--num-cpus", "2", "--quiet",
                *(["--resume"] if state is not None else []))


def report(out: Path, results: Path, tasks: list[str], seeds: list[int]) -> None:
    """The tables and the figure of the comparison (what has finished so far)."""
    import matplotlib

    matplotlib.use("Agg")
    from analysis.data.warmstart import compare
    from analysis.mpl.warmstart import regret_figure
    from ssot.results.experiment import read_experiment
    from ssot.results.markdown import markdown_table

    def finished(name: str, task: str):
        folder = results / name / task
        return read_experiment(folder) if status(folder) == "finished" else None

    cold = {(t, s): e for t in tasks for s in seeds if (e := finished(f"cold-s{s}", t)) is not None}
    warm = {(t, s): e for t in tasks for s in seeds if (e := finished(f"warm-s{s}", t)) is not None}
    if not cold:
        print("report: no finished cold search yet")
        return
    comparison = compare(cold, warm)
    comparison.table.to_csv(out / "warm_start.csv", index=False)
    summary = comparison.summary()
    lines = [f"Per task over seeds {' '.join(map(str, seeds))}: trials to come within 1 point of the seed's cold-search best "
             "(median; a search that never did counts as its trials + 1), searches that did, mean regret in points:", "",
             markdown_table(list(summary.columns), [[f"{v:.1f}" if isinstance(v, float) else str(v) for v in row]
                                                    for row in summary.itertuples(index=False)], "ll" + "r" * (len(summary.columns) - 2))]
    (out / "warm_start.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    regret_figure(comparison).savefig(out / "warm_start.png", dpi=110, bbox_inches="tight")
    print(f"\nwrote {out / 'warm_start.md'}, {out / 'warm_start.csv'}, {out / 'warm_start.png'}")


def body(example: common.Example) -> int:
    from ssot.data.registry import searched_tasks

    args = example.args
    if args.lock:
        example.prefix = ["flock", str(args.lock)]
    tasks = searched_tasks(example.task) or [example.task]
    if example.smoke:
        tasks = tasks[:2]
    seeds = args.seeds[:1] if example.smoke else args.seeds
    results, caches = example.out / "ray_results", example.out / "caches"
    stages = STAGES if args.stage == "all" else (args.stage,)
    cold_trials, warm_trials = (4, 2) if example.smoke else (COLD_TRIALS, WARM_TRIALS)
    if "caches" in stages:
        for task in tasks:
            if example.dry or not (caches / f"{task}.pt").is_file():
                example.run("ssot.features", "--task", task, "--num-threads", "1", *(SMOKE_CACHE if example.smoke else []),
                            *example.data_flags(), "--out", caches / f"{task}.pt", "--quiet")
    for seed in seeds:
        if "cold" in stages:
            for task in tasks:
                search(example, results, f"cold-s{seed}", task, caches / f"{task}.pt", cold_trials, seed)
        if "warm" in stages and len(tasks) > 1:
            for task in tasks:
                sources = [results / f"cold-s{seed}" / other for other in tasks if other != task]
                search(example, results, f"warm-s{seed}", task, caches / f"{task}.pt", warm_trials, seed, "--warm-start", *sources)
    if "atlas" in stages and len(tasks) > 1:
        name = f"cold-s{seeds[0]}"
        if example.dry or not (results / "transfer" / "transfer.json").is_file():
            example.run("tune/transfer.py", results, "--name", name, "--out", results / "transfer", "--seeds", *TRANSFER_SEEDS,
                        "--num-cpus", "2")
        if example.dry or not (example.out / "atlas" / "atlas.html").is_file():
            example.run("analysis/atlas.py", results, "--name", name, "--out", example.out / "atlas",
                        *(["--bootstrap", "5"] if example.smoke else []))
    if "report" in stages and not example.dry:
        if (results / "transfer" / "transfer.md").is_file():
            from atlas import tables

            example.show(results / "transfer" / "transfer.md")
            print(tables(results, f"cold-s{seeds[0]}"))
        report(example.out, results, tasks, seeds)
    return 0


if __name__ == "__main__":
    parser = common.parser(__doc__, tasks=("embedded3",), default_task="embedded3")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4], help="sampler seeds")
    parser.add_argument("--stage", choices=("all", *STAGES), default="all", help="run one stage only (default: all)")
    parser.add_argument("--lock", type=Path, help="run each command under `flock LOCK` (e.g. /tmp/ssot-heavy.lock)")
    sys.exit(common.main(body, parser.parse_args(), "warm_start"))
