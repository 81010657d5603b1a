r"""The SSOT iteration on a stack of P >= 1 members, and the epoch loop around it.

The one implementation of Algorithm 1's adaptation step, for the one member of a run
(:class:`ssot.trainer.Trainer`, any backbone, solver and precision) and for the P members of a
population (:class:`ssot.population.Population`, stacked networks on a feature cache): both are
:class:`Members`. Every tensor of a step carries the members as its first dimension (``[P, ...]``).

One iteration (:func:`step`) on a source batch ``(x_s, y_s)`` and a target batch ``x_t``:

1. forward both batches through ``f`` and ``eta`` (one pass, gradients on), every member at once
   (:func:`forward_batch`);
2. cost :math:`C`, soft mask :math:`S`, masked cost :math:`S \odot C` (computed once: the g step
   reads it detached, the feature step with its gradients, through the mask as ``mask_grad``
   says), weights :math:`w_i = m_{y_i} / \sum m`;
3. **g step** (:func:`g_step`): the OT solver ascends :math:`H` with features and predictions
   detached (``g_steps`` times);
4. **feature step** (:func:`feature_step`): with ``g`` frozen, ``f`` and ``eta`` descend
   :math:`L = L_{CE} + \lambda_{OT} H + \lambda_{Ent} L_{Ent}` (per member; the members' losses
   are summed for one backward, their parameters being disjoint).

It returns the losses of :data:`LOSSES` as a device tensor ``[P, len(LOSSES)]``.

No host read in a step
----------------------
On a GPU, reading a value on the host (``.item()``, ``float()``, ``if tensor``, ``torch.equal``)
waits for every queued kernel. Nothing in a step reads a tensor on the host, for any P and any
solver (``tests/ssot/test_method.py`` makes every such read fail during steps on a CPU). The one
exemption is ``torch.optim.Adam``'s own step counter (a run's optimisers): it lives on the host
even when the parameters are on a GPU (``capturable=False``), so reading it is no device sync.

The epoch loop and non-finite losses
------------------------------------
:func:`train_epoch` adds each step's losses to float64 sums on the device (the same additions, in
the same order, as Python floats would be) and reads the sums every :data:`CHECK_EVERY`
iterations and at the end of the epoch (one host read each). The rule for non-finite losses, the
same for a run and for every member of a population: **a step never tests its losses** (that
would be a host read); a member steps whatever its loss, and at the next check a member whose
sums are not finite (a sum is finite exactly when every value added to it was) ends as
``diverged`` with the reason naming the first non-finite loss and the window of iterations
(``non-finite loss_total (nan) at epoch 1, within iterations 26-50``), at most
``CHECK_EVERY - 1`` iterations after its loss turned; its networks are not used again
(:meth:`Members.diverged`: a run stops, a population drops the member from its stack). The other
members of a population are untouched: their parameters are disjoint from the diverged one's.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

import torch
import torch.nn.functional as F
from torch import Tensor

from ssot import ot, stacked
from ssot.config import SSOTConfig

#: Iterations between two reads of an epoch's loss sums (the divergence check; one host read each).
CHECK_EVERY = 25
#: The losses of an iteration (:func:`step`), in order; an epoch records their means.
LOSSES = ("loss_total", "loss_ce", "loss_ot", "loss_ent", "ot_value")

Batches = Iterator[tuple[tuple[Tensor, Tensor], tuple[Tensor, Tensor]]]


class Members(Protocol):
    """What the step needs of P >= 1 members that share their batches.

    ``config`` holds the fields every member shares (``use_mask``, ``mask_scale``, ``mask_grad``,
    ``g_steps``, ``pt_refresh``); ``lambda_ot`` and ``lambda_ent`` are one float for every member
    or a tensor ``[P]``; ``class_weights`` is ``[P, K]``."""

    config: SSOTConfig

    @property
    def solver(self) -> Any: ...

    @property
    def opt_fe(self) -> Any: ...

    @property
    def lambda_ot(self) -> float | Tensor: ...

    @property
    def lambda_ent(self) -> float | Tensor: ...

    @property
    def class_weights(self) -> Tensor: ...

    def forward_stack(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """Every member's features ``[P, n, d]`` and logits ``[P, n, K]`` (float32) of ``x``."""

    def diverged(self, reasons: dict[int, str]) -> None:
        """End the members at these stack positions as diverged (their reasons); the others stay,
        in order."""


@dataclass
class Batch:
    """The forward pass of one source batch and one target batch, every member's (``[P, ...]``)."""

    fs: Tensor  # (P, b_s, d) source features
    ft: Tensor  # (P, b_t, d) target features
    logits_s: Tensor  # (P, b_s, K)
    ps: Tensor  # (P, b_s, K) source probabilities
    pt: Tensor  # (P, b_t, K) target probabilities
    ys: Tensor  # (b_s,) source labels
    cost: Tensor  # (P, b_s, b_t) squared-Euclidean cost (with gradients)
    masked: Tensor  # (P, b_s, b_t) the cost the solver sees: S * C (or C without the mask)
    w: Tensor  # (P, b_s) source weights m_y / sum m_y
    ids: Tensor | None = None  # (b_t,) target sample ids (the vector solver indexes by them)


