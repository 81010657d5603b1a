"""The atlas across the embedded tasks: searches of digits, P2H and H2P, their transfer, the atlas.

    python examples/atlas.py                 # manual: Measured results, The atlas on the embedded tasks
    python examples/atlas.py --smoke-test    # tiny searches: checks the commands, not the numbers
    python examples/atlas.py --task office31 --data-root DIR   # every task of a paper dataset (hours, a GPU)

Runs ``tune/search.py`` on every task of the dataset (default ``embedded``: digits, P2H and H2P;
30 TPE trials per task, 6 epochs, no early stopping, so that every trial reaches the last epoch
and every epoch can be compared with it), ``tune/transfer.py`` (each task's best config and the paper's default on every task, seeds 0 1 2)
and ``analysis/atlas.py``, then prints the atlas's tables: the tunability of each hyperparameter
and of the whole config (against the shared value and the paper's default), the rank correlation
of each epoch with the last, and the transfer table.
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402


def tables(results: Path, name: str | None = None) -> str:
    """The atlas's numbers as Markdown (the library of ``analysis/atlas.py``, on the same searches;
    ``name``: the searches of that experiment name only, as ``--name``)."""
    from analysis.data.atlas import build_atlas
    from analysis.data.experiments import load_experiments
    from analysis.data.frames import format_value
    from analysis.data.rungs import rung_correlations
    from analysis.data.tunability import ALL, tunability_info
    from ssot.results.markdown import markdown_table
    from ssot.results.searches import task_searches

    experiments, _ = load_experiments(results)
    atlas = build_atlas(task_searches(experiments, name))
    lines = []
    for group in atlas.compared:
        info = tunability_info(atlas.of_group(group.label))
        if info.table.empty:
            lines += [f"Group {group.label}: tunability not computed ({'; '.join(info.notes)}).", ""]
        for reference in ("shared", "default") if not info.table.empty else ():
            rows = info.table[info.table["reference"] == reference]
            params = list(dict.fromkeys(rows["param"]))
            body = [[task, str(info.n_trials[task]),
                     *(f"{r.loss:.1f} [{r.low:.1f}, {r.high:.1f}]" for r in rows[rows["task"] == task].set_index("param")
                       .loc[params].itertuples())] for task in info.tasks]
            values = info.shared if reference == "shared" else info.default
            each = ", ".join(f"{p}={format_value(v)}" for p, v in values.items() if p != ALL)
            whole = ", ".join(f"{p}={format_value(v)}" for p, v in values[ALL].items())
            lines += [f"Group {group.label}, loss (points) at the {reference} values ({each}; whole config: {whole}), "
                      f"95 % bootstrap interval ({info.n_bootstrap} replicates):", "",
                      markdown_table(["task", "trials", *params], body, "lr" + "r" * len(params))]
    body = [[t.task, str(c.rung), str(c.n), f"{c.rho:.2f}", c.strength or c.note]
            for t in atlas.tasks for c in rung_correlations(t.experiment, t.table)]
    lines += ["Rank correlation of each epoch with the last (trials that reached both):", "",
              markdown_table(["task", "epoch", "trials", "Spearman", "DeepCAVE"], body, "lrrrl")]
    return "\n".join(lines)


def body(example: common.Example) -> int:
    from ssot.data.registry import dataset_of

    if dataset_of(example.task):  # a paper task: its data must be there
        example.check_data()
    results = example.out / "ray_results"
    epochs = [] if example.smoke or example.task != "embedded" else ["--epochs", "6"]
    example.run("tune/search.py", "--task", example.task, *example.search_flags(30), *epochs, "--no-early-stop",
                *example.data_flags(), "--storage-path", results, "--quiet")
    example.run("tune/transfer.py", results, "--out", results / "transfer", *example.seeds(0, 1, 2),
                *(["--num-cpus", "2"] if example.smoke else []))
    example.run("analysis/atlas.py", results, "--out", example.out / "atlas")
    if not example.dry:
        example.show(results / "transfer" / "transfer.md")
        print(tables(results))
    return 0


if __name__ == "__main__":
    sys.exit(common.main(body, common.parser(__doc__, tasks=("embedded",), default_task="embedded").parse_args(), "atlas"))
