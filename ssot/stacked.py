r"""Stacked networks: the bottleneck, classifier and potential of P members as tensors ``[P, ...]``.

A population (:mod:`ssot.population`) trains P configs that share their inputs (a feature cache)
and differ in their hyperparameters. Each of its networks is one stack: a linear layer of P
members is a weight ``[P, out, in]`` and a bias ``[P, out]``, and member ``p``'s output is
``h[p] @ weight[p].T + bias[p]``.

- :func:`linear`: the layer on a stack. On inputs every member shares (the cache vectors, 2-d)
  it is one GEMM of the stacked weights (``addmm``: ``[n, in] @ [in, P * out]``); on per-member
  inputs (3-d) one batched GEMM (``baddbmm``) on a GPU and each member's own ``F.linear`` on a
  CPU. Measured against ``torch.func`` (``stack_module_state`` + ``functional_call`` + ``vmap`` of
  the same modules) by ``benchmarks/stacked_layers.py``: on the CPU these products are faster
  (docs/screening.md), so they are kept.
- :class:`Head`: ``f``'s bottleneck (Linear + ReLU per layer) and the classifier ``eta``.
- :class:`Potentials`: the potentials ``g`` (``Linear -> ReLU -> Linear``), one stack per width
  (padding every potential to the widest and masking the extra units would compute the same but
  pay the widest width's arithmetic and Adam updates for every member).
- :class:`StackedAdam`: ``torch.optim.Adam``'s arithmetic with one learning rate per member.
- :func:`cost_matrix`: :func:`ssot.ot.cost_matrix` of a stack, on a CPU in chunks of members.

Every stack can keep a subset of its members (:meth:`Head.select`, :meth:`Potentials.select`,
:meth:`StackedAdam.select`): the members that leave (early-stopped at a rung, diverged) stop
costing anything.

On a CPU every product of a member sums in the order of the member's own run (the shared-input
GEMM does; the batched GEMMs, whose backward does not, are replaced by a loop of the members' own
products, which costs about the same there; :func:`ssot.ot.soft_mask` likewise), so a member of a
population is its independent run **bit for bit** (``tests/ssot/test_population.py``). On a GPU
the products are batched (one kernel for every member) and a member drifts from its run by the
summation order, amplified by training: docs/screening.md, "How far a member drifts from its
independent run".
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor

from ssot import ot

#: On a CPU, a GEMM of fewer output columns than this takes another kernel than a stacked GEMM
#: (measured with torch 2.14's MKL: 1 to 11 columns differ in the last bits, 12 and more do not), so
#: :func:`linear` computes such a layer of shared inputs one member at a time.
EXACT_MIN_OUT = 16
#: On a CPU, elementwise work on stacks is done in chunks of members of about this many elements
#: (256 KB of floats, one member at least): a whole stack's tensors leave the caches and are slower
#: than the chunks (measured on a stack of 8 P2H members: a step of 23 ms in chunks of 64 Ki
#: elements, 25 ms of 256 Ki, 29 ms of 1 Mi, 40 ms of 4 Mi).
CPU_CHUNK_ELEMENTS = 1 << 16


def cpu_chunk(member_elements: int) -> int:
    """Members per chunk of elementwise work on a CPU, each member ``member_elements`` elements:
    about :data:`CPU_CHUNK_ELEMENTS` in all, one member at least."""
    return max(1, CPU_CHUNK_ELEMENTS // max(1, member_elements))


def linear(h: Tensor, weight: Tensor, bias: Tensor) -> Tensor:
    """Member ``p``'s ``h[p] @ weight[p].T + bias[p]``, ``[P, n, out]``; a 2-d ``h`` ``[n, in]`` is
    shared by every member.

    On a GPU: one GEMM of the stacked weights (shared inputs) or one batched GEMM. On a CPU each
    member gets the bits of its own ``F.linear`` (module docstring): shared inputs are one GEMM of
    the stacked weights (each member's columns, and in the backward pass its weights' gradient,
    are summed as in a GEMM of its own: measured exact), except for fewer than
    :data:`EXACT_MIN_OUT` outputs, where a GEMM of its own takes another kernel; per-member inputs
    are each member's ``F.linear`` (a batched GEMM's backward sums in another order, and on a CPU
    the loop costs about what the batched product does)."""
    P, out, inp = weight.shape
    cpu = h.device.type == "cpu"
    if h.dim() == 2 and not (cpu and out < EXACT_MIN_OUT):
        # contiguous: each member's rows then reduce as its run's do (a strided view sums in another order)
        return torch.addmm(bias.reshape(-1), h, weight.reshape(P * out, inp).t()).view(h.shape[0], P, out).transpose(0, 1).contiguous()
    if cpu:
        return torch.stack([F.linear(h if h.dim() == 2 else x, w, b) for x, w, b in zip(h.expand(P, *h.shape[-2:]), weight, bias)])
    return torch.baddbmm(bias[:, None, :], h, weight.transpose(1, 2))


def _rows(t: Tensor, index: Tensor) -> Tensor:
    return t[index].detach().requires_grad_(True)


class Head:
    """The bottleneck (Linear + ReLU per layer) and the classifier of P members.

    ``params`` holds ``[w_1, b_1, ..., w_L, b_L, w_eta, b_eta]``, each ``[P, ...]``."""

    def __init__(self, params: list[Tensor]):
        self.params = params

    def __call__(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """Every member's features ``[P, n, d]`` and logits ``[P, n, K]`` of the shared inputs ``x``."""
        fe, h = self.params, x
        for i in range(0, len(fe) - 2, 2):
            h = torch.relu(linear(h, fe[i], fe[i + 1]))
        logits = linear(h, fe[-2], fe[-1])
        if h.dim() == 2:  # no bottleneck: the features are the inputs
            h = h.expand(logits.shape[0], *h.shape)
        return h, logits

    def select(self, index: Tensor) -> None:
        """Keep the members at stack positions ``index``."""
        with torch.no_grad():
            self.params = [_rows(t, index) for t in self.params]


