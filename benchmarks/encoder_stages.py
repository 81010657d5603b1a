"""The proxy of each encoder stage: screens of an end-to-end search's configs on caches of each stage.

    python benchmarks/encoder_stages.py --reference RESULTS/random-s0/P2H
    python benchmarks/encoder_stages.py --reference RESULTS/random-s0/P2H --stages pretrained untrained --epochs 30

For each ``--stages`` (:data:`ssot.data.encoder_stages.ENCODERS` that fit the task's backbone), a cache of
the reference's task and seed is built in a temporary folder (``python -m ssot.features
--encoder STAGE``), the reference's configs are trained on it as populations
(:class:`ssot.population.Population`, the reference's config otherwise, ``--epochs`` to change the
screen's length), and their final target accuracies are compared with the reference's end-to-end
ones (:mod:`analysis.data.proxy`: Spearman, Kendall, the regret of the screen's top k).

The commands refuse caches of an untrained encoder, so this script trains through the library
(``untrained_ok``): that stage is measured here for comparison only.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script: import the project
    sys.path[:0] = [str(Path(__file__).resolve().parents[1])]


def screen(reference: object, stage: str, args: argparse.Namespace, folder: Path) -> tuple[list[float], float]:
    """The reference's configs trained on a cache of ``stage``: their final target accuracies and the wall time."""
    from ssot.config import SSOTConfig
    from ssot.data.features import load_feature_task
    from ssot.features import build_feature_cache
    from ssot.population import Population

    meta = reference.meta  # type: ignore[attr-defined]
    base = SSOTConfig.from_dict(dict(meta["base_config"]))
    cache = folder / f"{base.task}-{stage}.pt"
    build_feature_cache(base.replace(device="cpu"), cache, encoder=stage, progress=False)
    task = load_feature_task(cache, base.task, untrained_ok=True)
    screened = base.replace(backbone="features", features_path=str(cache), device="cpu",
                            **({"epochs": args.epochs} if args.epochs else {}))
    from tune.replay import read_reference

    configs = [screened.replace(**values) for values in read_reference(str(args.reference), base.task).configs]
    start, accuracies = time.perf_counter(), []
    for first in range(0, len(configs), args.population):
        records = Population(configs[first:first + args.population], task).fit()
        accuracies += [r["epochs"][-1]["target_acc"] if r["status"] == "completed" else 0.0 for r in records]
    return accuracies, time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    from ssot import cli

    parser = cli.Parser(prog="python benchmarks/encoder_stages.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--reference", type=Path, required=True, help="a finished end-to-end search (its task folder)")
    parser.add_argument("--stages", nargs="+", default=["pretrained", "untrained"], help="encoder stages to compare")
    parser.add_argument("--epochs", type=int, help="screening epochs (default: the reference's)")
    parser.add_argument("--population", type=int, default=16, help="members per population")
    parser.add_argument("--k", type=int, nargs="+", default=[1, 3, 5])
    args = parser.parse_args(argv)
    import numpy as np

    from analysis.data.proxy import kendall_tau_b, spearman
    from ssot.results.experiment import read_experiment
    from tune.replay import read_reference

    reference = read_experiment(args.reference)
    table = reference.trial_table().sort_values("trial_id", kind="stable")
    truth = np.where(table["status"] == "diverged", 0.0, table["final_acc"].to_numpy(dtype=float))
    assert len(truth) == len(read_reference(str(args.reference), reference.task).configs)
    print(f"{reference.task}, reference {args.reference} ({len(truth)} configs, seed {(reference.meta or {})['base_config']['seed']}); "
          f"best end-to-end accuracy {100 * np.nanmax(truth):.1f} %")
    with tempfile.TemporaryDirectory() as tmp:
        for stage in args.stages:
            accuracies, wall = screen(reference, stage, args, Path(tmp))
            acc = np.array(accuracies)
            keep = ~np.isnan(truth)
            order = np.argsort(-acc[keep], kind="stable")
            best = np.nanmax(truth[keep])
            regrets = ", ".join(f"top-{k} {100 * (best - truth[keep][order[:k]].max()):.1f}" for k in args.k)
            screened, ended = acc[keep].tolist(), truth[keep].tolist()
            print(f"  {stage:10s}: Spearman {spearman(screened, ended):.2f}, Kendall {kendall_tau_b(screened, ended):.2f}; "
                  f"regret (points) {regrets}; screen accuracies {100 * acc.min():.1f}-{100 * acc.max():.1f} %; {wall:.0f} s",
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
