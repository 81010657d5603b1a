"""What computing DEV less often than every epoch would cost model selection, from searches already recorded (by hand, not pytest).

    python tune/search.py --task P2H --features caches/P2H-s0.pt --search random --num-samples 32 --no-early-stop --population 16 --name cadence
    python benchmarks/dev_cadence.py ray_results/cadence --every 1 2 3 5 15

DEV is the costliest validator of an epoch's evaluation on a CPU (docs/screening.md: its 15
cross-fitted classifiers are most of a population's epoch). Computing it only every k-th epoch and
at the last would cut that cost by about k, and change only what the selections can choose from:
epoch selection by DEV (and by the combined selectors that use it) picks among the epochs that
have a DEV; hyperparameter selection reads the final epoch, which always has one. For every
experiment under the folder, this keeps the recorded DEV of every k-th epoch and of the last only
(the others become missing, as they would be) and prints the regrets of
:mod:`analysis.data.selection` (epoch selection: ``dev``, ``dev_guarded``, ``rank_mean``, beside
``last_epoch``; hyperparameter selection: ``dev``), so the cadence's cost in selection is measured
on the searches at hand. The searches need target labels (the oracle) and no early stopping (every
trial's every epoch).
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: import the project
    sys.path[:0] = [str(Path(__file__).resolve().parents[1])]

#: The epoch-selection rows printed for each cadence (the last epoch is the baseline).
EPOCH_SELECTORS = ("dev", "dev_guarded", "rank_mean", "last_epoch")


def thinned(frame: Any, every: int, epochs: int) -> Any:
    """``frame`` (a search's ``trials.csv`` rows, runs of ``epochs`` epochs) with DEV kept only at the
    epochs a run with ``dev_every = every`` computes it (:func:`ssot.trainer.dev_due`)."""
    import numpy as np
    import pandas as pd

    from ssot.trainer import dev_due

    out = frame.copy()
    due = [e == e and dev_due(int(e), every, epochs) for e in pd.to_numeric(out["epoch"], errors="coerce")]  # NaN: not due
    out.loc[~np.array(due, dtype=bool), "dev"] = np.nan
    return out


def cadence_rows(frame: Any, directions: dict[str, str], every: list[int], max_epochs: int) -> list[dict[str, Any]]:
    """One row per cadence: the regrets (points) of the epoch selectors and of DEV's hyperparameter selection."""
    from analysis.data.selection import epoch_selection, hyperparameter_selection

    rows = []
    for k in every:
        data = thinned(frame, k, max_epochs)
        table = epoch_selection(data, directions).set_index("validator")
        epochs = table["regret"]
        configs = hyperparameter_selection(data, directions).set_index("validator")["regret"]
        rows.append({"every": k, **{name: float(epochs.get(name, float("nan"))) for name in EPOCH_SELECTORS},
                     "spearman": float(table["spearman"].get("dev", float("nan"))),
                     "configs_dev": float(configs.get("dev", float("nan")))})
    return rows


def main(argv: list[str] | None = None) -> int:
    from analysis.data.selection import read_experiments
    from ssot import cli

    parser = cli.Parser(prog="python benchmarks/dev_cadence.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("results", help="a folder of searches (or one search's folder)")
    parser.add_argument("--every", type=int, nargs="+", default=[1, 2, 3, 5], help="the cadences k to compare (default 1 2 3 5)")
    args = parser.parse_args(argv)
    if any(k < 1 for k in args.every):
        parser.error("--every takes cadences of at least 1 (1: every epoch, as recorded)")
    experiments = read_experiments(args.results)
    if not experiments:
        print(f"{args.results}: no search with trials found (a folder written by tune/search.py).")
        return 2
    for meta, frame in experiments:
        directions = meta.get("validator_directions") or {}
        if "dev" not in directions or "dev" not in frame:
            print(f"{meta.get('name')}/{meta.get('task')}: no DEV recorded; skipped")
            continue
        trials = frame["trial_id"].nunique()
        print(f"{meta.get('name')}/{meta.get('task')}: {trials} trials; regret in points of target accuracy "
              f"(epoch selection, mean over trials | hyperparameter selection), DEV kept every k-th epoch and at the last:")
        for row in cadence_rows(frame, directions, args.every, int(meta["max_epochs"])):
            epochs = ", ".join(f"{name} {row[name]:.2f}" for name in EPOCH_SELECTORS)
            print(f"  every {row['every']:3d}: epochs: {epochs} (DEV's rank correlation with accuracy within a trial "
                  f"{row['spearman']:.3f}) | configs: dev {row['configs_dev']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
