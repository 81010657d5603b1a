"""The paper's 5x5 lambda grid and a 20-trial TPE + ASHA search on one task, then both winners
over seeds.

    python examples/grid_vs_tpe.py --task P2H        # manual: Measured results, Printed <-> handwritten
    python examples/grid_vs_tpe.py --task digits     # manual: Measured results, Embedded task

Runs ``tune/search.py --search grid`` and ``tune/search.py`` (TPE) into one results folder,
prints the grid's final target accuracy per (lambda_OT, lambda_Ent) cell ("(ep N)": ASHA stopped
the cell at epoch N) and each search's best, exports both best configs (``tune/export.py``) and
runs them over seeds 0 1 2 (``tune/final.py``); the dashboard of both searches draws the grid's
heatmap (``analysis/sensitivity.py``).
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402


def grid_table(folder: Path) -> str:
    """The final target accuracy of each grid cell, from the experiment's ``trials.csv``."""
    from ssot.results.experiment import read_experiment
    from ssot.results.markdown import markdown_table

    experiment = read_experiment(folder)
    assert experiment.trials is not None and experiment.meta is not None, f"{folder}: {experiment.problems}"
    last = experiment.trials.sort_values("epoch").groupby("trial_id").tail(1)
    max_epochs = int(experiment.meta["max_epochs"])
    cells = {(r.lambda_ot, r.lambda_ent): f"{r.target_acc:.3f}" + ("" if r.epoch >= max_epochs else f" (ep {int(r.epoch)})")
             for r in last.itertuples()}
    rows = sorted({k[0] for k in cells})
    cols = sorted({k[1] for k in cells})
    return markdown_table(["lambda_OT \\ lambda_Ent", *(f"{c:g}" for c in cols)],
                          [[f"{ot:g}", *(cells.get((ot, ent), "") for ent in cols)] for ot in rows])


def body(example: common.Example) -> int:
    example.check_data()
    results = example.out / "ray_results"
    grid_flags = ["--num-cpus", "2", "--epochs", "2", "--set", "pretrain_epochs=1", "--set", "iters_per_epoch=3",
                  "--grace-period", "1"] if example.smoke else []
    example.run("tune/search.py", "--task", example.task, "--search", "grid", *grid_flags, *example.data_flags(),
                "--storage-path", results, "--name", "grid", "--quiet")
    example.run("tune/search.py", "--task", example.task, *example.search_flags(20), *example.data_flags(),
                "--storage-path", results, "--name", "tpe", "--quiet")
    for name in ("grid", "tpe"):
        example.run("tune/export.py", results / name, "--out", example.out / f"configs-{name}")
        example.run("tune/final.py", example.out / f"configs-{name}", *example.seeds(0, 1, 2),
                    "--out", example.out / f"final-{name}", *(["--epochs", "1"] if example.smoke else []))
    example.run("analysis/sensitivity.py", results, "--no-images")
    if not example.dry:
        print(f"\n{example.task}: the paper's grid, final target accuracy per cell\n\n{grid_table(results / 'grid' / example.task)}")
        for name in ("grid", "tpe"):
            example.show(example.out / f"final-{name}" / "results.md")
    return 0


if __name__ == "__main__":
    sys.exit(common.main(body, common.parser(__doc__).parse_args(), "grid_vs_tpe"))
