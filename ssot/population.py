r"""Populations: P configs of one task trained at once, on the same mini-batches, on a feature cache.

A screen on a feature cache (the ``features`` backbone) trains, per config, a bottleneck, a
classifier and a potential: small networks whose per-trial cost is mostly overhead (a process,
evaluation passes, checkpoints). A :class:`Population` trains P such configs as one stack, with
the one SSOT iteration and epoch loop of :mod:`ssot.method` (the same a run of one config uses):

- **same data, same start.** The members share the task, the seed and every config field but
  :data:`MEMBER_FIELDS` (``lambda_ot``, ``lambda_ent``, ``eps``, ``potential_width``, ``lr``,
  ``lr_g``). One host :class:`ssot.trainer.Trainer` (member 0's config) pretrains once
  (:meth:`ssot.trainer.Trainer.pretrain`, or the shared pretrained model of a search) and draws
  the batches of every epoch (:meth:`ssot.trainer.Trainer.epoch_batches`); every member starts
  adaptation from its pretrained bottleneck and classifier, and from the potential an independent
  run of its config initialises (seed, then :func:`ssot.models.build_models`). So each member
  reproduces the independent run of its config (``tests/ssot/test_population.py``), up to the
  summation order of stacked products (docs/screening.md says how far and why).
- **stacked networks** (:mod:`ssot.stacked`): parameters are tensors ``[P, ...]``, a linear layer
  one (batched) GEMM of every member, the potentials one stack per width, one backward for the
  members' summed losses (their parameters are disjoint), :class:`ssot.stacked.StackedAdam` with
  one learning rate per member. The OT terms are :mod:`ssot.ot`'s functions on stacks, with one
  ``eps`` per member.
- **stacked evaluation** (:func:`ssot.evaluation.evaluate`): each evaluation batch goes once
  through every member; then every member's target accuracy, validators (DEV's domain
  classifiers: one batched solve, warm-started from each member's own classifiers of its
  previous epoch, ``Stack.dev_start``), ``p_t`` and the class weights ``m`` of the next epoch are
  tensors ``[P, ...]``, read on the host once per epoch: the record fields of an independent run
  (the same functions: a run is a stack of one).
- **ASHA inside.** At each rung (:func:`ssot.results.trials.asha_rungs`, the rungs of a search's
  ASHA) the running members are ranked by the search's metric and the top ``ceil(n / rf)`` go on
  (ties to the lower member index, a missing value ranks last); the others end as
  ``early-stopped`` at that rung and leave the stack (parameters and optimiser state compacted).
- **divergence**, the rule of a run (:mod:`ssot.method`): a member steps whatever its loss; the
  check every :data:`ssot.method.CHECK_EVERY` iterations ends a member whose loss sums are not
  finite as ``diverged``, with the reason an independent run records (``non-finite loss_total
  (inf) at epoch E, within iterations 1-25``), and it leaves the stack; the others go on (their
  parameters never see its values).

Only the ``features`` backbone, the ``net`` solver, fp32 and ``eps > 0`` are stacked; other configs
are refused in one line, except in a population of one: a single config of any backbone, solver
and precision is trained by its host :class:`ssot.trainer.Trainer` itself (``Population([config])``
is exactly ``Trainer(config).fit()``), so that every trial of a search has one shape. The
population checkpoints exactly at epoch boundaries (:meth:`Population.state_dict`).
"""
from __future__ import annotations

import contextlib
import copy
import math
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor, nn

from ssot import evaluation, method, shards
from ssot import validators as V
from ssot.config import SSOTConfig
from ssot.data import TaskData, build_task
from ssot.errors import ConfigError, DivergedError
from ssot.models import build_models
from ssot.results.metrics import metric as metric_spec
from ssot.results.trials import COMPLETED, DIVERGED, EARLY_STOPPED, RUNNING
from ssot.solvers import NetSolver
from ssot.stacked import Head, Potentials, StackedAdam
from ssot.trainer import Trainer, dev_due, resolve_device, seed_everything

