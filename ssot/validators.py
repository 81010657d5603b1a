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
.. [6] Hu, D., Luo, M., Liang, J., Foo, C.-S. "Towards Reliable Model Selection for Unsupervised
   Domain Adaptation: An Empirical Study and A Certified Baseline." NeurIPS 2024 (EnsV).
.. [7] Salvador, T., Fatras, K., Mitliagkas, I., Oberman, A. "A Reproducible and Realistic
   Evaluation of Partial Domain Adaptation Methods." TMLR 2023 (BenchmarkPDA).
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
import torch.nn.functional as F

# The names, directions and worst values of the validators are declared in the metric registry
# (torch-free, so that the analysis reads them without torch): re-exported here.
from ssot.results.metrics import DIRECTIONS, EPOCH_VALIDATORS, LABEL_FREE, SEARCH_METRICS, worst_value  # noqa: F401

_TINY = 1e-12


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


def domain_weights(feats_source: torch.Tensor, feats_target: torch.Tensor, *, l2: float = 1e-2, steps: int = 100) -> torch.Tensor:
    r"""Importance weights :math:`w(x) = \frac{p_t(x)}{p_s(x)}` of the source samples from a domain classifier.

    A logistic regression (L-BFGS, L2 penalty ``l2``, standardised features) separates source
    (label 0) from target (label 1); :math:`w_i = \frac{n_s}{n_t} \frac{d(x_i)}{1 - d(x_i)}` [2]_.
    Fitted and applied on the same held-out source samples (a linear classifier; the paper fits
    on the training features and applies it to the validation ones).
    """
    x = torch.cat([feats_source, feats_target]).double()
    mu, sd = x.mean(0), x.std(0).clamp_min(1e-6)
    x = (x - mu) / sd
    y = torch.cat([torch.zeros(len(feats_source)), torch.ones(len(feats_target))]).double()
    # zero start (the problem is convex): no draw from the global RNG, so training is unchanged
    weight = torch.zeros(x.shape[1], dtype=torch.float64, requires_grad=True)
    bias = torch.zeros(1, dtype=torch.float64, requires_grad=True)
    opt = torch.optim.LBFGS([weight, bias], max_iter=steps, line_search_fn="strong_wolfe")

    def closure() -> torch.Tensor:
        opt.zero_grad()
        loss = F.binary_cross_entropy_with_logits(x @ weight + bias, y) + l2 * weight.pow(2).sum()
        loss.backward()
        return loss

    with torch.enable_grad():
        opt.step(closure)
    with torch.no_grad():
        logit = (x[: len(feats_source)] @ weight + bias).clamp(-30, 30)
    return torch.exp(logit) * (len(feats_source) / len(feats_target))


def dev(feats_source: torch.Tensor, losses_source: torch.Tensor, feats_target: torch.Tensor) -> float:
    """DEV [2]_ from held-out source features and losses and target features (lower is better)."""
    return dev_risk(domain_weights(feats_source, feats_target), losses_source)


def ensv(predictions: Sequence[np.ndarray]) -> np.ndarray:
    r"""EnsV [6]_: each candidate's agreement with the ensemble of all candidates (higher is better).

    ``predictions`` are the candidates' final target predictions, each ``(N,)`` class indices
    (hard votes) or ``(N, K)`` probabilities. The ensemble label is the argmax of the summed
    one-hot votes (ties: lowest class) or of the mean probability;

    .. math:: \mathrm{EnsV}_c = \frac1N \sum_i \mathbb 1[\hat y^{(c)}_i = \hat y^{ens}_i]
    """
    arrays = [np.asarray(p) for p in predictions]
    if not arrays:
        return np.zeros(0)
    if arrays[0].ndim == 2:
        ens = np.mean(arrays, axis=0).argmax(1)
        labels = [a.argmax(1) for a in arrays]
    else:
        labels = [a.astype(np.int64) for a in arrays]
        k = int(max(a.max() for a in labels)) + 1
        votes = sum(np.eye(k, dtype=np.int64)[a] for a in labels)
        ens = votes.argmax(1)
    return np.array([float((a == ens).mean()) for a in labels])
