"""Label-free validators: scores of a trained model computed without target labels.

Every validator is a pure function of tensors and is computed for a whole population at once: its
inputs carry the members as leading dimensions (target probabilities ``[..., N, K]``, features
``[..., N, d]``) and it returns a float64 tensor ``[...]`` on the inputs' device, one score per
member, without reading anything on the host (:func:`ssot.evaluation.evaluate` reads an epoch's
table once). A run is a stack of one member. Their names and whether higher (``max``) or lower
(``min``) is better are declared in the metric registry, :mod:`ssot.results.metrics`
(:data:`DIRECTIONS`, :data:`EPOCH_VALIDATORS`, :func:`worst_value` are re-exported here); the
search also writes the directions into ``experiment.json``. ``tests/ssot/test_validators.py``
checks each against its published formula on small arrays, and DEV's batched solver against the
per-fit L-BFGS it replaced.

PDA caveat: ``im`` and ``mixval`` (and, less directly, ``snd`` and ``bnm``) reward predictions
spread over *all* classes, which is false in partial domain adaptation, where the target holds only
a subset of the source classes. They are implemented as published; ``im_pda`` is the PDA-aware
variant of IM (diversity only over classes whose estimated target share is not negligible).

References
----------
.. [1] Saito, K., Kim, D., Teterwak, P., Sclaroff, S., Darrell, T., Saenko, K. "Tune it the Right
   Way: Unsupervised Validation of Domain Adaptation via Soft Neighborhood Density." ICCV 2021.
.. [2] You, K., Wang, X., Long, M., Jordan, M. "Towards Accurate Model Selection in Deep
   Unsupervised Domain Adaptation." ICML 2019.
.. [3] Hu, D., Liang, J., Liew, J. H., Xue, C., Bai, S., Wang, X. "Mixed Samples as Probes for
   Unsupervised Model Selection in Domain Adaptation." NeurIPS 2023.
.. [4] Cui, S., Wang, S., Zhuo, J., Li, L., Huang, Q., Tian, Q. "Towards Discriminability and
   Diversity: Batch Nuclear-norm Maximization under Label Insufficient Situations." CVPR 2020.
.. [5] Morerio, P., Cavazza, J., Murino, V. "Minimal-Entropy Correlation Alignment for
   Unsupervised Deep Domain Adaptation." ICLR 2018 (entropy as a validator).
.. [6] Salvador, T., Fatras, K., Mitliagkas, I., Oberman, A. "A Reproducible and Realistic
   Evaluation of Partial Domain Adaptation Methods." TMLR 2023 (BenchmarkPDA).
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import torch
import torch.nn.functional as F
from torch import Tensor

# The names, directions and worst values of the validators are declared in the metric registry
# (torch-free, so that the analysis reads them without torch): re-exported here.
from ssot.results.metrics import DIRECTIONS, EPOCH_VALIDATORS, LABEL_FREE, SEARCH_METRICS, worst_value  # noqa: F401

_TINY = 1e-12

#: DEV's cross-fitting: folds of the held-out source and of the target (:func:`domain_weights`).
DEV_FOLDS = 5
#: The penalties DEV's domain classifier chooses from, by out-of-fold log-loss (fitted strongest first).
DEV_L2 = (0.3, 0.1, 0.03)
#: Newton steps of DEV's domain classifiers, ``(steps, fresh)``: from the zero start at the strongest
#: penalty, and from the previous penalty's solution at each next one; the first ``fresh`` steps
#: compute the curvature afresh, the later ones reuse the last (a fixed schedule: nothing is read on
#: the host to stop early; measured to reach the optimum to the float64 rounding of the gradient,
#: :func:`domain_weights`).
DEV_STEPS = ((12, 6), (9, 3))
#: Newton steps of DEV's domain classifiers at each penalty from the member's classifiers of its
#: previous evaluation (:class:`DevStart`), ``(steps, fresh)`` as in :data:`DEV_STEPS`: measured on
#: consecutive epochs of P2H population members to reach the optimum as closely as the cold
#: schedule (docs/screening.md, ``benchmarks/dev_solvers.py``).
DEV_WARM_STEPS = (10, 2)
#: Members of a stack whose DEV is solved at once on a GPU: about this many float64 elements of
#: their standardised features (256 MB), one member at least.
DEV_CHUNK_ELEMENTS = 1 << 25
#: SND's similarities are computed in blocks of rows of about this many elements (all members).
SND_CHUNK_ELEMENTS = 1 << 24


def _row_entropy(p: Tensor) -> Tensor:
    return -(p * torch.log(p.clamp_min(_TINY))).sum(-1)


def entropy(probs: Tensor) -> Tensor:
    r"""Mean prediction entropy on the target (lower is better) [5]_, of ``probs`` ``[..., N, K]``.

    .. math:: \mathrm{Ent} = -\frac1N \sum_{i=1}^N \sum_k p_{ik} \log p_{ik}
    """
    return _row_entropy(probs.double()).mean(-1)


def im(probs: Tensor) -> Tensor:
    r"""Information maximisation: diversity minus mean entropy (higher is better).

    .. math:: \mathrm{IM} = H(\bar p) - \frac1N \sum_i H(p_i), \qquad \bar p = \frac1N \sum_i p_i

    Rewards using all K classes, which PDA targets do not (see :func:`im_pda`).
    """
    p = probs.double()
    return _row_entropy(p.mean(-2)) - _row_entropy(p).mean(-1)


def im_pda(probs: Tensor, threshold: float = 0.5) -> Tensor:
    r"""PDA-aware IM: diversity only over the classes the model believes are in the target.

    With :math:`\bar p` the mean prediction and :math:`\mathcal{K} = \{k : \bar p_k \ge \tau / K\}`
    (classes with at least ``threshold`` times the uniform share),

    .. math:: \mathrm{IM}_{PDA} = H\big(\bar p_{\mathcal K} / \textstyle\sum_{k\in\mathcal K} \bar p_k\big) - \frac1N \sum_i H(p_i)

    so a model that predicts only the shared classes, evenly, is not penalised for ignoring the
    outlier classes. An original variant of ours (not a published validator).
    """
    p = probs.double()
    pbar = p.mean(-2)
    kept = torch.where(pbar >= threshold / p.shape[-1], pbar, 0.0)
    return _row_entropy(kept / kept.sum(-1, keepdim=True)) - _row_entropy(p).mean(-1)


def bnm(probs: Tensor) -> Tensor:
    r"""Batch nuclear norm of the target prediction matrix over N (higher is better) [4]_.

    .. math:: \mathrm{BNM} = \frac{\lVert P \rVert_*}{N}, \qquad P \in [0,1]^{N \times K}

    The singular values are the square roots of the eigenvalues of the ``K x K`` matrix
    :math:`P^\top P` (float64; the small ones lose about half their digits, which moves BNM by
    about :math:`K \sqrt{\epsilon N} / N`, under 1e-8): one batched symmetric eigensolve for every
    member instead of an SVD of each ``N x K`` matrix.
    """
    p = probs.double()
    return torch.linalg.eigvalsh(p.mT @ p).clamp_min(0).sqrt().sum(-1) / p.shape[-2]


def snd(probs: Tensor, temperature: float = 0.05) -> Tensor:
    r"""Soft neighbourhood density (higher is better) [1]_.

    With :math:`z_i = p_i / \lVert p_i \rVert` and :math:`s_{ij} = z_i^\top z_j` for :math:`j \ne i`,

    .. math:: q_{ij} = \frac{\exp(s_{ij}/T)}{\sum_{l \ne i} \exp(s_{il}/T)}, \qquad
              \mathrm{SND} = -\frac1N \sum_i \sum_{j \ne i} q_{ij} \log q_{ij}, \quad T = 0.05.

    Computed in blocks of rows (:data:`SND_CHUNK_ELEMENTS` similarities at a time, every member's),
    on the softmax outputs as in the authors' and pytorch-adapt's default.
    """
    z = F.normalize(probs.double(), dim=-1)
    n = z.shape[-2]
    rows = max(1, SND_CHUNK_ELEMENTS // max(1, n * math.prod(z.shape[:-2])))
    total = torch.zeros(z.shape[:-2], dtype=torch.float64, device=z.device)
    for start in range(0, n, rows):
        sim = z[..., start:start + rows, :] @ z.mT / temperature
        i = torch.arange(sim.shape[-2], device=z.device)
        sim[..., i, i + start] = -torch.inf  # exclude j == i
        total = total + _row_entropy(torch.softmax(sim, dim=-1)).sum(-1)
    return total / n


def mixval_partners(n: int, seed: int = 0) -> Tensor:
    r"""MixVal's pairing of a target set of ``n`` samples: ``partner[i]`` is mixed into sample ``i``.

    A seeded random cycle over the whole set: with :math:`\pi` a random permutation (a private
    generator seeded by ``seed``), :math:`\mathrm{partner}(\pi_j) = \pi_{(j+1) \bmod n}`. Every
    sample is the dominant one of one pair and the minor one of another, no sample is paired with
    itself (``n >= 2``), and the pairs depend on ``seed`` and ``n`` only: not on the evaluation
    batch size, the data order or the global random state. The authors' code pairs each batch with
    its reverse over a target list shuffled once per run [3]_; this is that random pairing without
    the batch boundary.
    """
    order = torch.randperm(n, generator=torch.Generator().manual_seed(seed))
    partner = torch.empty(n, dtype=torch.long)
    partner[order] = order.roll(-1)
    return partner


def mixval_counts(probs_mixed: Tensor, pseudo: Tensor, partner: Tensor) -> Tensor:
    r"""MixVal's counts [3]_ from the predictions ``[..., N, K]`` on the mixed pairs
    ``lam x_i + (1 - lam) x_{partner(i)}`` (lam > 1/2) and the pseudo-labels ``[..., N]`` of the
    unmixed samples: ``[..., 4]`` float64, ``(correct inter, n inter, correct intra, n intra)``.

    The mixed sample's label is the dominant pseudo-label ``pseudo[i]``. Pairs with different
    pseudo-labels are inter-cluster, equal ones intra-cluster.
    """
    hit = probs_mixed.argmax(-1) == pseudo
    inter = pseudo != pseudo[..., partner]
    return torch.stack([(hit & inter).sum(-1), inter.sum(-1), (hit & ~inter).sum(-1), (~inter).sum(-1)], -1).double()


def mixval(counts: Tensor) -> dict[str, Tensor]:
    r"""MixVal's inter- and intra-cluster mixup accuracies and their mean (higher is better) [3]_,
    from :func:`mixval_counts` ``[..., 4]``.

    .. math:: \mathrm{ICE}_{inter} = \frac{1}{|\mathcal I|}\sum_{(a,b) \in \mathcal I}
              \mathbb 1[\arg\max f(\lambda x_a + (1-\lambda) x_b) = \hat y_a], \quad \lambda = 0.55

    over inter-cluster pairs :math:`\hat y_a \ne \hat y_b` (intra: :math:`\hat y_a = \hat y_b`).
    The paper combines the two by averaging their *ranks* over the candidate models; one run has
    no candidates, so ``mixval`` is the mean of the two accuracies (NaN where a kind has no pair).
    """
    counts = counts.double()
    inter = torch.where(counts[..., 1] > 0, counts[..., 0] / counts[..., 1], torch.nan)
    intra = torch.where(counts[..., 3] > 0, counts[..., 2] / counts[..., 3], torch.nan)
    return {"mixval_inter": inter, "mixval_intra": intra, "mixval": torch.stack([inter, intra], -1).nanmean(-1)}


def dev_risk(weights: Tensor, losses: Tensor) -> Tensor:
    r"""Deep embedded validation risk with its control variate (lower is better) [2]_, of importance
    weights and per-sample losses ``[..., n]`` on held-out source samples.

    With :math:`L_i = w_i \ell_i`,

    .. math:: \eta = -\frac{\widehat{\mathrm{Cov}}(L, w)}{\widehat{\mathrm{Var}}(w)}, \qquad
              \mathrm{DEV} = \overline{L} + \eta\, \overline{w} - \eta

    (unbiased sample covariance and variance, as in the authors' code); the plain weighted mean
    where the weights do not vary.
    """
    w, loss = weights.double(), losses.double()
    weighted = w * loss
    n = w.shape[-1]
    var_w = w.var(-1) if n > 1 else torch.full(w.shape[:-1], torch.nan, dtype=torch.float64, device=w.device)
    cov = ((weighted - weighted.mean(-1, keepdim=True)) * (w - w.mean(-1, keepdim=True))).sum(-1) / max(1, n - 1)
    eta = -cov / var_w
    plain = weighted.mean(-1)
    return torch.where(torch.isfinite(var_w) & (var_w > 0), plain + eta * w.mean(-1) - eta, plain)


def _cross_fitting(ns: int, nt: int, folds: int, seed: int) -> tuple[int, Tensor, list[int], list[float]]:
    """DEV's folds, made on the host from the sizes only (the same for every member): the number
    of folds ``k``, each sample's fold (source then target), the fold sizes and each fold's
    classifier's log-odds of the domains it fits, ``log(n_source_fit / n_target_fit)``."""
    k = max(1, min(folds, ns, nt))
    gen = torch.Generator().manual_seed(seed)
    fold = torch.cat([torch.randperm(ns, generator=gen) % k, torch.randperm(nt, generator=gen) % k])
    per_domain = [[n // k + (j < n % k) for j in range(k)] for n in (ns, nt)]  # randperm(n) % k: n // k each, one more below n % k
    sizes = [a + b for a, b in zip(*per_domain)]
    if k == 1:
        odds = [math.log(ns / nt)]
    else:
        odds = [math.log((ns - per_domain[0][j]) / (nt - per_domain[1][j])) for j in range(k)]
    return k, fold, sizes, odds


def domain_weights(feats_source: Tensor, feats_target: Tensor, *, folds: int = DEV_FOLDS, l2: Sequence[float] = DEV_L2,
                   seed: int = 0, steps: tuple[tuple[int, int], tuple[int, int]] = DEV_STEPS) -> Tensor:
    r"""Importance weights :math:`w(x) = \frac{p_t(x)}{p_s(x)}` of the source samples ``[..., ns]``,
    each from a domain classifier that never saw it (cross-fitting) [2]_, for every member of a
    stack at once (features ``[..., ns, d]`` and ``[..., nt, d]``). A member's weights are a
    function of its own features only: on a CPU exactly (the members are solved one after
    another), on a GPU up to the rounding of the batched products (every member takes the same
    steps whatever the others do; ``tests/ssot/test_validators.py``: within 1e-9).

    DEV fits its domain classifier on one split and weighs another (the paper: training-source
    features against the target, applied to the validation features). Here the held-out source and
    the target are each split into ``folds`` seeded folds (the same for every member); for every
    fold :math:`k` a logistic regression on standardised features separates the source (label 0)
    from the target (label 1) on the *other* folds, minimising

    .. math:: f_k(\beta, b) = \frac{1}{n_k}\sum_{i \notin k} \mathrm{BCE}(x_i^\top\beta + b, y_i) + \ell_2 \lVert\beta\rVert^2

    (the intercept unpenalised), and weighs the source samples of fold :math:`k`:

    .. math:: w_i = \frac{n_s^{(-k)}}{n_t^{(-k)}} \exp\big(\beta^{(-k)\top} x_i + b^{(-k)}\big)

    so every source sample gets an out-of-sample weight and the DEV risk keeps all of them. The
    penalty is chosen from ``l2`` by the out-of-fold log-loss of the domain labels (a proper
    scoring rule: the best-calibrated classifier; the authors' code picks its weight decay by
    held-out domain accuracy). ``folds = 1`` fits and weighs the same samples (the in-sample fit,
    biased: in 256 dimensions with a few hundred samples its weights average 0.25-0.45 instead of
    1, see ``tests/ssot/test_validators.py``); with ``folds = 1`` the smallest penalty always wins.
    Deterministic in ``seed``; no draw from the global random state.

    **The solver.** Every member's ``folds`` classifiers are one batched problem, solved by damped
    Newton steps in float64 (the features, the iterates, the gradient and the objective), the
    penalties from the strongest to the weakest, each starting from the previous one's solution
    (``steps``: :data:`DEV_STEPS`, the Newton steps from the zero start and from a warm start).
    Each step solves :math:`H_k \Delta = -\nabla f_k` by a batched Cholesky factorisation
    (``torch.linalg.cholesky_ex``: no host read) and two triangular solves, and takes the whole
    step where it decreases :math:`f_k` by Armijo's rule, else the step length that minimises the
    quadratic upper bound of the logistic loss along it (:math:`p(1 - p) \le 1/4`), a sure
    decrease; the logits after the step come from the one pass over the features it takes
    anyway. The curvature :math:`H_k` is the Hessian of :math:`f_k` with the fold classifiers'
    weights :math:`p_i(1 - p_i)` pooled over the folds that fit sample :math:`i` (the fits differ
    only by a fifth of their samples): every fold's matrix is a sum of the same per-fold blocks,
    one product over the features for all folds instead of one per fold, accumulated in float32
    and factorised in float64, computed afresh at the first steps of each penalty and then kept.
    The curvature sets only the speed of convergence; the point the steps converge to is the zero
    of the float64 gradient, the optimum of :math:`f_k` (strictly convex). With :data:`DEV_STEPS`
    the weights are those of the optimum to 1e-6 relative or better (1e-10 on the embedded tasks'
    features; measured against 40 fresh Newton steps per penalty and against scikit-learn's tight
    solve, docs/screening.md), and DEV agrees with the per-fit L-BFGS this replaced (it stops at a
    gradient of about 5e-6) to that solver's tolerance: weights within 2e-3 relative, DEV within
    1e-4 (``tests/ssot/test_validators.py``, ``benchmarks/dev_weights.py``).

    **The warm start** (:func:`domain_fit`, what the evaluation calls): a member's features change
    little from one epoch to the next, so its classifiers of the previous epoch (every penalty's
    and fold's, :class:`DevStart`, carried by the owner of its training state and saved in its
    checkpoints) start this epoch's solve, each penalty from its own previous solution, by
    :data:`DEV_WARM_STEPS` (10 Newton steps per penalty, the first 2 with a fresh curvature: 6
    curvature refreshes instead of 12). Measured on 24 consecutive-epoch problems of 8 P2H
    population members (``benchmarks/dev_solvers.py``, two runs): the weights within 7.7e-7 and
    7.2e-7 relative of the optimum (the cold schedule's gap on the same problems: 7.8e-7; shorter
    warm schedules were up to 6e-2 away), so the tolerance above holds for both. The first adaptation epoch (no
    previous classifiers), a start of another shape and a non-finite one are solved cold.
    """
    return domain_fit(feats_source, feats_target, folds=folds, l2=l2, seed=seed, steps=steps).weights


class DomainFit(NamedTuple):
    """:func:`domain_fit`'s result: the importance weights ``[..., ns]`` and the domain
    classifiers they come from, ``[..., len(l2), k, d + 1]`` float64 (penalties strongest first,
    folds, the standardised features' coefficients then the intercept): the warm start of the
    member's next evaluation (:class:`DevStart`)."""

    weights: Tensor
    classifiers: Tensor


@dataclass
class DevStart:
    """Every member's domain classifiers of its previous evaluation (:attr:`DomainFit.classifiers`,
    ``[P, len(l2), k, d + 1]``), the warm start of its next DEV (:func:`domain_fit`), and whether
    each member's are usable (all finite: ``usable``, read on the host with the epoch's table,
    :meth:`ssot.evaluation.Evaluation.read`, so that choosing a schedule reads nothing). Owned by
    whoever owns the member's training state (a run's :class:`ssot.trainer.Trainer`, a population's
    :class:`ssot.population.Stack`) and saved in its checkpoints."""

    classifiers: Tensor
    usable: list[bool]

    @staticmethod
    def entries(start: DevStart | None) -> dict[str, Any]:
        """A start as a checkpoint's entries (tensors and plain types: ``torch.load(weights_only=True)``):
        ``dev`` (the classifiers, on the CPU) and ``dev_usable``; none without a start."""
        return {} if start is None else {"dev": start.classifiers.cpu(), "dev_usable": [bool(u) for u in start.usable]}

    @classmethod
    def from_entries(cls, state: dict[str, Any], device: torch.device | str = "cpu") -> DevStart | None:
        """The start of a checkpoint's :meth:`entries` on ``device``; ``None`` without them (a
        checkpoint of before the first adaptation epoch, or of before the warm start)."""
        if state.get("dev") is None:
            return None
        return cls(state["dev"].to(device), [bool(u) for u in state["dev_usable"]])

    def rows(self, index: Sequence[int]) -> DevStart:
        """The members at these positions (host indices: no read)."""
        return DevStart(self.classifiers[torch.tensor(list(index), dtype=torch.long, device=self.classifiers.device)],
                        [self.usable[i] for i in index])


def classifier_shape(ns: int, nt: int, d: int, *, folds: int = DEV_FOLDS, l2: Sequence[float] = DEV_L2) -> tuple[int, int, int]:
    """The shape of one member's domain classifiers (:attr:`DomainFit.classifiers`) for ``ns``
    source and ``nt`` target features of ``d`` dims: penalties, folds, coefficients and intercept."""
    return len(l2), max(1, min(folds, ns, nt)), d + 1


def domain_fit(feats_source: Tensor, feats_target: Tensor, *, start: DevStart | None = None, folds: int = DEV_FOLDS,
               l2: Sequence[float] = DEV_L2, seed: int = 0, steps: tuple[tuple[int, int], tuple[int, int]] = DEV_STEPS,
               warm_steps: tuple[int, int] = DEV_WARM_STEPS, at_once: bool | None = None) -> DomainFit:
    """:func:`domain_weights` and the classifiers they come from (:class:`DomainFit`), every member
    of a stack at once (features ``[P, ns, d]`` and ``[P, nt, d]``, or one member without the
    member dimension).

    With ``start`` (the members' classifiers of their previous evaluation, :class:`DevStart`) a
    member whose start is usable (the shape of this problem, every value finite) is solved from it
    by ``warm_steps`` Newton steps at each penalty, each penalty from its own previous solution
    (:data:`DEV_WARM_STEPS`); the others (and every member when ``start`` is ``None`` or of another
    shape) by the cold schedule ``steps`` from zero. The choice is made on the host from shapes and
    ``start.usable``: nothing is read. A member's result is a function of its own features and
    start only: on a CPU exactly (``at_once`` false, the default there: member by member), on a GPU
    up to the rounding of batched products (``at_once`` true, the default there: the warm members
    in chunks of :data:`DEV_CHUNK_ELEMENTS`, then the cold ones).
    """
    if not l2:
        raise ValueError("domain_fit: l2 holds no penalty")
    batch, (ns, d), nt = feats_source.shape[:-2], feats_source.shape[-2:], feats_target.shape[-2]
    shape = classifier_shape(ns, nt, d, folds=folds, l2=l2)
    warm = start is not None and tuple(start.classifiers.shape) == (math.prod(batch), *shape) and len(start.usable) == math.prod(batch)

    def solve(fs: Tensor, ft: Tensor, begin: Tensor | None) -> tuple[Tensor, Tensor]:
        return _domain_weights(fs, ft, folds, tuple(l2), seed, steps if begin is None else (warm_steps, warm_steps), begin)

    if not batch:
        begin = start.classifiers[0] if warm and start is not None and start.usable[0] else None
        return DomainFit(*solve(feats_source, feats_target, begin))
    fs, ft = feats_source.reshape(-1, ns, d), feats_target.reshape(-1, nt, d)
    members = fs.shape[0]
    usable = [warm and start is not None and start.usable[i] for i in range(members)]
    if not (fs.device.type != "cpu" if at_once is None else at_once):  # member by member (matrix products: a member's bits whatever the stack)
        solved = [solve(fs[i], ft[i], start.classifiers[i] if usable[i] and start is not None else None) for i in range(members)]
        weights, classifiers = torch.stack([w for w, _ in solved]), torch.stack([c for _, c in solved])
    else:  # the warm members and the cold ones, each group in chunks of DEV_CHUNK_ELEMENTS
        weights = fs.new_empty(members, ns, dtype=torch.float64)
        classifiers = fs.new_empty(members, *shape, dtype=torch.float64)
        chunk = max(1, DEV_CHUNK_ELEMENTS // ((ns + nt) * (d + 1)))
        for group in ([i for i in range(members) if usable[i]], [i for i in range(members) if not usable[i]]):
            for part in (group[j:j + chunk] for j in range(0, len(group), chunk)):
                at = torch.tensor(part, dtype=torch.long, device=fs.device)
                begin = start.classifiers[at] if usable[part[0]] and start is not None else None
                w, c = solve(fs[at], ft[at], begin)
                weights.index_copy_(0, at, w)
                classifiers.index_copy_(0, at, c)
    return DomainFit(weights.view(*batch, ns), classifiers.view(*batch, *shape))


def _domain_weights(fs: Tensor, ft: Tensor, folds: int, l2: tuple[float, ...], seed: int,
                    steps: tuple[tuple[int, int], tuple[int, int]], start: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """:func:`domain_fit` of the members ``[..., ns, d]``, ``[..., nt, d]`` solved at once (no
    member dimension: the one member's, with matrix products instead of batched ones), from zero
    or from ``start`` ``[..., len(l2), k, d + 1]``: the weights and the classifiers."""
    device, batch, ns, nt = fs.device, fs.shape[:-2], fs.shape[-2], ft.shape[-2]
    k, fold, sizes, odds = _cross_fitting(ns, nt, folds, seed)
    order = torch.argsort(fold, stable=True)  # the samples by fold: each fold's rows are one block
    fold, order = fold[order].to(device), order.to(device)
    d = fs.shape[-1]
    X = fs.new_empty(*batch, ns + nt, d + 1, dtype=torch.float64)  # [..., n, d + 1], the standardised features, the intercept last
    x = X[..., :d]  # written in place: every large temporary costs a CPU its page faults
    x.copy_(torch.cat([fs, ft], -2).index_select(-2, order))
    x.sub_(x.mean(-2, keepdim=True))
    x.div_((torch.linalg.vector_norm(x, dim=-2, keepdim=True) / math.sqrt(max(1, ns + nt - 1))).clamp_min(1e-6))  # / Tensor.std, 6x faster
    X[..., d] = 1.0
    y = (order >= ns).double()  # target: 1
    fit = (fold != torch.arange(k, device=device)[:, None]).double() if k > 1 else X.new_ones(1, ns + nt)  # [k, n]
    n_fit = fit.sum(-1)
    fit_w = fit / n_fit[:, None]  # each fitted sample's weight in its fold's mean
    pooled_over = fit.sum(0)  # the folds that fit each sample
    log_odds = torch.tensor(odds, dtype=torch.float64).to(device)[fold]  # each sample's fold classifier's domain odds
    penalised = torch.ones(X.shape[-1], dtype=torch.float64, device=device)
    penalised[-1] = 0.0
    blocks = X.float().split(sizes, dim=-2)
    theta = X.new_zeros(*batch, k, X.shape[-1])
    z = X.new_zeros(*batch, k, ns + nt)  # every fold classifier's logits of every sample

    def objective(logits: Tensor, params: Tensor, penalty: float) -> Tensor:
        bce = F.binary_cross_entropy_with_logits(logits, y.expand_as(logits), reduction="none")
        return (bce * fit_w).sum(-1) + penalty * (params[..., :-1] ** 2).sum(-1)

    losses, log_weights, solutions = [], [], []
    for stage, penalty in enumerate(sorted(l2, reverse=True)):  # strongest first: each fit warm-starts the next
        ridge = 2 * penalty * penalised + 1e-10
        total, fresh = steps[0] if stage == 0 else steps[1]
        if start is not None:  # from this penalty's classifiers of the previous evaluation
            theta = start[..., stage, :, :].to(X)
            z = theta @ X.mT
        for it in range(total):
            p = torch.sigmoid(z)
            grad = ((p - y) * fit_w) @ X + 2 * penalty * penalised * theta  # [..., k, d + 1]
            if it < fresh:  # then the same curvature (the last steps are short)
                s = ((p * (1 - p) * fit).sum(-2) / pooled_over).float().split(sizes, dim=-1)  # pooled over the fits
                gram = torch.stack([b.mT @ (b * w[..., None]) for b, w in zip(blocks, s)], -3)  # [..., k, d + 1, d + 1]
                curvature = ((gram.sum(-3, keepdim=True) - gram) if k > 1 else gram) * (1 / n_fit.float())[:, None, None]
                curvature = curvature.double()
                curvature.diagonal(dim1=-2, dim2=-1).add_(ridge)
                factor = torch.linalg.cholesky_ex(curvature)[0]  # no host read
            step = -_cholesky_solve(factor, grad)
            z_full = (theta + step) @ X.mT  # the logits after a whole step
            slope = (grad * step).sum(-1)  # < 0: a descent direction
            now = objective(z, theta, penalty)  # Armijo's rule, blind to the float64 rounding of the sums near the optimum
            whole = objective(z_full, theta + step, penalty) <= now + 1e-4 * slope + 64 * torch.finfo(now.dtype).eps * now.abs()
            # else the step that minimises the logistic loss's quadratic upper bound along it (p(1 - p) <= 1/4): a sure decrease
            bound = ((z_full - z) ** 2 * fit_w).sum(-1) / 4 + 2 * penalty * (step[..., :-1] ** 2).sum(-1)
            length = torch.where(whole, 1.0, (-slope / bound.clamp_min(1e-300)).clamp(0.0, 1.0))
            theta = theta + length[..., None] * step
            z = torch.lerp(z, z_full, length[..., None])
        solutions.append(theta)
        held = z.gather(-2, fold.expand(*batch, 1, -1)).squeeze(-2)  # each sample's logit by the classifier that did not fit it
        losses.append(F.binary_cross_entropy_with_logits(held, y.expand_as(held), reduction="none").mean(-1))
        log_weights.append(held + log_odds)
    best = torch.stack(losses).argmin(0)  # ties: the stronger penalty
    chosen = torch.stack(log_weights).gather(0, best[None, ..., None].expand(1, *batch, ns + nt))[0]  # by fold order
    position = torch.empty_like(order)
    position[order] = torch.arange(ns + nt, device=device)
    return torch.exp(chosen[..., position[:ns]].clamp(-30, 30)), torch.stack(solutions, -3)


def _cholesky_solve(factor: Tensor, rhs: Tensor) -> Tensor:
    """``x`` with ``L L^T x = rhs`` (``rhs`` ``[..., d]``) by two triangular solves (``cholesky_solve``
    copies the factor at every call)."""
    half = torch.linalg.solve_triangular(factor, rhs[..., None], upper=False)
    return torch.linalg.solve_triangular(factor.mT, half, upper=True)[..., 0]


def dev(feats_source: Tensor, losses_source: Tensor, feats_target: Tensor) -> Tensor:
    """DEV [2]_ from held-out source features ``[..., ns, d]`` and losses ``[..., ns]`` and target
    features ``[..., nt, d]`` (lower is better), ``[...]``."""
    return dev_risk(domain_weights(feats_source, feats_target), losses_source)
