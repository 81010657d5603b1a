"""`ssot/validators.py`: each validator against a hand value or the published formula."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from ssot import validators as V


def _probs(n=12, k=4, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.softmax(torch.randn(n, k, generator=g, dtype=torch.float64) * 2, 1)


def test_entropy_hand_value():
    p = torch.tensor([[0.5, 0.5], [1.0, 0.0]])
    assert V.entropy(p) == pytest.approx(math.log(2) / 2)


def test_im_hand_value():
    p = torch.tensor([[1.0, 0.0], [0.0, 1.0]])  # confident and diverse: IM = log 2
    assert V.im(p) == pytest.approx(math.log(2))
    q = torch.tensor([[1.0, 0.0], [1.0, 0.0]])  # confident, one class: IM = 0
    assert V.im(q) == pytest.approx(0.0, abs=1e-9)


def test_im_pda_ignores_absent_classes():
    # 4 classes, the model uses only 2, evenly and confidently: IM penalises, IM_PDA does not
    p = torch.tensor([[1.0, 0, 0, 0], [0, 1.0, 0, 0]] * 3)
    assert V.im(p) == pytest.approx(math.log(2))
    assert V.im_pda(p) == pytest.approx(math.log(2))
    # a class with a tiny share (< half uniform) is dropped from the diversity term
    r = torch.tensor([[0.9, 0.05, 0.05, 0.0]] * 4)
    ent = float(-(r.double() * torch.log(r.double().clamp_min(1e-12))).sum(1).mean())
    assert V.im_pda(r) == pytest.approx(0.0 - ent)


def test_bnm_matches_singular_values():
    p = _probs()
    s = np.linalg.svd(p.numpy(), compute_uv=False)
    assert V.bnm(p) == pytest.approx(s.sum() / p.shape[0])
    onehot = torch.eye(3).repeat(2, 1)  # orthogonal columns of norm sqrt(2): nuclear norm 3 sqrt 2
    assert V.bnm(onehot) == pytest.approx(3 * math.sqrt(2) / 6)


def _snd_reference(probs, T):
    # pytorch-adapt's test formula (softmax outputs, normalised, self excluded)
    z = F.normalize(probs, dim=1)
    sim = z @ z.t()
    n = sim.shape[0]
    sim = sim[~torch.eye(n, dtype=torch.bool)].view(n, n - 1)
    q = F.softmax(sim / T, dim=1)
    return float(torch.mean(-torch.sum(q * torch.log(q), dim=1)))


@pytest.mark.parametrize("chunk", [1024, 5])
def test_snd_matches_reference_formula(chunk):
    p = _probs(n=13)
    assert V.snd(p, 0.05, chunk=chunk) == pytest.approx(_snd_reference(p, 0.05), rel=1e-9)


def test_snd_identical_predictions_is_log_n_minus_1():
    p = torch.full((6, 3), 1 / 3)
    assert V.snd(p) == pytest.approx(math.log(5))


def test_mixval_counts_and_means():
    probs_mixed = torch.tensor([[0.9, 0.1], [0.2, 0.8], [0.6, 0.4], [0.3, 0.7]])
    a = torch.tensor([0, 0, 0, 1])
    b = torch.tensor([1, 1, 0, 1])
    ci, ni, ca, na = V.mixval_scores(probs_mixed, a, b)
    assert (ci, ni, ca, na) == (1.0, 2, 2.0, 2)
    out = V.mixval(ci, ni, ca, na)
    assert out == {"mixval_inter": 0.5, "mixval_intra": 1.0, "mixval": 0.75}
    assert math.isnan(V.mixval(0, 0, 1, 2)["mixval_inter"]) and V.mixval(0, 0, 1, 2)["mixval"] == 0.5


def test_dev_risk_matches_authors_formula():
    rng = np.random.default_rng(0)
    w = rng.uniform(0.2, 3, size=20)
    loss = rng.uniform(0, 2, size=20)
    weighted = w * loss
    cov = np.cov(np.stack([weighted, w]))[0, 1]
    eta = -cov / np.var(w, ddof=1)
    expected = weighted.mean() + eta * w.mean() - eta
    assert V.dev_risk(torch.tensor(w), torch.tensor(loss)) == pytest.approx(expected)
    # constant weights: no control variate, plain weighted mean
    assert V.dev_risk(torch.ones(5), torch.arange(5.0)) == pytest.approx(2.0)


def test_domain_weights_follow_density_ratio():
    g = torch.Generator().manual_seed(0)
    src = torch.randn(400, 1, generator=g, dtype=torch.float64)
    tgt = torch.randn(400, 1, generator=g, dtype=torch.float64) + 1.0
    w = V.domain_weights(src, tgt, l2=0.0)
    # true ratio N(1,1)/N(0,1) = exp(x - 1/2): the fitted log-weights are close to linear in x
    true = torch.exp(src[:, 0] - 0.5)
    corr = np.corrcoef(torch.log(w).numpy(), torch.log(true).numpy())[0, 1]
    assert corr > 0.99
    assert float(w.mean()) == pytest.approx(1.0, abs=0.25)


def test_ensv_hard_and_soft():
    preds = [np.array([0, 1, 2, 2]), np.array([0, 1, 1, 2]), np.array([1, 1, 2, 0])]
    # majority: [0, 1, 2, 2]
    np.testing.assert_allclose(V.ensv(preds), [1.0, 0.75, 0.5])
    soft = [np.eye(3)[p] for p in preds]
    np.testing.assert_allclose(V.ensv(soft), [1.0, 0.75, 0.5])


def test_dev_does_not_touch_the_global_rng():
    g = torch.Generator().manual_seed(1)
    src, tgt = torch.randn(50, 3, generator=g), torch.randn(40, 3, generator=g) + 0.5
    torch.manual_seed(123)
    before = torch.rand(1)
    torch.manual_seed(123)
    V.dev(src, torch.rand(50, generator=g), tgt)
    assert torch.equal(torch.rand(1), before)
