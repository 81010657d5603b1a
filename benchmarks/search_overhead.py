"""Search overhead on digits: wall time of a search against its trials' training time.

    python benchmarks/search_overhead.py                 # 20 TPE trials, 2 CPUs (concurrency 2)
    python benchmarks/search_overhead.py --num-samples 8

Training time (the work) is the sum over trials and epochs of the epochs' ``time_s`` (adaptation
plus evaluation, measured by the trainer). The ideal wall time is work / concurrency; the ratio
``wall / ideal`` is the overhead (goal <= 1.3). Where the rest goes:

- Ray start (``ray.init``) and shutdown;
- inside trials but outside epochs (Ray's ``time_total_s`` minus the epochs' ``time_s``): trial
  set-up (task data, models), loading or computing the shared pretraining, checkpoints, reports;
- outside trials: actor start, scheduling, the searcher, idle slots at the end (the rest).
"""
from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script: import the project beside this folder
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def measure(num_samples: int, num_cpus: int, storage: Path) -> dict[str, float]:
    import pandas as pd
    import ray

    from tune.experiment import run_search
    from tune.options import SearchOptions

    start = time.perf_counter()
    ray.init(address="local", num_cpus=num_cpus, include_dashboard=False, log_to_driver=False)
    ray_start = time.perf_counter() - start
    try:
        t = time.perf_counter()
        outcome = run_search(SearchOptions(task="digits", num_samples=num_samples, storage_path=str(storage),
                                           name="overhead", verbose=0))
        search = time.perf_counter() - t
    finally:
        t = time.perf_counter()
        ray.shutdown()
        ray_stop = time.perf_counter() - t
    frame = pd.read_csv(Path(outcome.path) / "trials.csv")
    work = float(frame["time_s"].sum())
    in_trial = 0.0
    for result in Path(outcome.path).glob("trial_*/result.json"):
        rows = [json.loads(line) for line in result.read_text().splitlines() if line.strip()]
        in_trial += rows[-1]["time_total_s"]
    wall = ray_start + search + ray_stop
    concurrency = num_cpus  # one CPU per trial (the search's default)
    return {"wall": wall, "work": work, "ideal": work / concurrency, "ratio": wall / (work / concurrency),
            "ray_start_stop": ray_start + ray_stop, "trial_setup": (in_trial - work) / concurrency,
            "outside": search - in_trial / concurrency, "trials": float(frame["trial_id"].nunique()),
            "epochs": float(len(frame))}


def main(argv: list[str] | None = None) -> int:
    from ssot import cli

    parser = cli.Parser(prog="python benchmarks/search_overhead.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--num-samples", type=int, default=20)
    parser.add_argument("--num-cpus", type=int, default=2)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        r = measure(args.num_samples, args.num_cpus, Path(tmp))
    print(f"digits search, {int(r['trials'])} trials ({int(r['epochs'])} epochs reported), concurrency {args.num_cpus}:")
    print(f"  wall time {r['wall']:.1f} s; training time {r['work']:.1f} s / {args.num_cpus} = {r['ideal']:.1f} s; "
          f"ratio {r['ratio']:.2f}x (goal <= 1.3x)")
    print(f"  where the rest goes (wall-clock s): Ray start+stop {r['ray_start_stop']:.1f}, "
          f"in trials outside epochs (set-up, pretraining, checkpoints, reports) {r['trial_setup']:.1f}, "
          f"outside trials (actor start, scheduling, searcher, idle slots) {r['outside']:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
