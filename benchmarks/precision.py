"""bf16 against fp32: final target accuracy of the same configs and seeds (run by hand, not by pytest).

    python benchmarks/precision.py                          # digits, P2H, H2P x seeds 0 1 2: ~30 min on 2 CPU cores
    python benchmarks/precision.py --device cuda            # the same on a GPU
    python benchmarks/precision.py --smoke                  # tiny schedule: checks the script in seconds

Each run is the task's default config (``SSOTConfig.for_task``: the digits CNN, 8 pretraining and
15 adaptation epochs) with ``precision`` fp32 or bf16 (autocast of the feature extractor and the
classifier; the OT maths stays fp32), trained twice per seed, one precision after the other. A
run's accuracy is its final accuracy (:attr:`ssot.results.record.RunRecord.final_acc`: the target
accuracy at the last adaptation epoch); over seeds, the mean and the sample standard deviation
(:func:`ssot.results.record.mean_std`).

The rule this benchmark decides (docs/gpu.md, "Precision"): bf16 is *not worse* on a task when the
mean over seeds of the paired difference (bf16 - fp32, same seed) is >= -:data:`TOLERANCE`;
bf16 may be a default only where it is not worse on every task measured.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: import the project and this folder's helpers
    sys.path[:0] = [str(Path(__file__).resolve().parents[1]), str(Path(__file__).resolve().parent)]

from _shared import device_name, load  # noqa: E402

TASKS = ("digits", "P2H", "H2P")
PRECISIONS = ("fp32", "bf16")
#: How far (a fraction, 0.005 = half a point) bf16's mean paired difference may fall below 0 and still count as not worse.
TOLERANCE = 0.005


def final_accuracies(task: str, seeds: list[int], device: str, smoke: bool) -> dict[str, Any]:
    """Per precision: the final accuracy of each seed and the seconds of each run."""
    from ssot.config import SSOTConfig
    from ssot.results.record import RunRecord
    from ssot.trainer import run

    small = {"epochs": 1, "pretrain_epochs": 1, "iters_per_epoch": 3} if smoke else {}
    out: dict[str, Any] = {p: {"acc": [], "s": []} for p in PRECISIONS}
    for seed in seeds:
        for precision in PRECISIONS:
            start = time.perf_counter()
            record = RunRecord.from_dict(run(SSOTConfig.for_task(task, precision=precision, device=device, seed=seed, **small)))
            out[precision]["s"].append(time.perf_counter() - start)
            out[precision]["acc"].append(record.final_acc)
            print(f"  {task} seed {seed} {precision}: final target_acc {record.final_acc:.4f} "
                  f"({out[precision]['s'][-1]:.0f} s)", flush=True)
    return out


def not_worse(fp32: list[float], bf16: list[float]) -> tuple[float, bool]:
    """The mean paired difference bf16 - fp32 (same seeds) and whether bf16 is not worse (module docstring)."""
    diff = sum(b - f for f, b in zip(fp32, bf16)) / len(fp32)
    return diff, diff >= -TOLERANCE


def table(results: dict[str, dict[str, Any]], seeds: list[int], machine: str) -> str:
    """The Markdown table of ``results`` (task -> :func:`final_accuracies`) and the verdict."""
    from ssot.results.record import mean_std

    lines = [f"{machine}; final target accuracy over seeds {' '.join(map(str, seeds))} (mean +- sample std)", "",
             "| task | fp32 | bf16 | bf16 - fp32 (paired mean) | not worse (>= -0.5 points) | seconds per run fp32 / bf16 |",
             "| --- | --- | --- | --- | --- | --- |"]
    verdicts = []
    for task, r in results.items():
        (mf, sf), (mb, sb) = mean_std(r["fp32"]["acc"]), mean_std(r["bf16"]["acc"])
        diff, ok = not_worse(r["fp32"]["acc"], r["bf16"]["acc"])
        verdicts.append(ok)
        secs = [sum(r[p]["s"]) / len(r[p]["s"]) for p in PRECISIONS]
        lines.append(f"| {task} | {100 * mf:.1f} +- {100 * sf:.1f} | {100 * mb:.1f} +- {100 * sb:.1f} | {100 * diff:+.1f} points | "
                     f"{'yes' if ok else 'NO'} | {secs[0]:.0f} / {secs[1]:.0f} |")
    lines += ["", "bf16 is not worse on every task: " + ("yes" if all(verdicts) else "NO")]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    from ssot import cli

    parser = cli.Parser(prog="python benchmarks/precision.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", nargs="+", default=list(TASKS), help="embedded tasks to train")
    cli.add_seeds(parser)
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu", help="where to train")
    parser.add_argument("--smoke", action="store_true", help="1 pretraining and 1 adaptation epoch of 3 iterations (checks the script)")
    args = parser.parse_args(argv)
    machine = f"{device_name(args.device)}, {load()}"
    print(machine, flush=True)
    results = {task: final_accuracies(task, args.seeds, args.device, args.smoke) for task in args.tasks}
    print(table(results, args.seeds, machine))
    return 0


if __name__ == "__main__":
    sys.exit(main())
