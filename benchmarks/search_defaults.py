"""The headline search with the defaults before and after issue 37, side by side in one run.

    python benchmarks/search_defaults.py                 # on a GPU machine: A2W, generated Office-31-sized folder, 8 configs
    python benchmarks/search_defaults.py --smoke         # every path with tiny sizes on a CPU (measures nothing)

Both runs are ``python tune/search.py --task A2W --num-samples 8`` on the same generated folder
(2,817 amazon + 795 webcam noise JPEGs of 300x300, the webcam images in the 10 target classes:
Office-31's sizes), random-init ResNet-50 (``--set pretrained=false``: no weights to download,
the same arithmetic), every trial to its last epoch (``--no-early-stop``: both runs do the same
work), ``--epochs`` adaptation and ``--pretrain-epochs`` pretraining epochs (fewer than the
task's 20 + 5, to fit a measurement in minutes; the ratio is per epoch):

``before``
    the defaults before issue 37: ``--image-cache off`` (the JPEG loader), ``--gpus-per-trial 1``
    on a GPU machine (one trial per GPU);
``after``
    today's defaults: the decoded-image cache, prepared by the search (its preparation counted:
    a new cache folder, ``$SSOT_CACHE_DIR``, for the run), trials packed with MPS when they fit.

It prints each wall time, the ratio and what each search chose (its lines). The goal of
issue 37: after >= 4x faster than before.
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script: import the project and this folder's helpers
    sys.path[:0] = [str(Path(__file__).resolve().parents[1]), str(Path(__file__).resolve().parent)]

from _shared import load, write_task_jpegs  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
GOAL = 4.0


def search(name: str, root: Path, storage: Path, extra: list[str], env: dict[str, str]) -> tuple[float, str]:
    """Wall time and output of one search."""
    command = [sys.executable, str(REPO / "tune" / "search.py"), "--task", "A2W", "--data-root", str(root),
               "--storage-path", str(storage), "--name", name, "--no-early-stop", "--set", "pretrained=false", *extra]
    print("$ " + " ".join(command[1:]), flush=True)
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"error: the {name} search exited with {done.returncode}:\n{done.stderr[-3000:]}")
    return seconds, done.stdout


def main(argv: list[str] | None = None) -> int:
    from ssot import cli

    parser = cli.Parser(prog="python benchmarks/search_defaults.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--num-samples", type=int, default=8, help="configs of each search")
    parser.add_argument("--epochs", type=int, default=3, help="adaptation epochs of each trial")
    parser.add_argument("--pretrain-epochs", type=int, default=1, help="pretraining epochs of each trial")
    parser.add_argument("--smoke", action="store_true", help="tiny images and schedule on a CPU: checks the script")
    args = parser.parse_args(argv)
    import torch

    gpu = torch.cuda.is_available() and not args.smoke
    sizes = (62, 20, 40) if args.smoke else (2817, 795, 300)
    schedule = ["--epochs", str(args.epochs if not args.smoke else 1), "--set", f"pretrain_epochs={1 if args.smoke else args.pretrain_epochs}",
                "--num-samples", str(args.num_samples if not args.smoke else 2)]
    if args.smoke:
        schedule += ["--set", "image_size=32", "--set", "resize_size=36", "--set", "batch_size=4", "--set", "iters_per_epoch=1",
                     "--set", "source_eval_samples=4", "--num-cpus", "2"]
    machine = torch.cuda.get_device_name(0) if gpu else "CPU"
    print(f"{machine}, torch {torch.__version__}, {load()}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        root = write_task_jpegs(Path(tmp) / "data", *sizes)
        env = {**os.environ, "SSOT_CACHE_DIR": str(Path(tmp) / "cache")}  # a new cache: its preparation is counted
        before, _ = search("before", root, Path(tmp) / "runs", [*schedule, "--image-cache", "off", "--gpus-per-trial",
                                                                 "1" if gpu else "0"], env)
        after, out = search("after", root, Path(tmp) / "runs", schedule, env)
    from tune.choices import NAMES

    print("\n".join(line for line in out.splitlines() if line.startswith("A2W: ") and line[5:].split(":")[0] in NAMES))
    rows = {"before (JPEG loader, one trial per GPU)": before, "after (decoded-image cache prepared by the search, packing)": after}
    print("\n".join(["| search | wall time |", "| --- | --- |", *(f"| {name} | {wall:.0f} s |" for name, wall in rows.items())]))
    verdict = "met" if before / after >= GOAL else "NOT met"
    print(f"ratio {before / after:.2f}x (goal >= {GOAL:g}x: {verdict})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
