"""How far the members of a population drift from their independent runs, and why (by hand, not pytest).

    python -m ssot.features --task P2H --out caches/P2H-s0.pt
    python benchmarks/population_drift.py --cache caches/P2H-s0.pt --task P2H            # 16 random configs, seed 0
    python benchmarks/population_drift.py --cache caches/H2P-s0.pt --task H2P --workers 2
    python benchmarks/population_drift.py --cache caches/P2H-s0.pt --task P2H --device cuda   # batched products: drift

Trains ``--configs`` random configs of the default space (Optuna's random sampler, ``--seed``) as
one population (:class:`ssot.population.Population`, ``--workers`` processes) and each of them as
an independent run (:class:`ssot.trainer.Trainer`, from the same pretrained model), with the
task's schedule, and prints per member the largest difference over the epochs of target accuracy
and of the total loss, the epoch where they first differ by more than 1e-6, and the member's
last-epoch state (predicted classes, loss): drift grows where training is chaotic.

Then the cause, on one batch from the same start: the stacked forward (one GEMM of every member,
:func:`ssot.stacked.linear`) against each member's own ``nn.Linear``, the largest difference of
features and logits in units in the last place (float32 ulps), and after one whole step the
largest relative difference of each parameter.
"""
from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: import the project and this folder's helpers
    sys.path[:0] = [str(Path(__file__).resolve().parents[1]), str(Path(__file__).resolve().parent)]

from _shared import add_population_flags, load, machine  # noqa: E402
from population import random_configs  # noqa: E402


def drift(configs: list[Any], task: Any, workers: int) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Each member's largest differences from its independent run, and the pretrained state they share."""
    from ssot.population import Population
    from ssot.trainer import Trainer

    population = Population(configs, task, workers=workers)
    population.pretrain()
    pretrained = population.host.pretrained_state()
    records = population.fit()
    rows = []
    for cfg, record in zip(configs, records):
        run = Trainer(cfg, task)
        run.load_pretrained(pretrained)
        alone = run.fit()
        first, worst = None, {"target_acc": 0.0, "loss_total": 0.0}
        for mine, theirs in zip(record["epochs"], alone["epochs"]):
            for key in worst:
                gap = abs(mine[key] - theirs[key]) if math.isfinite(mine[key]) and math.isfinite(theirs[key]) else math.inf
                worst[key] = max(worst[key], gap)
                if first is None and gap > 1e-6:
                    first = mine["epoch"]
        last = alone["epochs"][-1] if alone["epochs"] else {}
        rows.append({"config": cfg, "first": first, **worst, "status": (record["status"], alone["status"]),
                     "acc": (record["epochs"][-1]["target_acc"] if record["epochs"] else None, last.get("target_acc")),
                     "classes": last.get("n_pred_classes"), "loss": last.get("loss_total")})
    return rows, pretrained


def one_step(configs: list[Any], task: Any, pretrained: dict[str, Any]) -> dict[str, Any]:
    """The cause: the stacked forward against the members' own layers, and one step's parameters
    (from the pretrained state of :func:`drift`: pretraining again would give the same)."""
    import torch

    from ssot.population import Population, member_states
    from ssot.trainer import Trainer

    population = Population(configs, task, workers=1)
    population.pretrain(lambda host: host.load_pretrained(pretrained))
    stack = population.stacks[0]
    src, tgt = population.host.epoch_batches(1)
    (xs, ys), (xt, ids) = next(src), next(tgt)
    x = torch.cat([xs, xt])
    with torch.no_grad():
        feats, logits = stack.forward_stack(x)
        own = [population.host.forward(x)]  # member 0's weights are the host's: the pretrained ones
    ulp = lambda a, b: float(((a - b).abs() / torch.finfo(torch.float32).eps / b.abs().clamp_min(1e-30)).max())  # noqa: E731
    out: dict[str, Any] = {"features_ulp": ulp(feats[0], own[0][0]), "logits_ulp": ulp(logits[0], own[0][1])}
    runs = [Trainer(cfg, task) for cfg in configs]
    for run in runs:
        run.load_pretrained(pretrained)
        run.step(xs, ys, xt, ids)
    population.step(xs, ys, xt, ids)
    states = member_states(stack.state())
    gaps = []
    for index, run in enumerate(runs):
        mine = states[index]["head"]
        theirs = [t.detach() for layer in [*[m for m in run.f.bottleneck if isinstance(m, torch.nn.Linear)], run.eta]
                  for t in (layer.weight, layer.bias)]
        gaps.append(max(float(((a - b).abs() / b.abs().clamp_min(1e-12)).max()) for a, b in zip(mine, theirs)))
    out["step_relative"] = gaps
    return out


