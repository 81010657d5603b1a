r"""The three OT solvers of an SSOT run (config field ``ot_solver``).

Each solver sees one mini-batch: the (masked) cost :math:`\tilde C \in \mathbb{R}^{b_s\times b_t}`,
the target features :math:`F_t`, the target sample ids (positions in the target set) and the
source weights :math:`w` (summing to 1). It offers

- :meth:`ascend`: improve its own state with the features fixed; returns the OT value of the
  batch *before* the update as a 0-dim tensor on the batch's device (the epoch's ``ot_value`` is
  its mean; the trainer reads it once per epoch, not once per step: no host sync);
- :meth:`loss`: the OT loss ``L_OT`` the feature extractor descends, differentiable in the cost.

``net`` (default, the paper's method)
    a potential network :math:`g_\theta(f^t)`, ascended on the semi-dual
    :math:`H = \sum_i w_i g^{\tilde c,\varepsilon}_i + \frac{1}{b_t}\sum_j g_j - \varepsilon` by Adam.
``vector``
    a free potential :math:`v \in \mathbb{R}^{n_t}`, one entry per target sample of the whole
    target set; the batch uses :math:`g_j = v_{\mathrm{id}(j)}`. Ascended by plain stochastic
    gradient ascent on :math:`H` with step :math:`\texttt{lr\_vector}\cdot\varepsilon b_t` (the
    semi-dual is :math:`1/\varepsilon`-smooth; POT's SAG uses :math:`\varepsilon/\max_i a_i`), so
    each entry moves by ``lr_vector`` :math:`\cdot\,\varepsilon(1 - b_t\sum_i w_i \pi_{ij})`: the
    discrete semi-dual SGD of Genevay et al. (2016).
    Their SAG variant stores one gradient per source sample; here the cost changes at every
    iteration (the features move), so stored gradients would be stale, and plain SGD is used.
``sinkhorn``
    entropic OT solved from scratch on each mini-batch by log-domain Sinkhorn iterations with
    marginals :math:`w` and :math:`\mathbf{1}/b_t`; ``L_OT`` is the plan's cost
    :math:`\langle P, \tilde C\rangle` with :math:`P` held fixed (its gradient in :math:`\tilde C`
    is :math:`P`, the envelope theorem). It keeps no state across batches.

References
----------
Genevay, A., Cuturi, M., Peyré, G., Bach, F. (2016). Stochastic Optimization for Large-scale
Optimal Transport. NeurIPS.
Cuturi, M. (2013). Sinkhorn Distances: Lightspeed Computation of Optimal Transport. NeurIPS.
Peyré, G., Cuturi, M. (2019). Computational Optimal Transport, Sec. 4.4 (log-domain Sinkhorn).
"""
from __future__ import annotations

from typing import Any

import torch
from torch import Tensor
from torch.utils.data import Dataset

from ssot import ot
from ssot.config import OT_SOLVERS


class SampleIds(Dataset):
    """``ds`` with each label replaced by the sample's position in ``ds``.

    The training loop never uses target labels; its target batches carry sample ids instead,
    which the ``vector`` solver needs and which makes a label leak impossible.
    """

    def __init__(self, ds: Dataset):
        self.dataset = ds

    def __len__(self) -> int:
        return len(self.dataset)  # type: ignore[arg-type]

    def __getitem__(self, i: int) -> tuple[Any, int]:
        return self.dataset[i][0], i


