r"""Populations: P configs of one task trained at once, on the same mini-batches, on a feature cache.

A screen on a feature cache (the ``features`` backbone) trains, per config, a bottleneck, a
classifier and a potential: small networks whose per-trial cost is mostly overhead (a process,
evaluation passes, checkpoints). A :class:`Population` trains P such configs as one stack:

- **same data, same start.** The members share the task, the seed and every config field but
  :data:`MEMBER_FIELDS` (``lambda_ot``, ``lambda_ent``, ``eps``, ``potential_width``, ``lr``,
  ``lr_g``). One host :class:`ssot.trainer.Trainer` (member 0's config) pretrains once
  (:meth:`ssot.trainer.Trainer.pretrain`, or the shared pretrained model of a search) and draws
  the batches of every epoch (:meth:`ssot.trainer.Trainer.epoch_batches`); every member starts
  adaptation from its pretrained bottleneck and classifier, and from the potential an independent
  run of its config initialises (seed, then :func:`ssot.models.build_models`). So each member
  reproduces the independent run of its config (``tests/ssot/test_population.py``).
- **stacked weights.** Parameters are tensors ``[P, ...]``; a linear layer is one batched matmul
  (the first one, on the shared cache vectors, a single GEMM of all members). The potentials
  are grouped by width, one stack per width (padding every potential to the widest one and
  masking the extra units would compute the same, but pay the widest width's arithmetic and
  Adam updates for every member). The members' losses are summed for one backward (their
  parameters are disjoint). The OT terms are :mod:`ssot.ot`'s functions on stacks, with
  one ``eps`` per member.
- **per-member Adam.** :class:`StackedAdam` is ``torch.optim.Adam``'s arithmetic (elementwise),
  with one learning rate per member: member ``p`` gets exactly the update of its own optimiser.
- **per-member evaluation** through the host trainer's own :meth:`ssot.trainer.Trainer.evaluate`
  (member ``p``'s weights loaded into it): target accuracy, every validator, ``p_t`` and the
  class weights ``m`` of the next epoch, the same record fields as an independent run.
- **ASHA inside.** At each rung (:func:`ssot.results.trials.asha_rungs`, the rungs of a search's
  ASHA) the running members are ranked by the search's metric and the top ``ceil(n / rf)`` go on
  (ties to the lower member index, a missing value ranks last); the others end as
  ``early-stopped`` at that rung and leave the stack (parameters and optimiser state compacted).
- **divergence.** A member whose losses turn non-finite ends as ``diverged`` with the reason an
  independent run records (``non-finite loss_ot (nan) at epoch E, iteration I``) and leaves the
  stack at once; the others go on.

Only the ``features`` backbone, the ``net`` solver and fp32 are stacked; other configs are refused
in one line, except in a population of one: a single config of any backbone, solver and precision
is trained by its host :class:`ssot.trainer.Trainer` itself (``Population([config])`` is exactly
``Trainer(config).fit()``), so that every trial of a search has one shape. The population checkpoints exactly at epoch boundaries (:meth:`state_dict`).
"""
from __future__ import annotations

import copy
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ssot import ot
from ssot.config import SSOTConfig
from ssot.data import TaskData, build_task
from ssot.errors import ConfigError, DivergedError
from ssot.models import build_models
from ssot.results.metrics import metric as metric_spec
from ssot.results.trials import COMPLETED, DIVERGED, EARLY_STOPPED, RUNNING
from ssot.trainer import CHECK_EVERY, LOSSES, Trainer, seed_everything

#: The config fields in which the members of one population may differ.
MEMBER_FIELDS: tuple[str, ...] = ("lambda_ot", "lambda_ent", "eps", "potential_width", "lr", "lr_g")

PretrainFn = Callable[[Trainer], None]
#: On a CPU, elementwise work on stacks is done in chunks of members of about this many elements
#: (4 MB of floats): a whole stack's tensors leave the cache and are slower than the chunks.
CPU_CHUNK_ELEMENTS = 1 << 20


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


