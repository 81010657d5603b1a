r"""The optimal-transport maths of SSOT, as pure tensor functions.

Notation (one mini-batch): source features :math:`F_s \in \mathbb{R}^{b_s \times d}` with labels
:math:`y`, target features :math:`F_t \in \mathbb{R}^{b_t \times d}`, class-probability predictions
:math:`P_s, P_t`, potential values :math:`g_j = g(f^t_j)`.

- cost :math:`C_{ij} = \|f^s_i - f^t_j\|^2`
- soft mask :math:`S = \mathrm{softmax}_j(1 - P_s P_t^\top)` (rows sum to 1)
- masked cost :math:`\tilde C = S \odot C`
- entropic c-transform, :math:`\varepsilon > 0`:
  :math:`g^{\tilde c,\varepsilon}_i = -\varepsilon \log \frac{1}{b_t}\sum_j \exp((g_j - \tilde C_{ij})/\varepsilon)`;
  :math:`\varepsilon = 0`: :math:`g^{\tilde c}_i = \min_j (\tilde C_{ij} - g_j)`
- semi-dual :math:`H = \sum_i w_i g^{\tilde c,\varepsilon}_i + \frac{1}{b_t}\sum_j g_j - \varepsilon`,
  :math:`w_i = m_{y_i} / \sum_k m_{y_k}`.

For a fixed cost, :math:`\max_g H` equals the entropic OT value with KL regularisation
(``ot.solve(M, a=w, b=uniform, reg=eps, reg_type="KL").value``) minus :math:`\varepsilon`.

Every function also takes a stack of problems: leading dimensions (one per member of a
population, :mod:`ssot.population`, or the one member of a run, :mod:`ssot.method`) before the
shapes documented below, with ``eps`` a tensor of one value per problem; member ``p`` of the stack
gets exactly the result of the call on its slice. No function reads a tensor on the host.

Stacks
------
A batched product (``bmm``) sums in another order than the member's own 2-d product in its
backward pass, and training amplifies the last-bit differences (docs/screening.md, "How far a
member drifts from its independent run"). On a CPU, where a loop of small products costs about
what one batched product does, :func:`soft_mask` therefore computes each member's product on its
own: a member of a population gets the bits of its independent run. On a GPU the product is
batched (one kernel for every member).
"""
from __future__ import annotations

import math

import torch
from torch import Tensor


def cost_matrix(fs: Tensor, ft: Tensor) -> Tensor:
    r"""Squared Euclidean cost :math:`C_{ij} = \|f^s_i - f^t_j\|^2`, shape ``(b_s, b_t)``.

    Computed from the expanded difference rather than ``|a|^2 + |b|^2 - 2ab``: exact (never
    negative) and the batch is small, so the ``b_s x b_t x d`` intermediate is cheap.
    """
    diff = fs[..., :, None, :] - ft[..., None, :, :]
    return (diff * diff).sum(-1)  # the bits of diff.pow(2), forward and backward, at a tenth of its time on a CPU


def soft_mask(ps: Tensor, pt: Tensor) -> Tensor:
    r"""Soft mask :math:`S = \mathrm{softmax}_j(1 - P_s P_t^\top)`, shape ``(b_s, b_t)``.

    ``ps`` and ``pt`` are class probabilities (rows on the simplex). Each row of ``S`` sums to 1;
    pairs predicted to share a class (large :math:`p_s^\top p_t`) get a *smaller* weight, so their
    transport is cheaper.
    """
    if ps.dim() == 3 and ps.device.type == "cpu":  # each member's own product (module docstring, "Stacks")
        return torch.stack([torch.softmax(1.0 - a @ b.T, dim=-1) for a, b in zip(ps, pt)])
    return torch.softmax(1.0 - ps @ pt.transpose(-1, -2), dim=-1)


