"""DEV's importance weights: the cross-fitted estimate against the in-sample fit, where the truth is known.

    PYTHONPATH=. python benchmarks/dev_weights.py                 # Gaussians (known density ratio), 8 data seeds
    PYTHONPATH=. python benchmarks/dev_weights.py --real P2H H2P  # also the source-only features of the embedded tasks

Source N(0, I) and target N(mu, I) in d dimensions (300 source, 200 target samples, |mu| = 1 or
1.5): the true ratio is p_t/p_s = exp(mu.x - |mu|^2 / 2), whose mean over the source is 1.
Printed per setting, over 8 data seeds: the range of the weights' mean and of their Spearman
correlation with the true ratio, for ``ssot.validators.domain_weights`` (5 folds, penalty by
out-of-fold log-loss) and for the in-sample fit (``folds=1, l2=(0.01,)``: the classifier fitted
and applied on the same samples, as before). With ``--real``: the mean weight of each estimate
on the features of a source-only model (seed 0; no truth there, but a mean far below 1 says the
classifier separates its own samples) and the time of each estimate side by side (one thread;
the CPU is named in the last line).
"""
from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from scipy import stats

from ssot import cli
from ssot import validators as V
from ssot.results.markdown import markdown_table

if __package__ in (None, ""):  # run as a script: this folder's helpers
    sys.path.insert(0, str(Path(__file__).resolve().parent))
from _shared import cpu_name  # noqa: E402

ESTIMATES: dict[str, dict[str, Any]] = {"cross-fitted (5 folds)": {}, "in-sample (before)": {"folds": 1, "l2": (0.01,)}}


def gaussians(d: int, shift: float, seed: int, n_source: int = 300, n_target: int = 200):
    g = torch.Generator().manual_seed(seed)
    mu = torch.full((d,), shift / d ** 0.5, dtype=torch.float64)
    src = torch.randn(n_source, d, generator=g, dtype=torch.float64)
    return src, torch.randn(n_target, d, generator=g, dtype=torch.float64) + mu, torch.exp(src @ mu - mu @ mu / 2)


def real_features(task: str):
    """Held-out source and target features of a source-only model of ``task`` (seed 0)."""
    from ssot import evaluation
    from ssot.config import SSOTConfig
    from ssot.trainer import Trainer

    trainer = Trainer(SSOTConfig.for_task(task, num_threads=1))
    trainer.pretrain()
    return (evaluation.collect(trainer, trainer.source_eval_subset).feats.double(),
            evaluation.collect(trainer, trainer.task.target_eval).feats.double())


def build_parser() -> argparse.ArgumentParser:
    parser = cli.Parser(prog="python benchmarks/dev_weights.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--real", nargs="*", default=[], metavar="TASK", help="embedded tasks whose source-only features to weigh too")
    parser.add_argument("--seeds", type=int, default=8, help="data seeds per Gaussian setting")
    return parser


def run(args: argparse.Namespace) -> int:
    torch.set_num_threads(1)
    rows = []
    for d, shift in ((64, 1.0), (64, 1.5), (128, 1.0), (256, 1.0), (256, 1.5)):
        cells: dict[str, tuple[list[float], list[float]]] = {name: ([], []) for name in ESTIMATES}
        truth = []
        for seed in range(args.seeds):
            src, tgt, true = gaussians(d, shift, seed)
            truth.append(float(true.mean()))
            for name, kw in ESTIMATES.items():
                w = V.domain_weights(src, tgt, **kw)
                cells[name][0].append(float(w.mean())); cells[name][1].append(stats.spearmanr(w, true)[0])
        row = [str(d), f"{shift}", f"{min(truth):.2f}-{max(truth):.2f}"]
        for means, rhos in cells.values():
            row += [f"{min(means):.2f}-{max(means):.2f}", f"{min(rhos):.2f}-{max(rhos):.2f}"]
        rows.append(row)
    header = ["d", "shift", "true weights: mean"] + [f"{n}: {what}" for n in ESTIMATES for what in ("mean", "Spearman")]
    print(markdown_table(header, rows, "rrr" + "r" * 4))
    for task in args.real:
        src, tgt = real_features(task)
        out = []
        for name, kw in ESTIMATES.items():
            start = time.perf_counter()
            w = V.domain_weights(src, tgt, **kw)
            out.append(f"{name} {float(w.mean()):.2f} ({time.perf_counter() - start:.2f} s)")
        print(f"{task} source-only features ({len(src)} source x {len(tgt)} target, {src.shape[1]} dims): mean weight "
              + ", ".join(out))
    print(f"({cpu_name()}, numpy {np.__version__}, torch {torch.__version__}, 1 thread)")
    return cli.EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    return cli.command(build_parser(), run, argv)


if __name__ == "__main__":
    sys.exit(main())