def sinkhorn_log(cost: Tensor, a: Tensor, b: Tensor, eps: float | Tensor, iters: int = 100, tol: float = 1e-7) -> Tensor:
    r"""The entropic OT plan :math:`P = \exp((f_i + g_j - C_{ij})/\varepsilon)` by log-domain Sinkhorn.

    Alternates :math:`f_i = \varepsilon\log a_i - \varepsilon\,\mathrm{LSE}_j((g_j - C_{ij})/\varepsilon)`
    and :math:`g_j = \varepsilon\log b_j - \varepsilon\,\mathrm{LSE}_i((f_i - C_{ij})/\varepsilon)`
    (stable for any cost scale), ``iters`` rounds; every 10 rounds (and at the last) the row
    marginals are compared with ``a``, and a problem whose L1 error is below ``tol`` keeps its
    potentials from then on (``torch.where``): the values of stopping there, without reading the
    error on the host (no device sync). Rows with :math:`a_i = 0` get a zero row; an all-zero
    ``a`` a zero plan. The plan minimises :math:`\langle P, C\rangle + \varepsilon\,\mathrm{KL}(P\,\|\,ab^\top)`
    (POT: ``ot.sinkhorn(a, b, C, eps, method="sinkhorn_log")``). No gradient flows through it.

    A stack of problems (leading dimensions of ``cost``, ``a`` and ``b``) takes ``eps`` as a tensor
    of one value per problem, each > 0 (validated where it enters: the config,
    :func:`ssot.population.check_members`).
    """
    if not isinstance(eps, Tensor) and eps <= 0:
        raise ValueError(f"The 'eps' parameter must be a float in (0, inf) for Sinkhorn. Got {eps!r} instead.")
    e1, e2 = (eps[..., None], eps[..., None, None]) if isinstance(eps, Tensor) else (eps, eps)
    with torch.no_grad():
        log_a, log_b = torch.log(a), torch.log(b)
        f, g = torch.zeros_like(a), torch.zeros_like(b)
        done = torch.zeros(a.shape[:-1], dtype=torch.bool, device=a.device)
        for k in range(iters):
            f_next = e1 * (log_a - torch.logsumexp((g[..., None, :] - cost) / e2, dim=-1))
            g_next = e1 * (log_b - torch.logsumexp((f_next[..., :, None] - cost) / e2, dim=-2))
            f, g = torch.where(done[..., None], f, f_next), torch.where(done[..., None], g, g_next)
            if (k + 1) % 10 == 0 or k == iters - 1:
                rows = torch.exp((f[..., :, None] + g[..., None, :] - cost) / e2).sum(-1)
                done = done | ((rows - a).abs().sum(-1) < tol)
        plan = torch.exp((f[..., :, None] + g[..., None, :] - cost) / e2)
        return torch.where((a.sum(-1) > 0)[..., None, None], plan, torch.zeros_like(plan))


def potential_values(g: Any, ft: Tensor, frozen: bool = False) -> Tensor:
    """``g(ft)`` shaped like ``ft`` without its last dimension: a module (one member; ``frozen``:
    without gradients to its parameters) or a stack (:class:`ssot.stacked.Potentials`)."""
    if not isinstance(g, torch.nn.Module):
        return g(ft, frozen=frozen)
    if not frozen:
        return g(ft).reshape(ft.shape[:-1])
    g.requires_grad_(False)  # the graph records no gradient to g's parameters
    try:
        return g(ft).reshape(ft.shape[:-1])
    finally:
        g.requires_grad_(True)


class NetSolver:
    """The potential network ``g`` (the paper's solver), ascended ``steps`` times by ``opt``.

    ``g`` is one member's module or a stack of potentials (:class:`ssot.stacked.Potentials`, with
    ``eps`` a tensor of one value per member)."""

    def __init__(self, g: Any, opt: Any, eps: float | Tensor, steps: int):
        self.g, self.opt, self.eps, self.steps = g, opt, eps, steps

    def ascend(self, cost: Tensor, ft: Tensor, ids: Tensor | None, w: Tensor) -> Tensor:
        first = torch.full(cost.shape[:-2], float("nan"), device=cost.device)
        for k in range(self.steps):
            h = ot.semi_dual(cost, potential_values(self.g, ft), w, self.eps)
            if k == 0:
                first = h.detach()
            self.opt.zero_grad(set_to_none=True)
            (-h.sum()).backward()
            self.opt.step()
        return first

    def loss(self, cost: Tensor, ft: Tensor, ids: Tensor | None, w: Tensor) -> Tensor:
        return ot.semi_dual(cost, potential_values(self.g, ft, frozen=True), w, self.eps)

    def state_dict(self) -> dict[str, Any]:
        return {}  # g and its optimiser are checkpointed by their owner

    def load_state_dict(self, state: dict[str, Any]) -> None:
        pass


