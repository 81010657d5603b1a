"""DEV's batched Newton solve against the per-fit L-BFGS it replaced and against skada's DEV, on a population's features (by hand, not pytest).

    python -m ssot.features --task P2H --out caches/P2H-s0.pt
    python benchmarks/dev_solvers.py --cache caches/P2H-s0.pt --task P2H                 # 8 random configs, 3 epochs
    python benchmarks/dev_solvers.py --cache caches/P2H-s0.pt --task P2H --device cuda   # the batched solve on a GPU
    python benchmarks/dev_solvers.py --cache caches/P2H-s0.pt --task P2H --epochs 4 --skip-references --warm 4/1,8/2,10/2,12/2
                                                                   # the warm start's schedules only (no skada needed)
    python benchmarks/dev_solvers.py --cache caches/P2H-s0.pt --task P2H --epochs 4 --skip-references --warm 10/2 \
        --one-penalty 1/1,2/1,2/2,4/2                              # what DEV would cost with one penalty instead of three

Trains ``--configs`` random configs of the default space as one population for ``--epochs`` epochs
and keeps, for every member and epoch, what DEV reads: the held-out source features and losses
and the target features. On each of these problems it prints how far DEV's batched solve
(:func:`ssot.validators.domain_weights`, :data:`ssot.validators.DEV_STEPS`) lies from

- the optimum: the same solver with 40 Newton steps per penalty, every step with a fresh
  curvature (the schedule's error);
- the per-fit L-BFGS it replaced (``tests/fixtures/dev_lbfgs.py``, the code of 2026-11-28: one
  fit per fold and penalty, member by member, on the CPU): the weights and DEV;
- skada's ``DeepEmbeddedValidation`` (its own protocol: one 67/33 split of the source, a
  scikit-learn ``LogisticRegression()`` on the raw features, no cross-fitting) on the same
  features and losses, through its scorer: another estimate of the same risk, so a difference of
  values, and whether the two order the (member, epoch) problems alike (Spearman);

and the time of every member's DEV at once (one call, as the evaluation makes it) against the
L-BFGS reference member by member, timed alternately. The load average is printed beside it.

**One penalty** (``--one-penalty``, by hand: what a cheaper estimator would save, not what DEV
computes): on each warm-start problem, which of :data:`ssot.validators.DEV_L2` DEV chose (the
penalty whose fit alone, solved to the optimum, gives DEV's weights), then, for the penalty chosen
most often, each schedule's warm solve of that penalty alone: its gap to that penalty's optimum
(weights and DEV) and its time per member, beside the time of DEV's own warm solve (three
penalties, :data:`ssot.validators.DEV_WARM_STEPS`) on the same problems, member by member,
alternated.

**The warm start** (:data:`ssot.validators.DEV_WARM_STEPS`): from the second epoch on, the
evaluation solves every member's DEV from its classifiers of the epoch before
(:class:`ssot.validators.DevStart`). On each such problem (the member's features of epoch e and
its classifiers of epoch e - 1, as the population's evaluation carried them) it prints how far
each warm schedule of ``--warm`` lies from the optimum (40 fresh Newton steps per penalty from
zero) beside the cold schedule's gap, and its DEV's gap to the per-fit L-BFGS; then the time per
member of the cold and of the warm solve of the last epoch's members, timed alternately in one run.
"""
from __future__ import annotations

import sys
import warnings
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: import the project and this folder's helpers
    sys.path[:0] = [str(Path(__file__).resolve().parents[1]), str(Path(__file__).resolve().parent)]

from _shared import add_population_flags, alternated, device_name, load  # noqa: E402
from population import random_configs  # noqa: E402


def problems(configs: list[Any], task: Any) -> list[tuple[Any, Any, Any, Any]]:
    """Every member's DEV inputs at every epoch of their population: (source features, source
    losses, target features, the member's classifiers of the epoch before or ``None``), one member
    each, on the population's device (the evaluation's :func:`ssot.validators.domain_fit`, then
    :func:`ssot.validators.dev_risk` of its weights)."""
    from ssot import validators as V
    from ssot.population import Population

    kept: list[Any] = []
    fit, risk = V.domain_fit, V.dev_risk

    def spy_fit(feats_source: Any, feats_target: Any, *, start: Any = None, **kwargs: Any) -> Any:
        for p in range(feats_source.shape[0]):
            usable = start is not None and start.usable[p]
            kept.append([feats_source[p].detach().clone(), None, feats_target[p].detach().clone(),
                         start.classifiers[p].clone() if usable else None])
        return fit(feats_source, feats_target, start=start, **kwargs)

    def spy_risk(weights: Any, losses: Any) -> Any:
        for p in range(losses.shape[0]):
            kept[len(kept) - losses.shape[0] + p][1] = losses[p].detach().clone()
        return risk(weights, losses)

    V.domain_fit, V.dev_risk = spy_fit, spy_risk
    try:
        population = Population(configs, task, workers=1)
        population.pretrain()
        kept.clear()  # the host's source-only evaluation is no member's
        population.fit()
    finally:
        V.domain_fit, V.dev_risk = fit, risk
    return [tuple(k) for k in kept]


