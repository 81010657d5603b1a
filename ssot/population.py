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
  through every member; per member its target accuracy, every validator, ``p_t`` and the class
  weights ``m`` of the next epoch: the record fields of an independent run.
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

from ssot import evaluation, method
from ssot.config import SSOTConfig
from ssot.data import TaskData, build_task
from ssot.errors import ConfigError, DivergedError
from ssot.models import build_models
from ssot.results.metrics import metric as metric_spec
from ssot.results.trials import COMPLETED, DIVERGED, EARLY_STOPPED, RUNNING
from ssot.solvers import NetSolver
from ssot.stacked import Head, Potentials, StackedAdam
from ssot.trainer import Trainer, seed_everything

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


class Population:
    """P configs of one task trained at once (module docstring); the :class:`ssot.method.Members`
    of :func:`ssot.method.step` while it trains a stack.

    Parameters
    ----------
    configs : the members' configs (:func:`check_members`).
    task : the data (the feature cache); built from ``configs[0]`` when omitted.
    rungs : epochs at which the running members are ranked and the top ``ceil(n / reduction_factor)``
        go on (:func:`ssot.results.trials.asha_rungs`); ``()``: no early stopping.
    reduction_factor : ASHA's reduction factor.
    metric : the metric members are ranked by at a rung (:mod:`ssot.results.metrics`).
    """

    def __init__(self, configs: Sequence[SSOTConfig], task: TaskData | None = None, *, rungs: Sequence[int] = (),
                 reduction_factor: int = 3, metric: str = "target_acc"):
        check_members(configs)
        self.configs = list(configs)
        self.rungs, self.reduction_factor = tuple(int(r) for r in rungs), int(reduction_factor)
        self.metric = metric_spec(metric)
        task = task if task is not None else build_task(self.configs[0])
        self.host = Trainer(self.configs[0], task)
        self.config, self.task, self.device = self.host.config, self.host.task, self.host.device
        self.members = [Member(i, cfg, {}) for i, cfg in enumerate(self.configs)]
        self.alive: list[int] = []  # member indices, in stack order
        self.epoch = 0
        self.pretrained = False
        self.timing = {"pretrain_s": 0.0, "train_s": 0.0, "eval_s": 0.0}
        #: A population of one is its host trainer's run (no stack): any config a Trainer accepts.
        self.single = len(self.configs) == 1

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
        self._build_stack()

    def _record_base(self, config: SSOTConfig) -> dict[str, Any]:
        base = {k: copy.deepcopy(v) for k, v in self.host.record.items() if k not in ("config", "epochs", "target_pred")}
        return {**base, "config": config.to_dict(), "epochs": [], "status": RUNNING, "reason": None}

    def _build_stack(self) -> None:
        """Every member's starting networks as stacks: the host's pretrained bottleneck and
        classifier, and the potential an independent run of its config starts from."""
        P, dev, host = len(self.members), self.device, self.host
        layers = [m for m in host.f.bottleneck if isinstance(m, nn.Linear)] + [host.eta]
        self.head = Head.of([layers] * P, dev)
        K, input_dim = self.task.num_classes, self.task.input_shape[0]
        nets: dict[int, nn.Sequential] = {}
        for cfg in self.configs:
            if cfg.potential_width not in nets:  # the same start for every member of a width
                seed_everything(cfg.seed)
                nets[cfg.potential_width] = build_models(cfg, K, input_dim)[2].net
        potentials = Potentials.of([nets[cfg.potential_width] for cfg in self.configs], dev)
        values = {name: torch.tensor([getattr(c, name) for c in self.configs], device=dev) for name in ("lambda_ot", "lambda_ent", "eps")}
        self.lambda_ot, self.lambda_ent, self.eps = values["lambda_ot"], values["lambda_ent"], values["eps"]
        self.p_t, self.m = host.p_t[None].repeat(P, 1), host.m[None].repeat(P, 1)
        self._optimisers(potentials)

    def _optimisers(self, potentials: Potentials, state: dict[str, Any] | None = None) -> None:
        """The members' Adams (one learning rate per member) and the ``net`` solver on the stack."""
        lr, lr_g = (torch.tensor([getattr(c, k) for c in self.configs], dtype=torch.float64) for k in ("lr", "lr_g"))
        self.opt_fe = StackedAdam(self.head.params, state["opt_fe"]["lrs"] if state else [lr] * len(self.head.params),
                                  weight_decay=self.config.weight_decay)
        self.opt_g = StackedAdam(potentials.parameters(), state["opt_g"]["lrs"] if state else
                                 [lr_g[potentials.positions[w].cpu()] for w, ps in potentials.groups.items() for _ in ps])
        if state:
            self.opt_fe.load_state_dict(state["opt_fe"])
            self.opt_g.load_state_dict(state["opt_g"])
        self.solver = NetSolver(potentials, self.opt_g, self.eps, self.config.g_steps)

    @property
    def potentials(self) -> Potentials:
        return self.solver.g

    # ------------------------------------------------------------------ the stack as ssot.method.Members
    @property
    def class_weights(self) -> Tensor:
        return self.m

    def forward_stack(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """Every running member's features ``[P, n, d]`` and logits ``[P, n, K]`` of the shared inputs ``x``."""
        return self.head(x)

    @contextlib.contextmanager
    def evaluating(self) -> Iterator[None]:
        yield  # stacked linear layers and ReLUs: nothing differs in evaluation

    def eval_batches(self, ds: Any) -> Iterator[tuple[Tensor, Tensor]]:
        return self.host.eval_batches(ds)

    def step(self, xs: Tensor, ys: Tensor, xt: Tensor, ids: Tensor | None = None) -> Tensor:
        """One alternating iteration of every running member (:func:`ssot.method.step`); returns
        the losses ``[P, len(LOSSES)]`` (columns :data:`ssot.method.LOSSES`)."""
        return method.step(self, xs, ys, xt, ids)

    def diverged(self, reasons: dict[int, str]) -> None:
        """End the members at these stack positions as diverged; they leave the stack."""
        for position, reason in reasons.items():
            self._end(position, DIVERGED, reason)
        self._keep([p for p in range(len(self.alive)) if p not in reasons])

    def _set_class_weights(self, p_t: Tensor) -> None:
        self.p_t, self.m = p_t, method.class_weights(self.config, p_t, self.host.p_s)

    def _refresh_class_weights(self) -> None:
        """``pt_refresh``: every member's ``p_t`` and ``m`` from a pass over the target set."""
        self._set_class_weights(evaluation.collect_stack(self, self.task.target_eval).probs.mean(1))

    # ------------------------------------------------------------------ the stack's members
    def _keep(self, positions: list[int]) -> None:
        """Keep the members at stack ``positions`` (parameters, optimiser states, per-member values)."""
        if positions == list(range(len(self.alive))):
            return
        assert positions == sorted(positions), "stack positions are kept in order"
        index = torch.tensor(positions, dtype=torch.long, device=self.device)
        self.head.select(index)
        self.opt_fe.select(self.head.params, [index] * len(self.head.params))
        rows = self.potentials.select(index)
        self.opt_g.select(self.potentials.parameters(), rows)
        for name in STACKED_VALUES:
            setattr(self, name, getattr(self, name)[index])
        self.solver.eps = self.eps
        self.alive = [self.alive[p] for p in positions]

    def _end(self, position: int, status: str, reason: str | None = None) -> None:
        record = self.members[self.alive[position]].record
        record["status"], record["reason"] = status, reason

    def _rank_value(self, member: Member) -> float:
        value = member.epochs[-1].get(self.metric.name)
        if value is None or not math.isfinite(value):
            return math.inf
        return -value if self.metric.direction == "max" else value

    def _rung(self) -> list[int]:
        """At a rung: the stack positions that go on (the top ``ceil(n / rf)``)."""
        ranked = sorted(range(len(self.alive)), key=lambda p: (self._rank_value(self.members[self.alive[p]]), self.alive[p]))
        keep = sorted(ranked[:max(1, math.ceil(len(ranked) / self.reduction_factor))])
        for p in set(ranked) - set(keep):
            self._end(p, EARLY_STOPPED)
        return keep

    # ------------------------------------------------------------------ epochs
    def adapt_epoch(self) -> list[Member]:
        """One adaptation epoch of every running member (:func:`ssot.method.train_epoch`), then their
        evaluation (:func:`ssot.evaluation.evaluate`), the ends of this epoch (completed,
        early-stopped at a rung, diverged); returns the members that recorded this epoch or ended in it."""
        if not self.pretrained:
            raise RuntimeError("adapt_epoch() before pretrain()")
        if self.single:
            return self._adapt_single()
        cfg = self.config
        self.epoch += 1
        start = time.perf_counter()
        touched = list(self.alive)
        src, tgt = self.host.epoch_batches(self.epoch)
        n_iter = self.host.iterations_per_epoch()
        losses = method.train_epoch(self, zip(src, tgt), range(n_iter), n_iter, self.epoch, refresh=self._refresh_class_weights)
        train_s = time.perf_counter() - start
        eval_start = time.perf_counter()
        if self.alive:
            metrics, p_t, predictions = evaluation.evaluate(self, self.host.source_eval_subset)
            self._set_class_weights(p_t)
            for position, index in enumerate(self.alive):
                self.members[index].record["target_pred"] = predictions[position]
                self.members[index].epochs.append({"epoch": self.epoch, **losses[position], **metrics[position],
                                                   "class_weights": self.m[position].tolist()})
        eval_s = time.perf_counter() - eval_start
        self.timing["train_s"] += train_s
        self.timing["eval_s"] += eval_s
        share = (train_s + eval_s) / max(1, len(touched))  # a member's share of the epoch's wall time
        for index in self.alive:
            self.members[index].epochs[-1]["time_s"] = share
        if self.epoch >= cfg.epochs:
            for p in range(len(self.alive)):
                self._end(p, COMPLETED)
            self._keep([])
        elif self.epoch in self.rungs and len(self.alive) > 1:
            self._keep(self._rung())
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
        if not self.pretrained:
            self.pretrain(pretrain)
        while self.alive:
            touched = self.adapt_epoch()
            if on_epoch is not None:
                on_epoch(touched)
        return [m.record for m in self.members]

    # ------------------------------------------------------------------ checkpoints
    def state_dict(self) -> dict[str, Any]:
        """Everything needed to continue exactly at an epoch boundary (every member)."""
        state: dict[str, Any] = {"epoch": self.epoch, "pretrained": self.pretrained, "alive": list(self.alive),
                                 "records": [m.record for m in self.members], "timing": dict(self.timing)}
        if self.single:
            state["trainer"] = self.host.state_dict() if self.pretrained and self.epoch else None
            return state
        if self.alive:
            potentials = self.potentials
            state.update(fe=[t.detach() for t in self.head.params], widths=potentials.widths,
                         g={w: [t.detach() for t in ps] for w, ps in potentials.groups.items()},
                         opt_fe=self.opt_fe.state_dict(), opt_g=self.opt_g.state_dict(),
                         **{name: getattr(self, name) for name in STACKED_VALUES})
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
            return
        if not self.alive:
            return
        dev = self.device
        self.head = Head([t.to(dev).requires_grad_(True) for t in state["fe"]])
        groups = {int(w): [t.to(dev).requires_grad_(True) for t in ps] for w, ps in state["g"].items()}
        for name in STACKED_VALUES:
            setattr(self, name, state[name].to(dev))
        self._optimisers(Potentials(groups, state["widths"].to(dev)), state)
