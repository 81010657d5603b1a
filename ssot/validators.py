"""Label-free validators: scores of a trained model computed without target labels.

Every validator is a pure function of tensors (target probabilities, features, ...) and returns a
float. Their names and whether higher (``max``) or lower (``min``) is better are declared in the
metric registry, :mod:`ssot.results.metrics` (:data:`DIRECTIONS`, :data:`EPOCH_VALIDATORS`,
:func:`worst_value` are re-exported here); the search also writes the directions into
``experiment.json``.

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

import numpy as np
import torch
import torch.nn.functional as F

# The names, directions and worst values of the validators are declared in the metric registry
# (torch-free, so that the analysis reads them without torch): re-exported here.
from ssot.results.metrics import DIRECTIONS, EPOCH_VALIDATORS, LABEL_FREE, SEARCH_METRICS, worst_value  # noqa: F401

_TINY = 1e-12

#: DEV's cross-fitting: folds of the held-out source and of the target (:func:`domain_weights`).
DEV_FOLDS = 5
#: The penalties DEV's domain classifier chooses from, by out-of-fold log-loss.
DEV_L2 = (0.3, 0.1, 0.03)


def _row_entropy(p: torch.Tensor) -> torch.Tensor:
    return -(p * torch.log(p.clamp_min(_TINY))).sum(-1)


def entropy(probs: torch.Tensor) -> float:
    r"""Mean prediction entropy on the target (lower is better) [5]_.

    .. math:: \mathrm{Ent} = -\frac1N \sum_{i=1}^N \sum_k p_{ik} \log p_{ik}
    """
    return float(_row_entropy(probs.double()).mean())


def im(probs: torch.Tensor) -> float:
    r"""Information maximisation: diversity minus mean entropy (higher is better).

    .. math:: \mathrm{IM} = H(\bar p) - \frac1N \sum_i H(p_i), \qquad \bar p = \frac1N \sum_i p_i

    Rewards using all K classes, which PDA targets do not (see :func:`im_pda`).
    """
    p = probs.double()
    return float(_row_entropy(p.mean(0)) - _row_entropy(p).mean())


def im_pda(probs: torch.Tensor, threshold: float = 0.5) -> float:
    r"""PDA-aware IM: diversity only over the classes the model believes are in the target.

    With :math:`\bar p` the mean prediction and :math:`\mathcal{K} = \{k : \bar p_k \ge \tau / K\}`
    (classes with at least ``threshold`` times the uniform share),

    .. math:: \mathrm{IM}_{PDA} = H\big(\bar p_{\mathcal K} / \textstyle\sum_{k\in\mathcal K} \bar p_k\big) - \frac1N \sum_i H(p_i)

    so a model that predicts only the shared classes, evenly, is not penalised for ignoring the
    outlier classes. An original variant of ours (not a published validator).
    """
    p = probs.double()
    pbar = p.mean(0)
    keep = pbar >= threshold / p.shape[1]
    q = pbar[keep] / pbar[keep].sum()
    return float(_row_entropy(q) - _row_entropy(p).mean())


def bnm(probs: torch.Tensor) -> float:
    r"""Batch nuclear norm of the target prediction matrix over N (higher is better) [4]_.

    .. math:: \mathrm{BNM} = \frac{\lVert P \rVert_*}{N}, \qquad P \in [0,1]^{N \times K}
    """
    return float(torch.linalg.matrix_norm(probs.double(), ord="nuc") / probs.shape[0])


def snd(probs: torch.Tensor, temperature: float = 0.05, chunk: int = 1024) -> float:
    r"""Soft neighbourhood density (higher is better) [1]_.

    With :math:`z_i = p_i / \lVert p_i \rVert` and :math:`s_{ij} = z_i^\top z_j` for :math:`j \ne i`,

    .. math:: q_{ij} = \frac{\exp(s_{ij}/T)}{\sum_{l \ne i} \exp(s_{il}/T)}, \qquad
              \mathrm{SND} = -\frac1N \sum_i \sum_{j \ne i} q_{ij} \log q_{ij}, \quad T = 0.05.

    Computed in row chunks (memory ``chunk x N``), on the softmax outputs as in the authors' and
    pytorch-adapt's default.
    """
    z = F.normalize(probs.double(), dim=1)
    n = z.shape[0]
    total = 0.0
    for start in range(0, n, chunk):
        sim = z[start:start + chunk] @ z.T / temperature
        rows = torch.arange(sim.shape[0])
        sim[rows, rows + start] = -torch.inf  # exclude j == i
        q = torch.softmax(sim, dim=1)
        total += float(_row_entropy(q).sum())
    return total / n


def mixval_partners(n: int, seed: int = 0) -> torch.Tensor:
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


def mixval_scores(probs_mixed: torch.Tensor, pseudo_a: torch.Tensor, pseudo_b: torch.Tensor) -> tuple[float, int, float, int]:
    r"""Counts for MixVal [3]_ from predictions on mixed pairs ``lam x_a + (1 - lam) x_b`` (lam > 1/2).

    The mixed sample's label is the dominant pseudo-label ``pseudo_a``. Pairs with different
    pseudo-labels are inter-cluster, equal ones intra-cluster. Returns
    ``(correct_inter, n_inter, correct_intra, n_intra)`` so the caller can sum over batches.
    """
    hit = probs_mixed.argmax(1) == pseudo_a
    inter = pseudo_a != pseudo_b
    return float(hit[inter].sum()), int(inter.sum()), float(hit[~inter].sum()), int((~inter).sum())


def mixval(correct_inter: float, n_inter: int, correct_intra: float, n_intra: int) -> dict[str, float]:
    r"""MixVal's inter- and intra-cluster mixup accuracies and their mean (higher is better) [3]_.

    .. math:: \mathrm{ICE}_{inter} = \frac{1}{|\mathcal I|}\sum_{(a,b) \in \mathcal I}
              \mathbb 1[\arg\max f(\lambda x_a + (1-\lambda) x_b) = \hat y_a], \quad \lambda = 0.55

    over inter-cluster pairs :math:`\hat y_a \ne \hat y_b` (intra: :math:`\hat y_a = \hat y_b`).
    The paper combines the two by averaging their *ranks* over the candidate models; one run has
    no candidates, so ``mixval`` is the mean of the two accuracies (NaN where a kind has no pair).
    """
    inter = correct_inter / n_inter if n_inter else float("nan")
    intra = correct_intra / n_intra if n_intra else float("nan")
    both = [v for v in (inter, intra) if v == v]
    return {"mixval_inter": inter, "mixval_intra": intra, "mixval": float(np.mean(both)) if both else float("nan")}


def dev_risk(weights: torch.Tensor, losses: torch.Tensor) -> float:
    r"""Deep embedded validation risk with its control variate (lower is better) [2]_.

    With importance weights :math:`w_i` and per-sample losses :math:`\ell_i` on held-out source
    samples, :math:`L_i = w_i \ell_i`,

    .. math:: \eta = -\frac{\widehat{\mathrm{Cov}}(L, w)}{\widehat{\mathrm{Var}}(w)}, \qquad
              \mathrm{DEV} = \overline{L} + \eta\, \overline{w} - \eta

    (unbiased sample covariance and variance, as in the authors' code).
    """
    w, loss = weights.double().flatten(), losses.double().flatten()
    weighted = w * loss
    var_w = w.var(unbiased=True)
    if not torch.isfinite(var_w) or var_w <= 0:
        return float(weighted.mean())
    cov = ((weighted - weighted.mean()) * (w - w.mean())).sum() / (w.numel() - 1)
    eta = -cov / var_w
    return float(weighted.mean() + eta * w.mean() - eta)


def _fit_logistic(x: torch.Tensor, y: torch.Tensor, l2: float, start: torch.Tensor | None, steps: int) -> torch.Tensor:
    r"""``(weights..., bias)`` of an L2-penalised logistic regression (L-BFGS, float64).

    The objective :math:`\frac1n\sum_i \mathrm{BCE}(x_i^\top\beta + b, y_i) + \ell_2\lVert\beta\rVert^2`
    and its gradient :math:`(X^\top r + 2\ell_2\beta,\ \sum_i r_i)`, :math:`r = (\sigma(X\beta + b) - y)/n`,
    are computed in closed form with the operations autograd runs for them (the same values, bit
    for bit: ``tests/ssot/test_validators.py``), without building a graph at each of L-BFGS's
    evaluations (about a quarter of DEV's time went there)."""
    params = torch.zeros(x.shape[1] + 1, dtype=torch.float64) if start is None else start.clone()
    opt = torch.optim.LBFGS([params], max_iter=steps, line_search_fn="strong_wolfe")
    n = len(y)

    def closure() -> torch.Tensor:
        with torch.no_grad():
            w, b = params[:-1], params[-1]
            z = x @ w + b
            residual = (torch.sigmoid(z) - y) / n
            params.grad = torch.cat([x.t().mv(residual) + l2 * (2 * w), residual.sum().reshape(1)])
            return F.binary_cross_entropy_with_logits(z, y) + l2 * w.pow(2).sum()

    opt.step(closure)
    return params.detach()


def domain_weights(feats_source: torch.Tensor, feats_target: torch.Tensor, *, folds: int = DEV_FOLDS,
                   l2: Sequence[float] = DEV_L2, seed: int = 0, steps: int = 100) -> torch.Tensor:
    r"""Importance weights :math:`w(x) = \frac{p_t(x)}{p_s(x)}` of the source samples, each from a
    domain classifier that never saw it (cross-fitting) [2]_.

    DEV fits its domain classifier on one split and weighs another (the paper: training-source
    features against the target, applied to the validation features). Here the held-out source and
    the target are each split into ``folds`` seeded folds; for every fold :math:`k` a logistic
    regression (standardised features, L-BFGS, zero start, penalty :math:`\ell_2 \lVert\beta\rVert^2`)
    separates the source (label 0) from the target (label 1) on the *other* folds, and weighs the
    source samples of fold :math:`k`:

    .. math:: w_i = \frac{n_s^{(-k)}}{n_t^{(-k)}} \exp\big(\beta^{(-k)\top} x_i + b^{(-k)}\big)

    so every source sample gets an out-of-sample weight and the DEV risk keeps all of them. The
    penalty is chosen from ``l2`` by the out-of-fold log-loss of the domain labels (a proper
    scoring rule: the best-calibrated classifier; the authors' code picks its weight decay by
    held-out domain accuracy). ``folds = 1`` fits and weighs the same samples (the in-sample fit,
    biased: in 256 dimensions with a few hundred samples its weights average 0.25-0.45 instead of
    1, see ``tests/ssot/test_validators.py``); with ``folds = 1`` the smallest penalty always wins.
    Deterministic in ``seed``; no draw from the global random state.
    """
    ns, nt = len(feats_source), len(feats_target)
    x = torch.cat([feats_source, feats_target]).double()
    x = (x - x.mean(0)) / x.std(0).clamp_min(1e-6)
    y = torch.cat([torch.zeros(ns), torch.ones(nt)]).double()
    k = max(1, min(folds, ns, nt))
    gen = torch.Generator().manual_seed(seed)
    fold = torch.cat([torch.randperm(ns, generator=gen) % k, torch.randperm(nt, generator=gen) % k])
    best: tuple[float, torch.Tensor] | None = None
    starts: list[torch.Tensor | None] = [None] * k
    splits = []  # per fold: the held-out mask, the fitted samples and labels, the odds of the fitted domains
    for i in range(k):
        held = fold == i
        fit = ~held if k > 1 else held
        splits.append((held, x[fit], y[fit], x[held], math.log(float(fit[:ns].sum()) / float(fit[ns:].sum()))))
    for penalty in sorted(l2, reverse=True):  # strongest first: each fit warm-starts the next
        logit = torch.empty(ns + nt, dtype=torch.float64)  # the classifier's, on samples it did not fit
        log_w = torch.empty(ns + nt, dtype=torch.float64)
        for i, (held, x_fit, y_fit, x_held, odds) in enumerate(splits):
            starts[i] = params = _fit_logistic(x_fit, y_fit, penalty, starts[i], steps)
            logit[held] = x_held @ params[:-1] + params[-1]
            log_w[held] = logit[held] + odds
        loss = float(F.binary_cross_entropy_with_logits(logit, y))
        if best is None or loss < best[0]:
            best = (loss, log_w[:ns])
    if best is None:
        raise ValueError("domain_weights: l2 holds no penalty")
    return torch.exp(best[1].clamp(-30, 30))


def dev(feats_source: torch.Tensor, losses_source: torch.Tensor, feats_target: torch.Tensor) -> float:
    """DEV [2]_ from held-out source features and losses and target features (lower is better)."""
    return dev_risk(domain_weights(feats_source, feats_target), losses_source)
