"""The atlas across the embedded tasks: searches of digits, P2H and H2P, their transfer, the atlas.

    python examples/atlas.py                 # manual: Measured results, The atlas on the embedded tasks
    python examples/atlas.py --smoke-test    # tiny searches: checks the commands, not the numbers

Runs ``tune/search.py --task embedded`` (30 TPE trials per task, 6 epochs, no early stopping, so
that every trial reaches the last epoch and every epoch can be compared with it),
``tune/transfer.py`` (each task's best config and the paper's default on every task, seeds 0 1 2)
and ``analysis/atlas.py``, then prints the atlas's tables: the tunability of each hyperparameter
and of the whole config (against the shared value and the paper's default), the rank correlation
of each epoch with the last, and the transfer table.
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402


def tables(results: Path) -> str:
    """The atlas's numbers as Markdown (the library of ``analysis/atlas.py``, on the same searches)."""
    from analysis.data.atlas import build_atlas
    from analysis.data.experiments import load_experiments
    from analysis.data.rungs import rung_correlations
    from analysis.data.tunability import ALL, tunability_info
    from ssot.results.markdown import markdown_table
    from ssot.results.searches import task_searches

    experiments, _ = load_experiments(results)
    atlas = build_atlas(task_searches(experiments))
    lines = []
    for group in atlas.compared:
        info = tunability_info(atlas.of_group(group.label))
        for reference in ("shared", "default"):
            rows = info.table[info.table["reference"] == reference]
            params = list(dict.fromkeys(rows["param"]))
            body = [[task, str(info.n_trials[task]),
                     *(f"{r.loss:.1f} [{r.low:.1f}, {r.high:.1f}]" for r in rows[rows["task"] == task].set_index("param")
                       .loc[params].itertuples())] for task in info.tasks]
            shared = ", ".join(f"{p}={v:.3g}" if isinstance(v, float) else f"{p}={v}" for p, v in
                               (info.shared if reference == "shared" else info.default).items() if p != ALL)
            lines += [f"Group {group.label}, loss (points) at the {reference} value ({shared}), 95 % bootstrap interval "
                      f"({info.n_bootstrap} replicates):", "",
                      markdown_table(["task", "trials", *params], body, "lr" + "r" * len(params))]
    body = [[t.task, str(c.rung), str(c.n), f"{c.rho:.2f}", c.strength or c.note]
            for t in atlas.tasks for c in rung_correlations(t.experiment, t.table)]
    lines += ["Rank correlation of each epoch with the last (trials that reached both):", "",
              markdown_table(["task", "epoch", "trials", "Spearman", "DeepCAVE"], body, "lrrrl")]
    return "\n".join(lines)


def body(example: common.Example) -> int:
    results = example.out / "ray_results"
    epochs = [] if example.smoke else ["--epochs", "6"]
    example.run("tune/search.py", "--task", "embedded", *example.search_flags(30), *epochs, "--no-early-stop",
                "--storage-path", results, "--verbose", "0")
    example.run("tune/transfer.py", results, "--out", results / "transfer", *example.seeds(0, 1, 2),
                *(["--num-cpus", "2"] if example.smoke else []))
    example.run("analysis/atlas.py", results, "--out", example.out / "atlas")
    if not example.dry:
        example.show(results / "transfer" / "transfer.md")
        print(tables(results))
    return 0


if __name__ == "__main__":
    sys.exit(common.main(body, common.parser(__doc__, tasks=None).parse_args(), "atlas"))