class Potentials:
    """The potentials ``g`` of P members, ``Linear(d, width) -> ReLU -> Linear(width, 1)``, one
    stack (a width group) per width; the members' stack positions are ``widths``' order.

    ``groups[w]`` holds the group's ``[w_1, b_1, w_2, b_2]``; :meth:`__call__` evaluates every
    group on its members' inputs and puts the outputs back in stack order."""

    def __init__(self, groups: dict[int, list[Tensor]], widths: Tensor):
        self.groups, self.widths = groups, widths
        self._positions()

    def _positions(self) -> None:
        """Each group's stack positions, and the order that puts the groups' outputs back."""
        self.positions = {w: (self.widths == w).nonzero().flatten() for w in self.groups}
        order = torch.cat(list(self.positions.values())) if self.groups else torch.zeros(0, dtype=torch.long)
        self.unsort = torch.argsort(order)

    def parameters(self) -> list[Tensor]:
        return [t for params in self.groups.values() for t in params]

    def __call__(self, ft: Tensor, frozen: bool = False) -> Tensor:
        """Every member's ``g(ft[p])``, ``[P, b_t]``; ``frozen``: without gradients to ``g``."""
        out = []
        for w, params in self.groups.items():
            g = [t.detach() for t in params] if frozen else params
            hidden = torch.relu(linear(ft[self.positions[w]], g[0], g[1]))
            out.append(linear(hidden, g[2], g[3]).squeeze(-1))
        return torch.cat(out)[self.unsort]

    def select(self, index: Tensor) -> list[Tensor | None]:
        """Keep the members at stack positions ``index``; returns, per parameter of
        :meth:`parameters` before the selection, the rows kept (None: its group left)."""
        rows: list[Tensor | None] = []
        groups: dict[int, list[Tensor]] = {}
        with torch.no_grad():
            for w, params in self.groups.items():
                kept = torch.isin(self.positions[w], index).nonzero().flatten()
                rows += [kept if len(kept) else None] * len(params)
                if len(kept):
                    groups[w] = [_rows(t, kept) for t in params]
        self.groups, self.widths = groups, self.widths[index]
        self._positions()
        return rows


def cost_matrix(fs: Tensor, ft: Tensor) -> Tensor:
    """Every member's cost matrix (:func:`ssot.ot.cost_matrix`), ``[P, b_s, b_t]``. On a CPU in
    chunks of members whose ``(b_s, b_t, d)`` differences stay in the cache (a whole stack's would
    not: the chunks are faster than one call, and each member's values are those of its own run)."""
    if fs.device.type != "cpu" or fs.shape[0] == 1:
        return ot.cost_matrix(fs, ft)
    chunk = cpu_chunk(fs.shape[1] * ft.shape[1] * fs.shape[2])
    return torch.cat([ot.cost_matrix(fs[i:i + chunk], ft[i:i + chunk]) for i in range(0, fs.shape[0], chunk)])


class StackedAdam:
    """``torch.optim.Adam`` (no amsgrad; L2 ``weight_decay`` as Adam's) on stacked parameters
    ``[n, ...]``, each row a member's, with one learning rate per row (``lrs[i]``, shape ``[n_i]``,
    for parameter ``i``): elementwise, and with the operations of Adam's own update in its order,
    so each member's rows get exactly the update an Adam of its own would give them."""

    def __init__(self, params: list[Tensor], lrs: list[Tensor], *, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0.0):
        self.params, self.betas, self.eps, self.weight_decay = list(params), betas, eps, weight_decay
        # on the parameters' device: the step's per-row factors need no host-to-device copy (a sync)
        self.lrs = [lr.to(device=p.device, dtype=torch.float64) for lr, p in zip(lrs, params)]
        self.exp_avg = [torch.zeros_like(p) for p in params]
        self.exp_avg_sq = [torch.zeros_like(p) for p in params]
        self.steps = 0

    def zero_grad(self, set_to_none: bool = True) -> None:
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
            rows = cpu_chunk(p[0].numel()) if p.device.type == "cpu" else len(p)
            for i in range(0, len(p), rows):
                part, grad, m_i, v_i = p[i:i + rows], p.grad[i:i + rows], m[i:i + rows], v[i:i + rows]
                if self.weight_decay:
                    grad = grad.add(part, alpha=self.weight_decay)
                m_i.lerp_(grad, 1 - beta1)
                v_i.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                denom = (v_i.sqrt() / bias_correction2_sqrt).add_(self.eps)
                part.add_(neg_step[i:i + rows] * m_i / denom)

    def select(self, params: list[Tensor], rows: Sequence[Tensor | None]) -> None:
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
