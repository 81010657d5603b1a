"""The wall time of ``python tune/search.py --task T --num-samples 50`` on one GPU, estimated from measured rates.

    python benchmarks/search_estimate.py                    # the table of docs/gpu.md (seconds; no GPU needed)
    python benchmarks/search_estimate.py --num-samples 20

Nothing is measured here: the rates are those measured on an NVIDIA H200 (torch 2.11, 16 CPU cores,
2026-11-28, ``python benchmarks/gpu.py --sections model trials pipeline epoch --seconds 6``), and
the arithmetic, printed for each task, is:

- an adaptation epoch of a task with ``n_s`` source images: ``n_s // 32`` SSOT iterations of 64
  images at the SSOT step's rate (2,154 images/s: 29.7 ms each), plus its evaluation passes (the
  partial target and a source subset of at most 2,000 images) at the rate that the measured A2W
  epoch leaves for them (3.4 s - 88 x 29.7 ms = 0.79 s for 795 + 2,000 images: 0.28 ms each);
- a pretraining epoch: ``n_s // 32`` cross-entropy iterations of 32 images at plain CE's rate
  (2,328 images/s: 13.7 ms) and the same evaluation; the task's 5 pretraining epochs run once
  per trial that starts before the first one saved its pretrained model: counted once per
  trial running at once (an upper bound);
- ASHA (grace 5, reduction factor 3, 20 epochs: rungs at 5 and 15) lets about a third of the
  trials past each rung: ``50 x (5 + 10/3 + 5/9) = 444`` adaptation epochs, against 1,000
  without early stopping;
- 4 trials packed on the GPU with MPS gave 2.14x one trial's images/s: the epochs' total time is
  divided by 2.14;
- the decoded-image cache is prepared once: 2 s for A2W's 3,612 images (1,800 images/s).

The partial target's size is not published per class for Office-31, Office-Home and VisDA-2017:
it is taken as the target domain's size times the share of target classes (10/31, 25/65, 6/12);
ImageCLEF has 50 images per class (6 x 50 = 300).
"""
from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a script: import the project
    sys.path[:0] = [str(Path(__file__).resolve().parents[1])]

#: Rates measured on the H200 (module docstring).
SSOT_IPS, CE_IPS, EPOCH_A2W, A2W_ITERS, A2W_EVAL_IMAGES = 2154.0, 2328.0, 3.4, 88, 795 + 2000
PACKED, PACKED_TRIALS, PREPARE_IPS = 2.14, 4, 3612 / 2.0
BATCH, SOURCE_EVAL, PRETRAIN_EPOCHS = 32, 2000, 5


def eval_seconds_per_image() -> float:
    return (EPOCH_A2W - A2W_ITERS * 2 * BATCH / SSOT_IPS) / A2W_EVAL_IMAGES


def asha_epochs(trials: int, grace: int = 5, factor: int = 3, max_t: int = 20) -> float:
    """Adaptation epochs of ``trials`` trials when about 1/factor of them pass each rung."""
    from ssot.results.trials import asha_rungs

    rungs = [r for r in asha_rungs(grace, factor, max_t) if r < max_t] + [max_t]
    total, previous, share = 0.0, 0, 1.0
    for rung in rungs:
        total += share * (rung - previous)
        previous, share = rung, share / factor
    return trials * total


def estimate(task: str, trials: int) -> dict[str, float]:
    """Seconds of each part of the search of ``task`` (module docstring)."""
    from ssot.data.registry import DATASETS
    from ssot.data.registry import task as spec_of

    spec_task = spec_of(task)
    spec = DATASETS[spec_task.dataset]
    counts = spec.published_counts
    n_s = counts[spec.domains[spec_task.source] if spec_task.source in spec.domains else spec_task.source]
    n_t_all = counts[spec.domains[spec_task.target] if spec_task.target in spec.domains else spec_task.target]
    share = len(spec.target_classes) / spec.num_classes
    n_t = spec.published_per_class * len(spec.target_classes) if spec.published_per_class else round(n_t_all * share)
    iters = n_s // BATCH
    evaluation = (n_t + min(SOURCE_EVAL, n_s)) * eval_seconds_per_image()
    epoch = iters * 2 * BATCH / SSOT_IPS + evaluation
    pretrain = PRETRAIN_EPOCHS * (iters * BATCH / CE_IPS + evaluation)
    epochs = asha_epochs(trials)
    compute = min(trials, PACKED_TRIALS) * pretrain + epochs * epoch
    return {"n_s": n_s, "n_t": n_t, "iters": iters, "epoch": epoch, "pretrain": pretrain, "epochs": epochs,
            "prepare": (n_s + n_t) / PREPARE_IPS, "wall": compute / PACKED + (n_s + n_t) / PREPARE_IPS}


def main(argv: list[str] | None = None) -> int:
    from ssot import cli
    from ssot.data.registry import BENCHMARKS, searched_tasks

    parser = cli.Parser(prog="python benchmarks/search_estimate.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--num-samples", type=int, default=50, help="configs of the search")
    args = parser.parse_args(argv)
    print(f"eval: {1000 * eval_seconds_per_image():.3f} ms per image; ASHA: {asha_epochs(args.num_samples):.0f} adaptation "
          f"epochs for {args.num_samples} trials")
    print("| dataset | task | source / partial target images | iterations per epoch | adaptation epoch | pretraining (5 epochs) "
          "| cache | search, 4 trials packed (2.14x) |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for dataset in BENCHMARKS:
        for task in searched_tasks(dataset) or ():
            e = estimate(task, args.num_samples)
            print(f"| {dataset} | {task} | {e['n_s']:,} / {e['n_t']:,} | {e['iters']:,} | {e['epoch']:.1f} s | {e['pretrain']:.0f} s "
                  f"| {e['prepare']:.0f} s | {e['wall'] / 60:.0f} min ({e['wall'] / 3600:.1f} h) |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