#: The config fields in which the members of one population may differ.
MEMBER_FIELDS: tuple[str, ...] = ("lambda_ot", "lambda_ent", "eps", "potential_width", "lr", "lr_g")

PretrainFn = Callable[[Trainer], None]
#: The per-member values of a stack, kept beside its networks (compacted with them).
STACKED_VALUES = ("lambda_ot", "lambda_ent", "eps", "p_t", "m")


def check_members(configs: Sequence[SSOTConfig]) -> None:
    """Refuse, in one line, configs that cannot be trained as one population. A population of one
    accepts any config (it is the run itself, :class:`ssot.trainer.Trainer`)."""
    if not configs:
        raise ConfigError("A population needs at least one config. Got none.")
    if len(configs) == 1:
        return
    first = configs[0]
    if first.backbone != "features":
        raise ConfigError(f"A population trains configs on a feature cache (backbone 'features'). Got backbone {first.backbone!r}: "
                          f"build a cache with `python -m ssot.features --task {first.task} --out CACHE.pt` and pass --features CACHE.pt.")
    if first.ot_solver != "net":
        raise ConfigError(f"A population stacks the potential network (ot_solver 'net'). Got {first.ot_solver!r}: "
                          "train other solvers one run at a time.")
    if first.precision != "fp32":
        raise ConfigError(f"A population trains in fp32. Got precision {first.precision!r}: use --precision fp32.")
    shared = {k: v for k, v in first.to_dict().items() if k not in MEMBER_FIELDS}
    for i, cfg in enumerate(configs):
        other = {k: v for k, v in cfg.to_dict().items() if k not in MEMBER_FIELDS}
        differ = sorted(k for k in shared if shared[k] != other[k])
        if differ:
            raise ConfigError(f"The members of a population may differ only in {', '.join(MEMBER_FIELDS)}; member {i} also "
                              f"differs in {', '.join(differ)}. Run those configs as separate populations.")
        if not cfg.eps > 0:
            raise ConfigError(f"The 'eps' parameter of a population member must be a float in (0, inf). Got {cfg.eps!r} "
                              f"(member {i}) instead: train eps = 0 one run at a time.")


@dataclass
class Member:
    """One config of a population and its run record (the fields of an independent run's record;
    ``status`` one of ``running``, ``completed``, ``early-stopped``, ``diverged``)."""

    index: int
    config: SSOTConfig
    record: dict[str, Any]

    @property
    def status(self) -> str:
        return str(self.record["status"])

    @property
    def epochs(self) -> list[dict[str, Any]]:
        return self.record["epochs"]