def c_transform(cost: Tensor, g: Tensor, eps: float | Tensor) -> Tensor:
    r"""The (entropic) c-transform of the target potential ``g`` for every source row.

    Parameters
    ----------
    cost : ``(b_s, b_t)`` cost matrix (masked or not).
    g : ``(b_t,)`` potential values on the target samples.
    eps : regularisation; ``eps > 0`` uses a log-sum-exp (stable for any cost scale),
        ``eps == 0`` the hard minimum :math:`\min_j (C_{ij} - g_j)`. For a stack of problems, a
        tensor of one ``eps > 0`` per problem, not checked here (a check would read the tensor on
        the host, a device sync in every step): the config and :func:`ssot.population.check_members`
        validate it where it enters.

    Returns
    -------
    ``(b_s,)`` tensor
        :math:`-\varepsilon \log \frac{1}{b_t}\sum_j \exp((g_j - C_{ij})/\varepsilon)`, or the hard min.
    """
    b_t = cost.shape[-1]
    if isinstance(eps, Tensor):  # validated where it enters (never read here: that would sync a device)
        return -eps[..., None] * (torch.logsumexp((g[..., None, :] - cost) / eps[..., None, None], dim=-1) - math.log(b_t))
    if eps < 0:
        raise ValueError(f"The 'eps' parameter must be a float in [0, inf). Got {eps!r} instead.")
    if eps == 0:
        return (cost - g[..., None, :]).min(dim=-1).values
    return -eps * (torch.logsumexp((g[..., None, :] - cost) / eps, dim=-1) - math.log(b_t))


def source_weights(m: Tensor, ys: Tensor) -> Tensor:
    r"""Per-sample source weights :math:`w_i = m_{y_i} / \sum_k m_{y_k}` (sum to 1).

    When every sample of the batch has weight 0 (a batch drawn only from classes judged absent
    from the target), the weights stay 0 rather than dividing by zero.
    """
    mw = m[..., ys]
    return mw / mw.sum(-1, keepdim=True).clamp_min(torch.finfo(mw.dtype).tiny)


def semi_dual(cost: Tensor, g: Tensor, w: Tensor, eps: float | Tensor) -> Tensor:
    r"""Weighted semi-dual value :math:`H = \sum_i w_i g^{c,\varepsilon}_i + \mathrm{mean}_j g_j - \varepsilon`.

    ``w`` are the source weights (summing to 1; uniform ``1/b_s`` for the unweighted problem).
    ``g`` ascends ``H``; the feature extractor descends it (``L_OT``).
    """
    return (w * c_transform(cost, g, eps)).sum(-1) + g.mean(-1) - eps


def class_weights(p_t: Tensor, p_s: Tensor) -> Tensor:
    r"""Importance weights :math:`m_k = p^t_k / p^s_k`, normalised so :math:`\sum_k p^s_k m_k = 1`.

    ``p_s``: source label frequencies; ``p_t``: mean target prediction. A class with no source
    sample gets weight 0. With ``p_t`` on the simplex the normalisation is already 1 up to
    rounding; it is enforced so that the source-weighted mean of ``m`` is exactly 1.
    """
    m = torch.where(p_s > 0, p_t / p_s.clamp_min(torch.finfo(p_s.dtype).tiny), torch.zeros_like(p_t))
    return m / (p_s * m).sum(-1, keepdim=True).clamp_min(torch.finfo(m.dtype).tiny)


def entropy(p: Tensor) -> Tensor:
    r"""Mean Shannon entropy :math:`-\frac1n\sum_j\sum_k p_{jk}\log p_{jk}` of probability rows."""
    return -(p * torch.log(p.clamp_min(1e-12))).sum(dim=-1).mean(-1)


def label_frequencies(labels: Tensor, num_classes: int) -> Tensor:
    """Empirical class frequencies ``p_s`` of integer ``labels`` (sums to 1)."""
    counts = torch.bincount(labels, minlength=num_classes).to(torch.float64)
    return (counts / counts.sum()).to(torch.float32)