def warm_schedules(text: str) -> list[tuple[int, int]]:
    """``--warm`` ``4/1,2/1``: warm schedules ``(steps, fresh)``."""
    out = []
    for part in text.split(","):
        steps, fresh = (int(v) for v in part.split("/"))
        if not 1 <= fresh <= steps:
            raise ValueError(f"--warm {part!r}: STEPS/FRESH with 1 <= FRESH <= STEPS")
        out.append((steps, fresh))
    return out


def one_penalty(problems: list[Any], schedules: list[tuple[int, int]], rounds: int) -> None:
    """``--one-penalty`` (module docstring): the penalties DEV chose on ``problems`` (warm-start
    problems: features, losses, features, the classifiers of the epoch before), then each schedule
    of the most chosen penalty alone against its optimum, and its time beside DEV's warm solve."""
    import statistics
    import time

    import torch

    from ssot import validators as V

    tight = ((40, 40), (40, 40))
    order = sorted(V.DEV_L2, reverse=True)  # the classifiers' order (strongest first)
    chosen_counts = dict.fromkeys(order, 0)
    for feats_source, _, feats_target, _ in problems:
        full = V.domain_weights(feats_source, feats_target, steps=tight)
        for penalty in order:
            if torch.allclose(V.domain_weights(feats_source, feats_target, l2=(penalty,), steps=tight), full, rtol=1e-9, atol=0.0):
                chosen_counts[penalty] += 1
                break
    penalty = max(order, key=lambda p: (chosen_counts[p], -order.index(p)))
    stage = order.index(penalty)
    print(f"one penalty: DEV chose {', '.join(f'{p:g} in {n}' for p, n in chosen_counts.items())} of {len(problems)} warm-start "
          f"problems; {penalty:g} alone, warm-started from its classifiers of the epoch before (largest gap to its optimum; "
          f"time per member, median of {rounds} alternated rounds):", flush=True)
    optimum = [V.domain_weights(fs, ft, l2=(penalty,), steps=tight) for fs, _, ft, _ in problems]
    rows: dict[Any, list[float]] = {}
    for _ in range(rounds):
        for name in ["three penalties", *schedules]:
            spent = 0.0
            for fs, _, ft, start in problems:
                three = name == "three penalties"
                begin = V.DevStart(start[None] if three else start[None, stage:stage + 1], [True])
                l2: tuple[float, ...] = V.DEV_L2 if three else (penalty,)
                warm: tuple[int, int] = V.DEV_WARM_STEPS if three else name  # type: ignore[assignment]
                started = time.perf_counter()
                V.domain_fit(fs[None], ft[None], start=begin, l2=l2, warm_steps=warm)
                spent += time.perf_counter() - started
            rows.setdefault(name, []).append(spent / len(problems))
    for name in schedules:
        weights, risks = [], []
        for (fs, losses, ft, start), best in zip(problems, optimum):
            w = V.domain_fit(fs[None], ft[None], start=V.DevStart(start[None, stage:stage + 1], [True]), l2=(penalty,),
                             warm_steps=name).weights[0]
            weights.append(float(((w - best).abs() / best).max()))
            reference = float(V.dev_risk(best, losses))
            risks.append(abs(float(V.dev_risk(w, losses)) - reference) / abs(reference))
        print(f"  {penalty:g} alone, warm {name}: weights {max(weights):.1e}, DEV {max(risks):.1e} from its optimum; "
              f"{1e3 * statistics.median(rows[name]):.1f} ms a member", flush=True)
    print(f"  DEV's warm solve (three penalties, {V.DEV_WARM_STEPS}): {1e3 * statistics.median(rows['three penalties']):.1f} ms a member; "
          f"{load()}", flush=True)