class Stack:
    """Members of a population stacked in one process: the :class:`ssot.method.Members` of
    :func:`ssot.method.step` and :func:`ssot.method.train_epoch` (P members on the shared batches
    of ``host``), their evaluation, their compaction, their states one member at a time.

    Parameters
    ----------
    host : the trainer whose data, batches and evaluation sets the members share.
    indices : the members' indices in the population, in stack order.
    configs : their configs.
    states : their states (:meth:`states`; :func:`initial_state` for a member that starts).
    """

    def __init__(self, host: Trainer, indices: Sequence[int], configs: Sequence[SSOTConfig], states: Sequence[dict[str, Any]]):
        self.host, self.config, self.task, self.device = host, host.config, host.task, host.device
        self.indices, self.configs = list(indices), list(configs)
        dev, n = self.device, len(self.indices)
        self.head = Head([torch.stack([s["head"][i] for s in states]).to(dev).requires_grad_(True)
                          for i in range(len(states[0]["head"]))])
        widths = [c.potential_width for c in self.configs]
        groups = {w: [torch.stack([s["g"][i] for s, v in zip(states, widths) if v == w]).to(dev).requires_grad_(True)
                      for i in range(4)] for w in sorted(set(widths))}
        potentials = Potentials(groups, torch.tensor(widths, dtype=torch.long, device=dev))
        values = {name: torch.tensor([getattr(c, name) for c in self.configs], device=dev) for name in ("lambda_ot", "lambda_ent", "eps")}
        self.lambda_ot, self.lambda_ent, self.eps = values["lambda_ot"], values["lambda_ent"], values["eps"]
        self.p_t = torch.stack([s["p_t"] for s in states]).to(dev)
        self.m = torch.stack([s["m"] for s in states]).to(dev)
        devs = [s["dev"] for s in states if s.get("dev") is not None]  # DEV's classifiers of the last epoch: the next one's start
        self.dev_start = (V.DevStart(torch.stack(devs).to(dev), [bool(s["dev_usable"]) for s in states])
                          if len(devs) == n and len({tuple(d.shape) for d in devs}) == 1 else None)  # none before the first epoch
        lr, lr_g = (torch.tensor([getattr(c, k) for c in self.configs], dtype=torch.float64) for k in ("lr", "lr_g"))
        self.opt_fe = StackedAdam(self.head.params, [lr] * len(self.head.params), weight_decay=self.config.weight_decay)
        self.opt_fe.load_state_dict(self._adam_state(states, "head", [lr] * len(self.head.params)))
        rows = {w: [p for p in range(n) if widths[p] == w] for w in groups}
        self.opt_g = StackedAdam(potentials.parameters(), [lr_g[rows[w]] for w in groups for _ in range(4)])
        self.opt_g.load_state_dict(self._adam_state(states, "g", self.opt_g.lrs, rows))
        self.solver = NetSolver(potentials, self.opt_g, self.eps, self.config.g_steps)
        self.ended: dict[int, str] = {}  # member index -> divergence reason, since the last epoch began

    @staticmethod
    def _adam_state(states: Sequence[dict[str, Any]], part: str, lrs: list[Tensor],
                    rows: dict[int, list[int]] | None = None) -> dict[str, Any]:
        """A :class:`StackedAdam` state stacked from the members' (``rows``: the width groups' members)."""
        groups = [(rows[w], 4) for w in rows] if rows else [(list(range(len(states))), len(states[0][part]))]
        out: dict[str, Any] = {"lrs": lrs}
        for key in ("exp_avg", "exp_avg_sq"):
            out[key] = [torch.stack([states[p][f"{part}_adam"][key][i] for p in members]) for members, count in groups for i in range(count)]
        steps = {s[f"{part}_adam"]["steps"] for s in states}
        assert len(steps) == 1, "the members of a stack have taken the same steps"
        out["steps"] = steps.pop()
        return out

    def state(self) -> dict[str, Any]:
        """The stack's state as it is (its tensors detached, not copied) and its members' indices:
        what a checkpoint holds; :func:`member_states` splits it into the members' states that a
        stack of any composition is built from."""
        return {"indices": list(self.indices), "widths": [c.potential_width for c in self.configs],
                "head": [t.detach() for t in self.head.params], "g": {w: [t.detach() for t in ps] for w, ps in self.potentials.groups.items()},
                **{f"{part}_adam": {"exp_avg": opt.exp_avg, "exp_avg_sq": opt.exp_avg_sq, "steps": opt.steps}
                   for part, opt in (("head", self.opt_fe), ("g", self.opt_g))},
                "p_t": self.p_t, "m": self.m,
                "dev": None if self.dev_start is None else self.dev_start.classifiers.detach(),
                "dev_usable": None if self.dev_start is None else list(self.dev_start.usable)}

    # ------------------------------------------------------------------ ssot.method.Members
    @property
    def potentials(self) -> Potentials:
        return self.solver.g

    @property
    def class_weights(self) -> Tensor:
        return self.m

    def forward_stack(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """Every member's features ``[P, n, d]`` and logits ``[P, n, K]`` of the shared inputs ``x``."""
        return self.head(x)

    @contextlib.contextmanager
    def evaluating(self) -> Iterator[None]:
        yield  # stacked linear layers and ReLUs: nothing differs in evaluation

    def eval_batches(self, ds: Any) -> Iterator[tuple[Tensor, Tensor]]:
        return self.host.eval_batches(ds)

    def step(self, xs: Tensor, ys: Tensor, xt: Tensor, ids: Tensor | None = None) -> Tensor:
        """One alternating iteration of every member (:func:`ssot.method.step`); returns the losses
        ``[P, len(LOSSES)]`` (columns :data:`ssot.method.LOSSES`)."""
        return method.step(self, xs, ys, xt, ids)

    def diverged(self, reasons: dict[int, str]) -> None:
        """The members at these stack positions diverged: they leave the stack."""
        self.ended.update({self.indices[p]: reason for p, reason in reasons.items()})
        self.keep([index for p, index in enumerate(self.indices) if p not in reasons])

    def _set_class_weights(self, p_t: Tensor) -> None:
        self.p_t, self.m = p_t, method.class_weights(self.config, p_t, self.host.p_s)

    def _refresh_class_weights(self) -> None:
        """``pt_refresh``: every member's ``p_t`` and ``m`` from a pass over the target set."""
        self._set_class_weights(evaluation.collect_stack(self, self.task.target_eval).probs.mean(1))

    # ------------------------------------------------------------------ an epoch
    def adapt_epoch(self, epoch: int) -> dict[int, dict[str, Any]]:
        """Adaptation epoch ``epoch`` of every member (:func:`ssot.method.train_epoch`) and their
        evaluation (:func:`ssot.evaluation.evaluate`). Returns, by member index, ``{"epoch": metrics,
        "target_pred": predictions}`` or ``{"diverged": reason}``, and the seconds of both phases
        under ``"timing"``."""
        self.ended = {}
        start = time.perf_counter()
        src, tgt = self.host.epoch_batches(epoch)
        n_iter = self.host.iterations_per_epoch()
        losses = method.train_epoch(self, zip(src, tgt), range(n_iter), n_iter, epoch, refresh=self._refresh_class_weights)
        train_s = time.perf_counter() - start
        out: dict[int, dict[str, Any]] = {index: {"diverged": reason} for index, reason in self.ended.items()}
        if self.indices:
            found = evaluation.evaluate(self, self.host.source_eval_subset, self.dev_start, dev=dev_due(epoch, self.config.dev_every, self.config.epochs))
            self._set_class_weights(found.p_t)
            for p, (index, (metrics, pred)) in enumerate(zip(self.indices, found.read(self.m))):  # one host read
                out[index] = {"epoch": {"epoch": epoch, **losses[p], **metrics}, "target_pred": pred}
            self.dev_start = found.dev_start
        return {**out, "timing": {"train_s": train_s, "eval_s": time.perf_counter() - start - train_s}}  # type: ignore[dict-item]

    def keep(self, indices: Sequence[int]) -> None:
        """Keep the members ``indices`` (in stack order): networks, optimiser states, per-member values."""
        positions = [p for p, index in enumerate(self.indices) if index in set(indices)]
        if positions == list(range(len(self.indices))):
            return
        index = torch.tensor(positions, dtype=torch.long, device=self.device)
        self.head.select(index)
        self.opt_fe.select(self.head.params, [index] * len(self.head.params))
        rows = self.potentials.select(index)
        self.opt_g.select(self.potentials.parameters(), rows)
        for name in STACKED_VALUES:
            setattr(self, name, getattr(self, name)[index])
        if self.dev_start is not None:
            self.dev_start = self.dev_start.rows(positions)
        self.solver.eps = self.eps
        self.indices = [self.indices[p] for p in positions]
        self.configs = [self.configs[p] for p in positions]


def member_states(state: dict[str, Any]) -> dict[int, dict[str, Any]]:
    """The states of the members of a stack's :meth:`Stack.state`, by member index (rows of its tensors)."""
    widths, groups = state["widths"], list(state["g"])
    out = {}
    for p, index in enumerate(state["indices"]):
        w = widths[p]
        row, k = widths[:p].count(w), groups.index(w)
        out[index] = {"head": [t[p] for t in state["head"]], "g": [t[row] for t in state["g"][w]],
                      "head_adam": {**{key: [t[p] for t in state["head_adam"][key]] for key in ("exp_avg", "exp_avg_sq")},
                                    "steps": state["head_adam"]["steps"]},
                      "g_adam": {**{key: [state["g_adam"][key][4 * k + i][row] for i in range(4)] for key in ("exp_avg", "exp_avg_sq")},
                                 "steps": state["g_adam"]["steps"]},
                      "p_t": state["p_t"][p], "m": state["m"][p],
                      "dev": None if state.get("dev") is None else state["dev"][p],
                      "dev_usable": None if state.get("dev_usable") is None else state["dev_usable"][p]}
    return out


def initial_state(config: SSOTConfig, host: Trainer) -> dict[str, Any]:
    """The state a member starts adaptation from: the host's pretrained bottleneck and classifier,
    the potential an independent run of its config initialises (seed, then
    :func:`ssot.models.build_models`), zero Adam moments, the host's ``p_t`` and ``m``."""
    layers = [m for m in host.f.bottleneck if isinstance(m, nn.Linear)] + [host.eta]
    head = [t.detach().cpu().clone() for layer in layers for t in (layer.weight, layer.bias)]
    seed_everything(config.seed)
    net = build_models(config, host.task.num_classes, host.task.input_shape[0])[2].net
    g = [t.detach().cpu().clone() for layer in (net[0], net[2]) if isinstance(layer, nn.Linear) for t in (layer.weight, layer.bias)]
    return {"head": head, "head_adam": _zero_moments(head), "g": g, "g_adam": _zero_moments(g),
            "p_t": host.p_t.cpu().clone(), "m": host.m.cpu().clone()}


def _zero_moments(params: list[Tensor]) -> dict[str, Any]:
    return {"exp_avg": [torch.zeros_like(t) for t in params], "exp_avg_sq": [torch.zeros_like(t) for t in params], "steps": 0}


class Population:
    """P configs of one task trained at once (module docstring).

    Parameters
    ----------
    configs : the members' configs (:func:`check_members`).
    task : the data (the feature cache); built from ``configs[0]`` when omitted.
    rungs : epochs at which the running members are ranked and the top ``ceil(n / reduction_factor)``
        go on (:func:`ssot.results.trials.asha_rungs`); ``()``: no early stopping.
    reduction_factor : ASHA's reduction factor.
    metric : the metric members are ranked by at a rung (:mod:`ssot.results.metrics`).
    workers : processes that train the members on a CPU, each a stack of about ``P / workers``
        members with one torch thread (:mod:`ssot.shards`); default: the config's ``num_threads``
        (the trial's CPUs), at most one per member; always 1 on a GPU.
    """

    def __init__(self, configs: Sequence[SSOTConfig], task: TaskData | None = None, *, rungs: Sequence[int] = (),
                 reduction_factor: int = 3, metric: str = "target_acc", workers: int | None = None):
        check_members(configs)
        self.configs = list(configs)
        self.rungs, self.reduction_factor = tuple(int(r) for r in rungs), int(reduction_factor)
        self.metric = metric_spec(metric)
        if self.metric.name == "dev" and self.rungs and self.configs[0].dev_every > 1:
            raise ConfigError(f"The members are ranked by DEV at their rungs, but dev_every={self.configs[0].dev_every} records it "
                              "only every few epochs: rank them by another metric, or set dev_every=1.")
        task = task if task is not None else build_task(self.configs[0])
        #: A population of one is its host trainer's run (no stack): any config a Trainer accepts.
        self.single = len(self.configs) == 1
        first = self.configs[0]
        self.workers = 1 if self.single else shards.workers_for(first, resolve_device(first.device), len(self.configs), workers)
        # the workers first: they import torch and build their host while this process builds its own and pretrains
        self.remote = [RemoteStack(task, first) for _ in range(self.workers - 1)]
        self.host = Trainer(first, task)
        if self.workers > 1:
            torch.set_num_threads(1)  # this process trains one of the stacks
        self.config, self.task, self.device = self.host.config, self.host.task, self.host.device
        self.members = [Member(i, cfg, {}) for i, cfg in enumerate(self.configs)]
        self.alive: list[int] = []  # member indices, in stack order
        self.epoch = 0
        self.pretrained = False
        self.timing = {"pretrain_s": 0.0, "train_s": 0.0, "eval_s": 0.0}
        self.stacks: list[Any] = []  # the Stack of this process first, then the workers' (RemoteStack)

    # ------------------------------------------------------------------ set-up
    @property
    def running(self) -> list[Member]:
        return [self.members[i] for i in self.alive]

    def pretrain(self, pretrain: PretrainFn | None = None) -> None:
        """Pretrain the host once (``pretrain(host)`` instead, e.g. a search's shared pretrained
        model), then stack every member's starting weights. Divergence in pretraining ends
        every member as ``diverged``."""
        start = time.perf_counter()
        try:
            (pretrain or Trainer.pretrain)(self.host)
        except DivergedError as exc:
            for member in self.members:
                member.record = {**self._record_base(member.config), "status": DIVERGED, "reason": exc.reason}
            self.pretrained = True
            self.close()
            return
        finally:
            self.timing["pretrain_s"] += time.perf_counter() - start
        self.pretrained = True
        self.alive = [m.index for m in self.members]
        if self.single:  # the member's record is the host's own run record
            self.members[0].record = self.host.record
            return
        for member in self.members:
            member.record = self._record_base(member.config)
        self._distribute({m.index: initial_state(m.config, self.host) for m in self.members})

    def _record_base(self, config: SSOTConfig) -> dict[str, Any]:
        base = {k: copy.deepcopy(v) for k, v in self.host.record.items() if k not in ("config", "epochs", "target_pred")}
        return {**base, "config": config.to_dict(), "epochs": [], "status": RUNNING, "reason": None}

    def _distribute(self, states: dict[int, dict[str, Any]]) -> None:
        """Stack the running members from their states, in contiguous groups: the first in this
        process, the others in the worker processes (as many as have members)."""
        widths = {i: self.configs[i].potential_width for i in self.alive}
        # a member's cost: its bottleneck, classifier and validators, and its potential (a width of 1024 about doubles a step)
        groups = shards.split(self.alive, 1 + len(self.remote), cost=lambda i: 1.0 + widths[i] / 1024)
        self.stacks = []
        for k, group in enumerate(groups):
            target = self.remote[k - 1] if k else None
            if target is None:
                self.stacks.append(Stack(self.host, group, [self.configs[i] for i in group], [states[i] for i in group]))
            else:
                target.build(group, [self.configs[i].to_dict() for i in group], [states[i] for i in group])
                self.stacks.append(target)

    def _states(self) -> dict[int, dict[str, Any]]:
        """Every running member's state, by member index."""
        return {i: s for stack in self.stacks for i, s in member_states(stack.state()).items() if i in set(self.alive)}

    def step(self, xs: Tensor, ys: Tensor, xt: Tensor, ids: Tensor | None = None) -> Tensor:
        """One alternating iteration of the members stacked in this process (every member with
        one worker; a population of one: its run's, the host trainer's :func:`ssot.method.step`);
        the losses ``[P, len(LOSSES)]``."""
        if self.single:
            return method.step(self.host, xs, ys, xt, ids)
        return self.stacks[0].step(xs, ys, xt, ids)

    # ------------------------------------------------------------------ the members' ends
    def _end(self, index: int, status: str, reason: str | None = None) -> None:
        record = self.members[index].record
        record["status"], record["reason"] = status, reason

    def _rank_value(self, member: Member) -> float:
        value = member.epochs[-1].get(self.metric.name)
        if value is None or not math.isfinite(value):
            return math.inf
        return -value if self.metric.direction == "max" else value

    def _rung(self) -> list[int]:
        """At a rung: the members that go on (the top ``ceil(n / rf)``); the others end early-stopped."""
        ranked = sorted(self.alive, key=lambda i: (self._rank_value(self.members[i]), i))
        keep = set(ranked[:max(1, math.ceil(len(ranked) / self.reduction_factor))])
        for index in set(ranked) - keep:
            self._end(index, EARLY_STOPPED)
        return [i for i in self.alive if i in keep]

    # ------------------------------------------------------------------ epochs
    def adapt_epoch(self) -> list[Member]:
        """One adaptation epoch of every running member, each stack in its process at the same
        time (:meth:`Stack.adapt_epoch`), then the ends of this epoch (completed, early-stopped at
        a rung, diverged); returns the members that recorded this epoch or ended in it."""
        if not self.pretrained:
            raise RuntimeError("adapt_epoch() before pretrain()")
        if self.single:
            return self._adapt_single()
        self.epoch += 1
        start = time.perf_counter()
        touched = list(self.alive)
        for stack in self.stacks[1:]:
            stack.start_epoch(self.epoch)
        results = [self.stacks[0].adapt_epoch(self.epoch)] + [stack.finish_epoch() for stack in self.stacks[1:]]
        wall = time.perf_counter() - start
        for key in ("train_s", "eval_s"):  # the slowest stack's phases
            self.timing[key] += max(r["timing"][key] for r in results)
        share = wall / max(1, len(touched))  # a member's share of the epoch's wall time
        for result in results:
            for index, outcome in result.items():
                if index == "timing":
                    continue
                if "diverged" in outcome:
                    self._end(index, DIVERGED, outcome["diverged"])
                else:
                    self.members[index].record["target_pred"] = outcome["target_pred"]
                    self.members[index].epochs.append({**outcome["epoch"], "time_s": share})
        self.alive = [i for i in self.alive if self.members[i].status == RUNNING]
        if self.epoch >= self.config.epochs:
            for index in self.alive:
                self._end(index, COMPLETED)
            self.alive = []
        elif self.epoch in self.rungs and len(self.alive) > 1:
            self.alive = self._rung()
            if len(self.stacks) > 1:  # the survivors spread over the workers again
                self._distribute({i: s for i, s in self._states().items() if i in set(self.alive)})
        if self.alive:
            for stack in self.stacks:
                stack.keep(self.alive)
        else:
            self.close()
        return [self.members[i] for i in touched]

    def _adapt_single(self) -> list[Member]:
        """:meth:`adapt_epoch` of a population of one: the host trainer's epoch, its end as the
        trainer's :meth:`~ssot.trainer.Trainer.fit` records it."""
        member, record = self.members[0], self.host.record
        start = time.perf_counter()
        try:
            self.host.adapt_epoch()
        except DivergedError as exc:
            record["status"], record["reason"] = DIVERGED, exc.reason
            self.alive = []
        self.epoch = self.host.epoch
        self.timing["train_s"] += time.perf_counter() - start
        if self.alive and self.epoch >= self.config.epochs:
            record["status"] = COMPLETED
            self.alive = []
        return [member]

    def fit(self, on_epoch: Callable[[list[Member]], None] | None = None, pretrain: PretrainFn | None = None) -> list[dict[str, Any]]:
        """Pretrain (unless restored past it), train every member to its end; the members' run records."""
        try:
            if not self.pretrained:
                self.pretrain(pretrain)
            while self.alive:
                touched = self.adapt_epoch()
                if on_epoch is not None:
                    on_epoch(touched)
        finally:
            self.close()
        return [m.record for m in self.members]

    def close(self) -> None:
        """End the worker processes (once every member has ended, or when pretraining diverged)."""
        for remote in self.remote:
            remote.close()
        self.remote, self.stacks = [], [s for s in self.stacks if isinstance(s, Stack)]

    # ------------------------------------------------------------------ checkpoints
    def state_dict(self) -> dict[str, Any]:
        """Everything needed to continue exactly at an epoch boundary: the records and every stack's
        state (:meth:`Stack.state`), split into the members' states when loaded
        (:func:`member_states`), so a checkpoint resumes with any number of workers. Tensors and
        plain types only."""
        state: dict[str, Any] = {"epoch": self.epoch, "pretrained": self.pretrained, "alive": list(self.alive),
                                 "records": [m.record for m in self.members], "timing": dict(self.timing)}
        if self.single:
            state["trainer"] = self.host.state_dict() if self.pretrained and self.epoch else None
        elif self.alive:
            state["stacks"] = [stack.state() for stack in self.stacks]
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.epoch, self.pretrained, self.alive = int(state["epoch"]), bool(state["pretrained"]), list(state["alive"])
        for member, record in zip(self.members, state["records"]):
            member.record = record
        self.timing = dict(state.get("timing", self.timing))
        if self.single:
            if state.get("trainer") is not None:
                self.host.load_state_dict(state["trainer"])
            self.host.record = self.members[0].record  # the member's record is the host's run record
        elif self.alive:  # a worker's stack may still hold members that ended at the checkpoint's epoch
            self._distribute({i: s for stack in state["stacks"] for i, s in member_states(stack).items() if i in set(self.alive)})
        else:
            self.close()


class RemoteStack:
    """A :class:`Stack` in a worker process (:class:`ssot.shards.Shard` running :func:`serve_stack`),
    with the methods of a :class:`Stack` a population calls. The worker sends its stack's state
    with each epoch's results (a checkpoint then needs no other exchange); the members a rung ends
    stay in that state until the next epoch (they are skipped when it is read)."""

    def __init__(self, task: TaskData, config: SSOTConfig):
        self.shard = shards.Shard("ssot.population:serve_stack", {"task": task, "config": config.to_dict()})
        self.last_state: dict[str, Any] | None = None

    def build(self, indices: list[int], configs: list[dict[str, Any]], states: list[dict[str, Any]]) -> None:
        self.shard.call("build", (indices, configs, states))
        self.last_state = None

    def start_epoch(self, epoch: int) -> None:
        self.shard.start("epoch", epoch)

    def finish_epoch(self) -> dict[Any, Any]:
        results = self.shard.finish()
        self.last_state = results.pop("state")
        return results

    def keep(self, indices: Sequence[int]) -> None:
        self.shard.call("keep", list(indices))

    def state(self) -> dict[str, Any]:
        if self.last_state is None:
            self.last_state = self.shard.call("state")
        return self.last_state

    def close(self) -> None:
        self.shard.close()


def serve_stack(fd: int) -> None:
    """A worker process of a population (:class:`RemoteStack`): one :class:`Stack` of its members,
    one torch thread, the task data and shared config fields its population sent."""
    shards.serve(fd, _stack_handler)


def _stack_handler(setup: dict[str, Any]) -> shards.Handler:
    torch.set_num_threads(1)
    host = Trainer(SSOTConfig.from_dict({**setup["config"], "num_threads": 1}), setup["task"])
    held: dict[str, Stack] = {}

    def handle(name: str, payload: Any) -> Any:
        if name == "build":
            indices, configs, states = payload
            held["stack"] = Stack(host, indices, [SSOTConfig.from_dict(c) for c in configs], states)
            return None
        stack = held["stack"]
        if name == "epoch":
            return {**stack.adapt_epoch(payload), "state": stack.state()}
        if name == "keep":
            return stack.keep(payload)
        if name == "state":
            return stack.state()
        raise ValueError(f"unknown operation {name!r}")

    return handle