def forward_batch(members: Members, xs: Tensor, ys: Tensor, xt: Tensor, ids: Tensor | None = None) -> Batch:
    """One forward pass of both batches through every member's ``f`` and ``eta`` (gradients on)."""
    cfg, bs = members.config, xs.shape[0]
    feats, logits = members.forward_stack(torch.cat([xs, xt]))
    probs = torch.softmax(logits, dim=-1)
    fs, ft, ps, pt = feats[:, :bs], feats[:, bs:], probs[:, :bs], probs[:, bs:]
    cost = stacked.cost_matrix(fs, ft)
    if cfg.use_mask:
        ps_m, pt_m = (ps, pt) if cfg.mask_grad else (ps.detach(), pt.detach())
        masked = cost * (cfg.mask_scale * ot.soft_mask(ps_m, pt_m))
    else:
        masked = cost
    return Batch(fs=fs, ft=ft, logits_s=logits[:, :bs], ps=ps, pt=pt, ys=ys, cost=cost, masked=masked,
                 w=ot.source_weights(members.class_weights, ys), ids=ids)


def g_step(members: Members, b: Batch) -> Tensor:
    """(a) the OT solver (``g`` by default) ascends with ``f`` and ``eta`` fixed (inputs detached).

    Returns each member's OT value before the first ascent step, ``[P]`` (the epoch's
    ``ot_value`` is its mean)."""
    return members.solver.ascend(b.masked.detach(), b.ft.detach(), b.ids, b.w)


def feature_step(members: Members, b: Batch) -> Tensor:
    """(b) ``f`` and ``eta`` descend ``L_CE + lambda_OT H + lambda_Ent L_Ent`` with ``g`` frozen.

    Steps whatever the loss (module docstring); returns ``[P, 4]``: the total, CE, OT and
    entropy losses."""
    loss_ot = members.solver.loss(b.masked, b.ft, b.ids, b.w)
    P, bs, K = b.logits_s.shape
    ce = F.cross_entropy(b.logits_s.reshape(P * bs, K), b.ys.repeat(P), reduction="none").view(P, bs)
    loss_ce = (members.class_weights[:, b.ys] * ce).mean(-1)
    loss_ent = ot.entropy(b.pt)
    loss = loss_ce + members.lambda_ot * loss_ot + members.lambda_ent * loss_ent
    members.opt_fe.zero_grad(set_to_none=True)
    loss.sum().backward()
    members.opt_fe.step()
    return torch.stack([loss, loss_ce, loss_ot, loss_ent], dim=1).detach()


def step(members: Members, xs: Tensor, ys: Tensor, xt: Tensor, ids: Tensor | None = None) -> Tensor:
    """One alternating iteration of every member on a source batch ``(xs, ys)`` and a target batch
    ``xt`` (sample ids ``ids``); the losses ``[P, len(LOSSES)]`` (columns :data:`LOSSES`), on the
    device, not read."""
    batch = forward_batch(members, xs, ys, xt, ids)
    h = g_step(members, batch)
    losses = feature_step(members, batch)
    ot_value = h if members.config.g_steps else losses[:, 2]
    return torch.cat([losses, ot_value[:, None].to(losses.dtype)], dim=1)


def nonfinite(row: list[float], where: str, names: tuple[str, ...] = LOSSES) -> str | None:
    """The divergence reason of one member's loss sums ``row`` (named ``names``), None when every
    sum is finite."""
    for name, value in zip(names, row):
        if not math.isfinite(value):
            return f"non-finite {name} ({value}) {where}"
    return None


def train_epoch(members: Members, batches: Batches, iterations: Iterable[int], n_iter: int, epoch: int, *,
                refresh: Callable[[], None] | None = None) -> list[dict[str, float]]:
    """One adaptation epoch of every member: ``n_iter`` steps on ``batches`` (``iterations``:
    ``range(n_iter)``, or a progress bar over it), with the divergence check every
    :data:`CHECK_EVERY` iterations and at the end (module docstring). ``refresh`` re-estimates
    the class weights every ``pt_refresh`` iterations.

    Returns the mean losses of the epoch of each member still in the stack, in stack order."""
    cfg = members.config
    sums: Tensor | None = None
    checked, rows = 0, []
    for it in iterations:
        if refresh is not None and cfg.pt_refresh and it > 0 and it % cfg.pt_refresh == 0:
            refresh()
        (xs, ys), (xt, ids) = next(batches)  # target batches carry sample ids, never labels
        losses = step(members, xs, ys, xt, ids).to(torch.float64)
        sums = losses if sums is None else sums + losses
        if (it + 1) % CHECK_EVERY == 0 or it + 1 == n_iter:
            rows = sums.tolist()  # the one host read of the window
            where = f"at epoch {epoch}, within iterations {checked + 1}-{it + 1}"
            checked = it + 1
            reasons = {p: reason for p, row in enumerate(rows) if (reason := nonfinite(row, where)) is not None}
            if reasons:
                keep = [p for p in range(len(rows)) if p not in reasons]
                members.diverged(reasons)
                rows = [rows[p] for p in keep]
                if not keep:
                    break
                sums = sums[torch.tensor(keep, device=sums.device)]
    return [{k: v / n_iter for k, v in zip(LOSSES, row)} for row in rows]


def class_weights(config: SSOTConfig, p_t: Tensor, p_s: Tensor) -> Tensor:
    """The class weights ``m`` of ``p_t`` (``[K]`` or ``[P, K]``): :func:`ssot.ot.class_weights`,
    or ones without ``use_class_weights``."""
    return ot.class_weights(p_t, p_s) if config.use_class_weights else torch.ones_like(p_t)
