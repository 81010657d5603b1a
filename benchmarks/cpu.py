"""CPU timings of fast trials, side by side in one run (run by hand, not by pytest).

    python benchmarks/cpu.py                       # ~2-4 min on 2 CPU cores
    python benchmarks/cpu.py --image-size 64 --per-class 3

1. One adaptation epoch (its iterations plus the evaluation pass) of ResNet-50 (random init) on
   a generated Office-31 folder (A2W, noise JPEGs, ``--image-size`` crops: reduced from 224 to
   keep CPU minutes) against the same epoch on its feature cache (``python -m ssot.features``).
   Goal: >= 20x.
2. One SSOT iteration (forward, g step, feature step) against one CE + entropy iteration (forward,
   weighted CE + lambda_Ent entropy, backward, step) on the same 32 + 32 batch: the cost of the
   OT part, for the digits CNN (16x16) and ResNet-50 (``--image-size``); medians of alternated
   iterations.
"""
from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: import the project and this folder's helpers
    sys.path[:0] = [str(Path(__file__).resolve().parents[1]), str(Path(__file__).resolve().parent)]

from _shared import alternated, write_jpegs  # noqa: E402


def ce_ent_step(trainer: Any, xs: Any, ys: Any, xt: Any) -> float:
    """The same iteration without OT: weighted CE on the source + lambda_Ent * target entropy."""
    import torch
    import torch.nn.functional as F

    from ssot import ot

    bs = xs.shape[0]
    _, logits = trainer.forward(torch.cat([xs, xt]))
    loss = (trainer.m[ys] * F.cross_entropy(logits[:bs], ys, reduction="none")).mean()
    loss = loss + trainer.config.lambda_ent * ot.entropy(torch.softmax(logits[bs:], dim=1))
    trainer.opt_fe.zero_grad(set_to_none=True)
    loss.backward()
    trainer.opt_fe.step()
    return loss.item()


def epoch_time(trainer: Any, repeats: int = 2) -> float:
    """Best-of-``repeats`` wall time of one adaptation epoch (with its evaluation)."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        trainer.adapt_epoch()
        best = min(best, time.perf_counter() - start)
    return best


def image_vs_features(image_size: int, per_class: int) -> dict[str, float]:
    from ssot.config import SSOTConfig
    from ssot.data.base import num_samples
    from ssot.features import build_feature_cache
    from ssot.trainer import Trainer

    with tempfile.TemporaryDirectory() as tmp:
        root = write_jpegs(Path(tmp) / "data", per_class=per_class, size=max(64, image_size * 2))
        cfg = SSOTConfig.for_task("A2W", data_root=str(root), pretrained=False, device="cpu", image_size=image_size,
                                  resize_size=image_size * 8 // 7, image_cache="off")  # the JPEG loader, as recorded
        start = time.perf_counter()
        build_feature_cache(cfg, Path(tmp) / "a2w.pt", progress=False)
        build = time.perf_counter() - start
        image = Trainer(cfg)
        feats = Trainer(cfg.replace(backbone="features", features_path=str(Path(tmp) / "a2w.pt")))
        assert image.iterations_per_epoch() == feats.iterations_per_epoch()
        out = {"image": epoch_time(image), "features": epoch_time(feats), "build": build,
               "iters": image.iterations_per_epoch(), "n_images": num_samples(image.task.source) + num_samples(image.task.target)}
    return out


def ssot_vs_ce(trainer: Any, batch: tuple, iters: int) -> tuple[float, float]:
    """Median seconds of an SSOT and of a CE + entropy iteration, timed alternately (a shared
    machine's load drifts: alternating exposes both to the same drift)."""
    xs, ys, xt = batch[:3]
    return alternated(lambda: trainer.step(xs, ys, xt), lambda: ce_ent_step(trainer, xs, ys, xt), iters, "cpu")


def main(argv: list[str] | None = None) -> int:
    from ssot import cli

    parser = cli.Parser(prog="python benchmarks/cpu.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--image-size", type=int, default=64, help="crop size of the ResNet-50 timings (paper: 224)")
    parser.add_argument("--per-class", type=int, default=3, help="generated images per class and domain")
    parser.add_argument("--iters", type=int, default=40, help="timed iterations of section 2 (digits; ResNet-50: a quarter)")
    args = parser.parse_args(argv)
    import torch
    from gpu import make_trainer

    from ssot.config import SSOTConfig
    from ssot.trainer import Trainer

    print(f"CPU, {torch.get_num_threads()} torch threads, torch {torch.__version__}", flush=True)
    r = image_vs_features(args.image_size, args.per_class)
    print(f"1. adaptation epoch, A2W generated ({r['n_images']} images, {r['iters']} iterations + evaluation), "
          f"ResNet-50 at {args.image_size}x{args.image_size}:")
    print(f"   images {r['image']:.2f} s | feature cache {r['features']:.3f} s | ratio {r['image'] / r['features']:.0f}x "
          f"(goal >= 20x); building the cache once: {r['build']:.1f} s", flush=True)

    digits = Trainer(SSOTConfig.for_task("digits", device="cpu"))
    source: Any = digits.task.source  # the digits task's sets are TensorDatasets
    target: Any = digits.task.target
    x, y = source.tensors
    xt = target.tensors[0]
    rows = [("digits CNN, 16x16", digits, (x[:32], y[:32], xt[:32]))]
    resnet, batch = make_trainer("cpu", "fp32", image_size=args.image_size)
    rows.append((f"ResNet-50, {args.image_size}x{args.image_size}", resnet, batch))
    print("2. one iteration on the same 32 + 32 batch: SSOT vs CE + entropy (no OT):")
    for name, trainer, b in rows:
        ssot, ce = ssot_vs_ce(trainer, b, args.iters if "digits" in name else max(3, args.iters // 4))
        print(f"   {name}: SSOT {1000 * ssot:.1f} ms | CE + entropy {1000 * ce:.1f} ms (medians) | "
              f"SSOT costs {ssot / ce:.2f}x (OT part {100 * (1 - ce / ssot):.0f} % of the iteration)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