def skada_dev(feats_source: Any, losses: Any, feats_target: Any) -> float:
    """skada's DEV of one problem through its scorer: an estimator whose predicted probabilities
    give each source sample its loss (two classes, every source label 0, ``p_0 = exp(-loss)``)."""
    import numpy as np
    from skada import make_da_pipeline
    from skada.metrics import DeepEmbeddedValidation
    from sklearn.base import BaseEstimator, ClassifierMixin

    xs, xt, loss = feats_source.double().cpu().numpy(), feats_target.double().cpu().numpy(), losses.double().cpu().numpy()
    by_row = {row.tobytes(): value for row, value in zip(xs, loss)}

    class Lookup(ClassifierMixin, BaseEstimator):
        def fit(self, X: Any, y: Any = None, **_: Any) -> Lookup:
            self.classes_ = np.array([0, 1])
            return self

        def predict_proba(self, X: Any, **_: Any) -> Any:
            p0 = np.exp(-np.array([by_row.get(row.tobytes(), 0.0) for row in X]))
            return np.stack([p0, 1 - p0], 1)

    def column_loss(labels: Any, probs: Any) -> Any:  # skada 0.6's own loss returns (n,), which its (n, 1) weights broadcast into (n, n)
        return -np.log(np.clip(probs[np.arange(len(labels)), labels], 1e-15, 1 - 1e-15))[:, None]

    X = np.concatenate([xs, xt])
    y = np.concatenate([np.zeros(len(xs), dtype=int), -np.ones(len(xt), dtype=int)])
    domain = np.concatenate([np.ones(len(xs), dtype=int), -2 * np.ones(len(xt), dtype=int)])
    estimator = make_da_pipeline(Lookup()).fit(X, y, sample_domain=domain)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scikit-learn's convergence warnings on raw features
        return -float(DeepEmbeddedValidation(random_state=0, loss_func=column_loss)(estimator, X, y, sample_domain=domain))


