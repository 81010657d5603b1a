"""Side-by-side timings behind two design decisions (run by hand, not by pytest).

    python benchmarks/bench_speed.py

1. ``pt_refresh``: re-estimating p_t every iteration (the paper's Algorithm 1, ``pt_refresh=1``)
   against once per epoch (our default, ``pt_refresh=0``): time of one adaptation epoch.
2. The search's shared pretraining: a trial that pretrains against one that loads the cached
   source-only model (``Trainer.load_pretrained``).

Both on the embedded digits task, on this machine's CPU; each timing is the best of ``REPEATS``.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

import torch

if __package__ in (None, ""):  # run as a script: import the project beside this folder
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ssot import SSOTConfig, Trainer  # noqa: E402
from ssot.data.base import num_samples  # noqa: E402
from ssot.data.digits import build_digits_task  # noqa: E402

REPEATS = 3


def best_of(fn, repeats: int = REPEATS) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    torch.set_num_threads(max(1, torch.get_num_threads()))
    task = build_digits_task()
    cfg = SSOTConfig.for_task("digits", epochs=1)
    base = Trainer(cfg, task)
    base.pretrain()
    state = base.pretrained_state()

    def one_epoch(pt_refresh: int) -> None:
        trainer = Trainer(cfg.replace(pt_refresh=pt_refresh), task)
        trainer.load_pretrained(state)
        trainer.adapt_epoch()

    per_epoch = best_of(lambda: one_epoch(0))
    per_iter = best_of(lambda: one_epoch(1))
    n_iter = base.iterations_per_epoch()
    print(f"adaptation epoch ({n_iter} iterations, {num_samples(task.target)} target images):")
    print(f"  p_t once per epoch  {per_epoch:7.2f} s")
    print(f"  p_t every iteration {per_iter:7.2f} s   ratio {per_iter / per_epoch:5.1f}x")
    print("  (the extra cost is one target pass per iteration: on VisDA-2017, ~29k target images,"
          " it dominates the epoch)")

    pretrain = best_of(lambda: Trainer(cfg, task).pretrain(), repeats=1)
    load = best_of(lambda: Trainer(cfg, task).load_pretrained(state))
    print(f"start of a search trial ({cfg.pretrain_epochs} pretraining epochs):")
    print(f"  pretrain            {pretrain:7.2f} s")
    print(f"  load cached model   {load:7.2f} s   ratio {pretrain / load:5.1f}x")


if __name__ == "__main__":
    main()