def main(argv: list[str] | None = None) -> int:
    from ssot import cli

    parser = cli.Parser(prog="python benchmarks/population_drift.py", description=__doc__.split("\n\n")[0])
    add_population_flags(parser, configs=16)
    parser.add_argument("--seed", type=int, default=0, help="seed of the random configs (default 0)")
    parser.add_argument("--workers", type=int, default=1, help="the population's worker processes (default 1)")
    parser.add_argument("--epochs", type=int, help="adaptation epochs (default: the task's)")
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu", help="where both sides train (default cpu)")
    args = parser.parse_args(argv)
    import torch

    if args.device == "cuda" and not torch.cuda.is_available():
        print("--device cuda: no CUDA GPU here; nothing measured")
        return 0
    from ssot.config import SSOTConfig
    from ssot.data.features import load_feature_task

    torch.set_num_threads(1)
    changes: dict[str, Any] = {"backbone": "features", "features_path": str(args.cache), "device": args.device, "num_threads": 1}
    if args.epochs:
        changes["epochs"] = args.epochs
    base = SSOTConfig.for_task(args.task, **changes)
    task = load_feature_task(args.cache, args.task)
    configs = random_configs(base, args.configs, args.seed)
    print(machine(args.device), flush=True)
    print(f"{args.task}: {args.configs} random configs (seed {args.seed}), {base.epochs} epochs of "
          f"{base.iters_per_epoch or 'all'} iterations, population with {args.workers} worker(s) against independent runs")
    rows, pretrained = drift(configs, task, args.workers)
    for i, row in enumerate(rows):
        cfg = row["config"]
        print(f"  member {i:2d} (lambda_ot {cfg.lambda_ot:.3g}, lambda_ent {cfg.lambda_ent:.3g}, eps {cfg.eps:.3g}, width "
              f"{cfg.potential_width}): max |target_acc gap| {row['target_acc']:.2g}, max |loss_total gap| {row['loss_total']:.2g}, "
              f"first > 1e-6 at epoch {row['first']}; final acc {row['acc'][0]} / {row['acc'][1]}, status {row['status'][0]} / "
              f"{row['status'][1]}; the run's last epoch: {row['classes']} predicted classes, loss {row['loss']}")
    equal = sum(r["target_acc"] <= 1e-6 and r["loss_total"] <= 1e-6 for r in rows)
    print(f"  {equal} of {len(rows)} members within 1e-6 of their run at every epoch; largest target_acc gap "
          f"{max(r['target_acc'] for r in rows):.3g}, largest loss_total gap {max(r['loss_total'] for r in rows):.3g}")
    cause = one_step(configs, task, pretrained)
    print(f"the cause, one batch from the same start: stacked forward against member 0's own layers: features differ by up "
          f"to {cause['features_ulp']:.1f} ulp, logits by up to {cause['logits_ulp']:.1f} ulp; after one step, the largest "
          f"relative parameter difference per member: {', '.join(f'{g:.1e}' for g in cause['step_relative'])}")
    print(load())
    return 0


if __name__ == "__main__":
    sys.exit(main())