def main(argv: list[str] | None = None) -> int:
    from ssot import cli

    parser = cli.Parser(prog="python benchmarks/dev_solvers.py", description=__doc__.split("\n\n")[0])
    add_population_flags(parser, configs=8)
    parser.add_argument("--epochs", type=int, default=3, help="adaptation epochs (default 3)")
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu", help="where the population trains and DEV is solved")
    parser.add_argument("--rounds", type=int, default=3, help="timed rounds, alternated (default 3)")
    parser.add_argument("--warm", default="2/1,3/1,4/1,4/2,6/2",
                        help="warm schedules STEPS/FRESH per penalty to measure, comma-separated (default 2/1,3/1,4/1,4/2,6/2)")
    parser.add_argument("--skip-references", action="store_true", help="skip the cold schedule's L-BFGS and skada comparisons")
    parser.add_argument("--one-penalty", default="", metavar="SCHEDULES",
                        help="also measure warm schedules STEPS/FRESH of one penalty alone (the one DEV chose most often), "
                             "comma-separated: what DEV would cost without its choice of penalty (default: not measured)")
    args = parser.parse_args(argv)
    schedules = warm_schedules(args.warm)
    alone = warm_schedules(args.one_penalty) if args.one_penalty else []
    import numpy as np
    import torch
    from scipy import stats

    if args.device == "cuda" and not torch.cuda.is_available():
        print("--device cuda: no CUDA GPU here; nothing measured")
        return 0
    from ssot import validators as V
    from ssot.config import SSOTConfig
    from ssot.data.features import load_feature_task
    from tests.fixtures import dev_lbfgs

    torch.set_num_threads(1)
    base = SSOTConfig.for_task(args.task, backbone="features", features_path=str(args.cache), device=args.device, num_threads=1,
                               epochs=args.epochs)
    task = load_feature_task(args.cache, args.task)
    print(f"device: {device_name(args.device)}; torch {torch.__version__}; {load()}", flush=True)
    kept = problems(random_configs(base, args.configs), task)
    fs, ft = kept[0][0], kept[0][2]
    print(f"{args.task}: {args.configs} random configs x {args.epochs} epochs = {len(kept)} DEV problems of {fs.shape[0]} source and "
          f"{ft.shape[0]} target features of {fs.shape[1]} dims; DEV_STEPS {V.DEV_STEPS}", flush=True)
    rows: dict[str, list[float]] = {k: [] for k in ("optimum", "lbfgs_w", "lbfgs_dev", "skada_dev", "ours", "lbfgs", "skada")}
    if args.skip_references:
        print("  (--skip-references: the cold schedule's comparisons with the optimum, L-BFGS and skada skipped)", flush=True)
    else:
        for feats_source, losses, feats_target, _ in kept:
            ours = V.domain_weights(feats_source, feats_target)
            tight = V.domain_weights(feats_source, feats_target, steps=((40, 40), (40, 40)))
            theirs = dev_lbfgs.domain_weights(feats_source.cpu(), feats_target.cpu()).to(ours.device)
            dev_ours, dev_theirs = float(V.dev_risk(ours, losses)), float(V.dev_risk(theirs, losses))
            dev_skada = skada_dev(feats_source, losses, feats_target)
            rows["optimum"].append(float(((ours - tight).abs() / tight).max()))
            rows["lbfgs_w"].append(float(((ours - theirs).abs() / theirs).max()))
            rows["lbfgs_dev"].append(abs(dev_ours - dev_theirs) / abs(dev_theirs))
            rows["skada_dev"].append(abs(dev_ours - dev_skada) / abs(dev_skada))
            rows["ours"].append(dev_ours); rows["lbfgs"].append(dev_theirs); rows["skada"].append(dev_skada)
        worst = {k: max(v) for k, v in rows.items()}
        median = {k: float(np.median(v)) for k, v in rows.items()}
        print(f"  the schedule's error (largest relative weight gap to 40 fresh Newton steps per penalty): max {worst['optimum']:.1e}, "
              f"median {median['optimum']:.1e}")
        print(f"  against the per-fit L-BFGS: weights max {worst['lbfgs_w']:.1e} (median {median['lbfgs_w']:.1e}) relative; "
              f"DEV max {worst['lbfgs_dev']:.1e} (median {median['lbfgs_dev']:.1e}); Spearman over the problems "
              f"{stats.spearmanr(rows['ours'], rows['lbfgs'])[0]:.4f}")
        print(f"  against skada's DEV (its own protocol): DEV max {worst['skada_dev']:.2f} (median {median['skada_dev']:.2f}) relative; "
              f"Spearman over the problems {stats.spearmanr(rows['ours'], rows['skada'])[0]:.3f}", flush=True)
    warm_problems = [k for k in kept if k[3] is not None]
    print(f"warm starts: {len(warm_problems)} problems (a member's features of epoch e, its classifiers of epoch e - 1); "
          f"the largest relative weight gap to 40 fresh Newton steps per penalty from zero, max (median); DEV's gap to the per-fit L-BFGS", flush=True)
    gaps: dict[Any, list[float]] = {s: [] for s in ["cold", *schedules]}
    dev_gaps: dict[Any, list[float]] = {s: [] for s in ["cold", *schedules]}
    for feats_source, losses, feats_target, start in warm_problems:
        tight = V.domain_weights(feats_source, feats_target, steps=((40, 40), (40, 40)))
        lbfgs = float(V.dev_risk(dev_lbfgs.domain_weights(feats_source.cpu(), feats_target.cpu()).to(tight.device), losses))
        for schedule in gaps:
            begin = None if schedule == "cold" else V.DevStart(start[None], [True])
            w = V.domain_fit(feats_source[None], feats_target[None], start=begin,
                             warm_steps=V.DEV_WARM_STEPS if schedule == "cold" else schedule).weights[0]
            gaps[schedule].append(float(((w - tight).abs() / tight).max()))
            dev_gaps[schedule].append(abs(float(V.dev_risk(w, losses)) - lbfgs) / abs(lbfgs))
    for schedule in gaps:
        name = f"cold {V.DEV_STEPS}" if schedule == "cold" else f"warm {schedule}" + (" (DEV_WARM_STEPS)" if schedule == V.DEV_WARM_STEPS else "")
        middle = float(np.median(gaps[schedule])) if gaps[schedule] else float("nan")
        print(f"  {name:32s} weights {max(gaps[schedule], default=float('nan')):.1e} ({middle:.1e}); "
              f"DEV against L-BFGS {max(dev_gaps[schedule], default=float('nan')):.1e}", flush=True)
    if alone:
        one_penalty(warm_problems, alone, args.rounds)
    members = args.configs
    last = kept[-members:] if len(kept) >= members else kept
    stack = [torch.stack([k[i] for k in last]) for i in range(3)]
    if all(k[3] is not None for k in last):
        starts = V.DevStart(torch.stack([k[3] for k in last]), [True] * len(last))
        sync_ = torch.cuda.synchronize if args.device == "cuda" else (lambda: None)

        def cold() -> None:
            V.domain_fit(stack[0], stack[2])
            sync_()

        def warm() -> None:
            V.domain_fit(stack[0], stack[2], start=starts)
            sync_()

        cold_s, warm_s = alternated(cold, warm, args.rounds, args.device)
        print(f"  time of {len(last)} members' DEV classifiers: cold {cold_s:.3f} s ({1e3 * cold_s / len(last):.1f} ms a member), "
              f"warm {V.DEV_WARM_STEPS} {warm_s:.3f} s ({1e3 * warm_s / len(last):.1f} ms a member): {cold_s / warm_s:.2f}x; {load()}", flush=True)
    sync = torch.cuda.synchronize if args.device == "cuda" else (lambda: None)

    def batched() -> None:
        V.dev(*stack)
        sync()

    def reference() -> None:
        for feats_source, losses, feats_target, _ in last:
            float(V.dev_risk(dev_lbfgs.domain_weights(feats_source.cpu(), feats_target.cpu()), losses.cpu()))

    reference_s, batched_s = alternated(reference, batched, args.rounds, args.device)
    print(f"  time of {len(last)} members' DEV: batched {batched_s:.3f} s ({1e3 * batched_s / len(last):.1f} ms a member), the per-fit "
          f"L-BFGS member by member {reference_s:.3f} s ({1e3 * reference_s / len(last):.1f} ms a member): "
          f"{reference_s / batched_s:.2f}x; {load()}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