class VectorSolver:
    """A free potential per target sample (``n_target`` entries), ascended by SGD.

    Parameters
    ----------
    n_target : size of the whole target set (ids index into it).
    eps : entropic regularisation of the semi-dual; for a stack of ``members``, a tensor of one
        value per member (each > 0).
    lr : step size of the per-sample ascent (on :math:`b_t H`).
    steps : ascent steps per mini-batch.
    members : ``None``: one potential ``v`` of shape ``(n_target,)``; else ``(members, n_target)``.
    """

    def __init__(self, n_target: int, eps: float | Tensor, lr: float, steps: int, device: torch.device | str = "cpu",
                 members: int | None = None):
        self.v = torch.zeros(n_target if members is None else (members, n_target), device=device)
        self.eps, self.lr, self.steps = eps, lr, steps

    def _need(self, ids: Tensor | None) -> Tensor:
        if ids is None:
            raise ValueError("The 'vector' OT solver needs the target sample ids of the batch (pass ids to Trainer.step).")
        return ids.to(self.v.device).long()

    def _step_size(self, b_t: int, grad: Tensor) -> float | Tensor:
        """POT's SAG step, ``lr * eps * b_t`` (``eps / max(a)``), in float64 as Python computes it."""
        if isinstance(self.eps, Tensor):
            return (self.eps.to(torch.float64) * self.lr * b_t).to(grad.dtype)[..., None]
        return self.lr * (self.eps or 1.0) * b_t

    def ascend(self, cost: Tensor, ft: Tensor, ids: Tensor | None, w: Tensor) -> Tensor:
        ids = self._need(ids)
        first = torch.full(cost.shape[:-2], float("nan"), device=cost.device)
        for k in range(self.steps):
            g = self.v[..., ids].clone().requires_grad_(True)
            h = ot.semi_dual(cost, g, w, self.eps)
            if k == 0:
                first = h.detach()
            (grad,) = torch.autograd.grad(h.sum(), g)
            self.v[..., ids] += self._step_size(len(ids), grad) * grad
        return first

    def loss(self, cost: Tensor, ft: Tensor, ids: Tensor | None, w: Tensor) -> Tensor:
        return ot.semi_dual(cost, self.v[..., self._need(ids)], w, self.eps)

    def state_dict(self) -> dict[str, Any]:
        return {"v": self.v.cpu().clone()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if "v" in state:
            self.v = state["v"].to(self.v.device)


class SinkhornSolver:
    """Entropic OT on each mini-batch (log-domain Sinkhorn); ``L_OT`` is the plan's cost."""

    def __init__(self, eps: float | Tensor, iters: int):
        self.eps, self.iters = eps, iters
        self._cached: tuple[Tensor, Tensor, Tensor] | None = None  # (cost, w, plan) of the last ascend

    def plan(self, cost: Tensor, w: Tensor) -> Tensor:
        b = torch.full((*cost.shape[:-2], cost.shape[-1]), 1.0 / cost.shape[-1], dtype=cost.dtype, device=cost.device)
        return sinkhorn_log(cost.detach(), w.detach().to(cost.dtype), b, self.eps, self.iters)

    def ascend(self, cost: Tensor, ft: Tensor, ids: Tensor | None, w: Tensor) -> Tensor:
        """Solve the batch; the plan is kept for the feature step on the same batch."""
        plan = self.plan(cost, w)
        self._cached = (cost.detach(), w.detach(), plan)
        return (plan * cost).sum((-2, -1)).detach()

    def loss(self, cost: Tensor, ft: Tensor, ids: Tensor | None, w: Tensor) -> Tensor:
        r""":math:`\langle P, \tilde C\rangle`, reusing the plan of :meth:`ascend` when it was given the same
        cost and weights: the same tensors' memory, unchanged since (compared by address and version
        counter, never by value: that would read the device from the host)."""
        cached, self._cached = self._cached, None
        plan = cached[2] if cached is not None and _same(cached[0], cost) and _same(cached[1], w) else self.plan(cost, w)
        return (plan * cost).sum((-2, -1))

    def state_dict(self) -> dict[str, Any]:
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        pass


def _same(kept: Tensor, given: Tensor) -> bool:
    """Whether ``given`` is ``kept`` (a detached view of it, or it): the same memory and layout,
    not written since (tensor metadata only)."""
    return (kept.data_ptr() == given.data_ptr() and kept.shape == given.shape and kept.stride() == given.stride()
            and kept.dtype == given.dtype and kept._version == given._version)


Solver = NetSolver | VectorSolver | SinkhornSolver


def build_solver(config: Any, g: Any, opt_g: Any, n_target: int, device: torch.device | str = "cpu",
                 eps: float | Tensor | None = None) -> Solver:
    """The solver named by ``config.ot_solver`` (``net`` uses ``g`` and ``opt_g``: one member's
    module and optimiser, or a stack's; ``eps``: the members' values, default ``config.eps``)."""
    name = getattr(config, "ot_solver", "net")
    eps = config.eps if eps is None else eps
    if name == "net":
        return NetSolver(g, opt_g, eps, config.g_steps)
    if name == "vector":
        return VectorSolver(n_target, eps, config.lr_vector, config.g_steps, device,
                            members=len(eps) if isinstance(eps, Tensor) else None)
    if name == "sinkhorn":
        return SinkhornSolver(eps, config.sinkhorn_iters)
    raise ValueError(f"The 'ot_solver' parameter must be one of {', '.join(map(repr, OT_SOLVERS))}. Got {name!r} instead.")


def entropic_value(cost: Tensor, plan: Tensor, a: Tensor, b: Tensor, eps: float) -> float:
    r""":math:`\langle P, C\rangle + \varepsilon\,\mathrm{KL}(P\,\|\,ab^\top)` (the primal entropic value)."""
    ab = a[:, None] * b[None, :]
    pos = plan > 0
    kl = (plan[pos] * torch.log(plan[pos] / ab[pos])).sum() - plan.sum() + ab.sum()
    return float((plan * cost).sum() + eps * kl)


__all__ = ["OT_SOLVERS", "SampleIds", "sinkhorn_log", "NetSolver", "VectorSolver", "SinkhornSolver",
           "build_solver", "entropic_value"]