class StackedAdam:
    """``torch.optim.Adam`` (no amsgrad; L2 ``weight_decay`` as Adam's) on stacked parameters
    ``[n, ...]``, each row a member's, with one learning rate per row (``lrs[i]``, shape ``[n_i]``,
    for parameter ``i``): elementwise, so each member's rows get exactly the update an Adam of its
    own would give them."""

    def __init__(self, params: list[Tensor], lrs: list[Tensor], *, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0.0):
        self.params, self.betas, self.eps, self.weight_decay = list(params), betas, eps, weight_decay
        # on the parameters' device: the step's per-row factors need no host-to-device copy (a sync)
        self.lrs = [lr.to(device=p.device, dtype=torch.float64) for lr, p in zip(lrs, params)]
        self.exp_avg = [torch.zeros_like(p) for p in params]
        self.exp_avg_sq = [torch.zeros_like(p) for p in params]
        self.steps = 0

    def zero_grad(self) -> None:
        for p in self.params:
            p.grad = None

    @torch.no_grad()
    def step(self) -> None:
        beta1, beta2 = self.betas
        self.steps += 1
        bias_correction1 = 1 - beta1**self.steps
        bias_correction2_sqrt = (1 - beta2**self.steps) ** 0.5
        for p, lr, m, v in zip(self.params, self.lrs, self.exp_avg, self.exp_avg_sq):
            if p.grad is None:
                continue
            neg_step = (-(lr / bias_correction1)).to(dtype=p.dtype).view(-1, *[1] * (p.dim() - 1))
            # on a CPU in chunks of members that stay in the cache (a whole stack would not)
            rows = max(1, CPU_CHUNK_ELEMENTS // max(1, p[0].numel())) if p.device.type == "cpu" else len(p)
            for i in range(0, len(p), rows):
                part, grad, m_i, v_i = p[i:i + rows], p.grad[i:i + rows], m[i:i + rows], v[i:i + rows]
                if self.weight_decay:
                    grad = grad.add(part, alpha=self.weight_decay)
                m_i.lerp_(grad, 1 - beta1)
                v_i.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                denom = (v_i.sqrt() / bias_correction2_sqrt).add_(self.eps)
                part.add_(neg_step[i:i + rows] * m_i / denom)

    def select(self, params: list[Tensor], rows: list[Tensor | None]) -> None:
        """Keep, of each parameter ``i``, the members at ``rows[i]`` (None: drop the parameter);
        ``params`` are the parameters that remain, indexed the same way."""
        kept = [(i, r) for i, r in enumerate(rows) if r is not None]
        self.exp_avg = [self.exp_avg[i][r] for i, r in kept]
        self.exp_avg_sq = [self.exp_avg_sq[i][r] for i, r in kept]
        self.lrs = [self.lrs[i][r.to(self.lrs[i].device)] for i, r in kept]
        self.params = list(params)

    def state_dict(self) -> dict[str, Any]:
        return {"exp_avg": self.exp_avg, "exp_avg_sq": self.exp_avg_sq, "steps": self.steps, "lrs": self.lrs}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.exp_avg = [t.to(p.device) for t, p in zip(state["exp_avg"], self.params)]
        self.exp_avg_sq = [t.to(p.device) for t, p in zip(state["exp_avg_sq"], self.params)]
        self.steps = int(state["steps"])
        self.lrs = [lr.to(device=p.device, dtype=torch.float64) for lr, p in zip(state["lrs"], self.params)]


def _linear(h: Tensor, weight: Tensor, bias: Tensor) -> Tensor:
    """Member ``p``'s ``h[p] @ weight[p].T + bias[p]``; a 2-d ``h`` is shared by every member
    (one GEMM of the stacked weights)."""
    P, out, inp = weight.shape
    if h.dim() == 2:
        return torch.addmm(bias.reshape(-1), h, weight.reshape(P * out, inp).t()).view(h.shape[0], P, out).transpose(0, 1)
    return torch.baddbmm(bias[:, None, :], h, weight.transpose(1, 2))


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

    def _layers(self) -> list[nn.Linear]:
        """The host's linear layers of ``f`` (bottleneck) and ``eta``, in forward order."""
        return [m for m in self.host.f.bottleneck if isinstance(m, nn.Linear)] + [self.host.eta]

    def _build_stack(self) -> None:
        P, dev = len(self.members), self.device
        self.fe = [t.detach().clone()[None].repeat(P, *[1] * t.dim()).contiguous()
                   for layer in self._layers() for t in (layer.weight, layer.bias)]
        widths = [m.config.potential_width for m in self.members]
        K, input_dim = self.task.num_classes, self.task.input_shape[0]
        self.widths = torch.tensor(widths, dtype=torch.long, device=dev)
        self.g: dict[int, list[Tensor]] = {}
        for w in sorted(set(widths)):
            # the potential an independent run of this width starts from (the same for every member of it)
            config = next(m.config for m in self.members if m.config.potential_width == w)
            seed_everything(config.seed)
            net = build_models(config, K, input_dim)[2].net
            n = widths.count(w)
            self.g[w] = [t.detach().to(dev)[None].repeat(n, *[1] * t.dim()).contiguous().requires_grad_(True)
                         for t in (net[0].weight, net[0].bias, net[2].weight, net[2].bias)]
        self._group_positions()
        for t in self.fe:
            t.requires_grad_(True)
        cfgs = [m.config for m in self.members]
        self.lambda_ot = torch.tensor([c.lambda_ot for c in cfgs], device=dev)
        self.lambda_ent = torch.tensor([c.lambda_ent for c in cfgs], device=dev)
        self.eps = torch.tensor([c.eps for c in cfgs], device=dev)
        lr, lr_g = torch.tensor([c.lr for c in cfgs], dtype=torch.float64), torch.tensor([c.lr_g for c in cfgs], dtype=torch.float64)
        self.opt_fe = StackedAdam(self.fe, [lr] * len(self.fe), weight_decay=self.config.weight_decay)
        self.opt_g = StackedAdam(self._g_params(), [lr_g[self.positions[w].cpu()] for w in self.g for _ in self.g[w]])
        self.p_t = self.host.p_t[None].repeat(P, 1)
        self.m = self.host.m[None].repeat(P, 1)

    # ------------------------------------------------------------------ the stacked networks
    def _forward(self, x: Tensor, fe: list[Tensor]) -> tuple[Tensor, Tensor]:
        """Every member's features ``[P, n, d]`` and logits ``[P, n, K]`` of the shared inputs ``x``."""
        h = x
        for i in range(0, len(fe) - 2, 2):
            h = torch.relu(_linear(h, fe[i], fe[i + 1]))
        logits = _linear(h, fe[-2], fe[-1])
        if h.dim() == 2:  # no bottleneck: the features are the inputs
            h = h.expand(logits.shape[0], *h.shape)
        return h, logits

    def _group_positions(self) -> None:
        """Each width group's stack positions, and the order that puts the groups' outputs back."""
        self.positions = {w: (self.widths == w).nonzero().flatten() for w in self.g}
        order = torch.cat([self.positions[w] for w in self.g]) if self.g else torch.zeros(0, dtype=torch.long)
        self.unsort = torch.argsort(order)

    def _g_params(self) -> list[Tensor]:
        return [t for w in self.g for t in self.g[w]]

    def _potential(self, ft: Tensor, frozen: bool = False) -> Tensor:
        """Every member's ``g(f^t)``, ``[P, b_t]``: the members of one width in one stack (a
        width group), ``frozen``: without gradients to ``g`` (the feature step)."""
        out = []
        for w, params in self.g.items():
            g = [t.detach() for t in params] if frozen else params
            hidden = torch.relu(_linear(ft[self.positions[w]], g[0], g[1]))
            out.append(_linear(hidden, g[2], g[3]).squeeze(-1))
        return torch.cat(out)[self.unsort]

    def _cost(self, fs: Tensor, ft: Tensor) -> Tensor:
        """Every member's cost matrix (:func:`ssot.ot.cost_matrix`). On a CPU in chunks of members
        whose ``(b_s, b_t, d)`` differences stay in the cache (a whole stack's would not: the
        chunks are faster than one call, and each member's values are those of its own run)."""
        if self.device.type != "cpu":
            return ot.cost_matrix(fs, ft)
        chunk = max(1, CPU_CHUNK_ELEMENTS // (fs.shape[1] * ft.shape[1] * fs.shape[2]))
        return torch.cat([ot.cost_matrix(fs[i:i + chunk], ft[i:i + chunk]) for i in range(0, fs.shape[0], chunk)])

    def _masked(self, cost: Tensor, ps: Tensor, pt: Tensor) -> Tensor:
        return self.host._masked(cost, ps, pt)  # use_mask and mask_scale are shared by every member

    def step(self, xs: Tensor, ys: Tensor, xt: Tensor) -> Tensor:
        """One alternating iteration of every running member (the trainer's ``step``); returns
        the losses ``[P, len(LOSSES)]`` (columns :data:`ssot.trainer.LOSSES`)."""
        cfg, bs, P = self.config, xs.shape[0], len(self.alive)
        feats, logits = self._forward(torch.cat([xs, xt]), self.fe)
        probs = torch.softmax(logits, dim=-1)
        fs, ft, ps, pt = feats[:, :bs], feats[:, bs:], probs[:, :bs], probs[:, bs:]
        cost = self._cost(fs, ft)
        w = ot.source_weights(self.m, ys)
        # (a) g ascends H with f and eta fixed
        masked = self._masked(cost.detach(), ps.detach(), pt.detach())
        first = torch.full((P,), math.nan, device=self.device)
        for k in range(cfg.g_steps):
            h = ot.semi_dual(masked, self._potential(ft.detach()), w, self.eps)
            if k == 0:
                first = h.detach()
            self.opt_g.zero_grad()
            (-h.sum()).backward()
            self.opt_g.step()
        # (b) f and eta descend L with g fixed
        ps_m, pt_m = (ps, pt) if cfg.mask_grad else (ps.detach(), pt.detach())
        loss_ot = ot.semi_dual(self._masked(cost, ps_m, pt_m), self._potential(ft, frozen=True), w, self.eps)
        ce = F.cross_entropy(logits[:, :bs].reshape(P * bs, -1), ys.repeat(P), reduction="none").view(P, bs)
        loss_ce = (self.m[:, ys] * ce).mean(-1)
        loss_ent = ot.entropy(pt)
        loss = loss_ce + self.lambda_ot * loss_ot + self.lambda_ent * loss_ent
        finite = torch.isfinite(loss)
        self.opt_fe.zero_grad()
        torch.where(finite, loss, torch.zeros_like(loss)).sum().backward()  # a non-finite member does not step
        self.opt_fe.step()
        ot_value = first if cfg.g_steps else loss_ot.detach()
        return torch.stack([loss.detach(), loss_ce.detach(), loss_ot.detach(), loss_ent.detach(), ot_value], dim=1)

    # ------------------------------------------------------------------ members through the host trainer
    @torch.no_grad()
    def _load_member(self, position: int) -> None:
        """Copy the member at stack ``position`` into the host's ``f`` and ``eta``."""
        for i, layer in enumerate(self._layers()):
            layer.weight.copy_(self.fe[2 * i][position])
            layer.bias.copy_(self.fe[2 * i + 1][position])

    def _evaluate(self, position: int) -> dict[str, Any]:
        """The host trainer's evaluation of one member; also its ``p_t`` and ``m`` for the next epoch."""
        self._load_member(position)
        metrics = self.host.evaluate()
        self.p_t[position], self.m[position] = self.host.p_t, self.host.m
        self.members[self.alive[position]].record["target_pred"] = self.host.record["target_pred"]
        return metrics

    def _refresh_class_weights(self) -> None:
        """``pt_refresh``: every member's ``p_t`` and ``m`` from a pass over the target set."""
        for position in range(len(self.alive)):
            self._load_member(position)
            self.host._set_class_weights(self.host.predict(self.task.target_eval)[0].mean(0))
            self.p_t[position], self.m[position] = self.host.p_t, self.host.m

    # ------------------------------------------------------------------ the stack's members
    def _keep(self, positions: list[int]) -> None:
        """Keep the members at stack ``positions`` (parameters, optimiser states, per-member values)."""
        if positions == list(range(len(self.alive))):
            return
        assert positions == sorted(positions), "stack positions are kept in order"
        index = torch.tensor(positions, dtype=torch.long, device=self.device)
        with torch.no_grad():
            self.fe = [t[index].detach().requires_grad_(True) for t in self.fe]
            rows: list[Tensor | None] = []
            groups: dict[int, list[Tensor]] = {}
            for w, params in self.g.items():
                kept = torch.isin(self.positions[w], index).nonzero().flatten()
                rows += [kept if len(kept) else None] * len(params)
                if len(kept):
                    groups[w] = [t[kept].detach().requires_grad_(True) for t in params]
        self.opt_fe.select(self.fe, [index] * len(self.fe))
        self.g = groups
        self.opt_g.select(self._g_params(), rows)
        for name in ("widths", "lambda_ot", "lambda_ent", "eps", "p_t", "m"):
            setattr(self, name, getattr(self, name)[index])
        self._group_positions()
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
        """One adaptation epoch of every running member, then their evaluation, the ends of this
        epoch (completed, early-stopped at a rung, diverged); returns the members that recorded
        this epoch or ended in it."""
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
        sums = torch.zeros(len(self.alive), len(LOSSES), dtype=torch.float64, device=self.device)
        checked = 0
        for it in range(n_iter):
            if not self.alive:
                break
            if cfg.pt_refresh and it > 0 and it % cfg.pt_refresh == 0:
                self._refresh_class_weights()
            (xs, ys), (xt, _) = next(src), next(tgt)
            sums += self.step(xs, ys, xt).double()
            # the trainer's divergence check (ssot.trainer.CHECK_EVERY): the sums read once per window
            if (it + 1) % CHECK_EVERY == 0 or it + 1 == n_iter:
                where = f"at epoch {self.epoch}, within iterations {checked + 1}-{it + 1}"
                checked = it + 1
                go_on = []
                for p, row in enumerate(sums.tolist()):
                    bad = next(((name, v) for name, v in zip(LOSSES, row) if not math.isfinite(v)), None)
                    if bad is None:
                        go_on.append(p)
                    else:
                        self._end(p, DIVERGED, f"non-finite {bad[0]} ({bad[1]}) {where}")
                if len(go_on) < len(sums):
                    sums = sums[go_on]
                    self._keep(go_on)
        train_s = time.perf_counter() - start
        eval_start = time.perf_counter()
        for position, index in enumerate(self.alive):
            metrics = {"epoch": self.epoch, **{k: float(v) / n_iter for k, v in zip(LOSSES, sums[position].tolist())},
                       **self._evaluate(position)}
            self.members[index].epochs.append(metrics)
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
            state.update(fe=[t.detach() for t in self.fe], g={w: [t.detach() for t in ps] for w, ps in self.g.items()}, widths=self.widths,
                         lambda_ot=self.lambda_ot, lambda_ent=self.lambda_ent, eps=self.eps, p_t=self.p_t, m=self.m,
                         opt_fe=self.opt_fe.state_dict(), opt_g=self.opt_g.state_dict())
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
        self.fe = [t.to(dev).requires_grad_(True) for t in state["fe"]]
        self.g = {int(w): [t.to(dev).requires_grad_(True) for t in ps] for w, ps in state["g"].items()}
        for name in ("widths", "lambda_ot", "lambda_ent", "eps", "p_t", "m"):
            setattr(self, name, state[name].to(dev))
        self._group_positions()
        self.opt_fe = StackedAdam(self.fe, state["opt_fe"]["lrs"], weight_decay=self.config.weight_decay)
        self.opt_g = StackedAdam(self._g_params(), state["opt_g"]["lrs"])
        self.opt_fe.load_state_dict(state["opt_fe"])
        self.opt_g.load_state_dict(state["opt_g"])
