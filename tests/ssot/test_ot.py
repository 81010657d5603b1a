"""`ssot/ot.py` against brute force, closed forms and POT."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from ssot import ot
from tests.fixtures.host_reads import no_host_reads


def brute_c_transform(cost: np.ndarray, g: np.ndarray, eps: float) -> np.ndarray:
    """Direct float64 loops (no log-sum-exp trick)."""
    n, m = cost.shape
    out = np.empty(n)
    for i in range(n):
        if eps == 0:
            out[i] = min(cost[i, j] - g[j] for j in range(m))
        else:
            out[i] = -eps * math.log(sum(math.exp((g[j] - cost[i, j]) / eps) for j in range(m)) / m)
    return out


def test_cost_matrix_matches_brute_force():
    rng = np.random.default_rng(0)
    fs, ft = rng.normal(size=(5, 7)), rng.normal(size=(4, 7))
    expected = np.array([[np.sum((a - b) ** 2) for b in ft] for a in fs])
    got = ot.cost_matrix(torch.tensor(fs), torch.tensor(ft)).numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    same = torch.tensor(fs)
    assert (ot.cost_matrix(same, same).diagonal() == 0).all()


@pytest.mark.parametrize("eps", [0.0, 0.05, 1.0, 10.0])
def test_c_transform_matches_brute_force(eps):
    rng = np.random.default_rng(1)
    cost, g = rng.uniform(0, 5, size=(6, 9)), rng.normal(size=9)
    got = ot.c_transform(torch.tensor(cost), torch.tensor(g), eps).numpy()
    np.testing.assert_allclose(got, brute_c_transform(cost, g, eps), rtol=1e-10, atol=1e-12)


def test_semi_dual_matches_brute_force_with_weights():
    rng = np.random.default_rng(2)
    cost, g = rng.uniform(0, 3, size=(5, 6)), rng.normal(size=6)
    m = np.array([0.0, 2.0, 1.0])
    ys = np.array([0, 1, 1, 2, 1])
    w = m[ys] / m[ys].sum()
    eps = 0.7
    expected = (w * brute_c_transform(cost, g, eps)).sum() + g.mean() - eps
    got = ot.semi_dual(torch.tensor(cost), torch.tensor(g), ot.source_weights(torch.tensor(m), torch.tensor(ys)), eps)
    assert got.item() == pytest.approx(expected, rel=1e-12)


def test_eps_to_zero_approaches_hard_min():
    rng = np.random.default_rng(3)
    cost, g = torch.tensor(rng.uniform(0, 10, size=(8, 8))), torch.tensor(rng.normal(size=8))
    hard = ot.c_transform(cost, g, 0.0)
    gaps = []
    for eps in [1.0, 0.1, 0.01, 0.001]:
        soft = ot.c_transform(cost, g, eps)
        gap = (soft - hard).abs().max().item()
        # closed-form bound: 0 <= soft - hard <= eps * log(b_t)
        assert (soft - hard >= -1e-12).all()
        assert gap <= eps * math.log(8) + 1e-12
        gaps.append(gap)
    assert gaps == sorted(gaps, reverse=True) and gaps[-1] < 1e-2


def test_finite_values_and_gradients_for_small_eps_and_large_costs():
    torch.manual_seed(0)
    fs = (torch.randn(16, 8) * 30).requires_grad_(True)
    ft = (torch.randn(16, 8) * 30).requires_grad_(True)
    cost = ot.cost_matrix(fs, ft)
    assert cost.max() > 1e4 * 0.5  # costs of order 1e4
    g = torch.randn(16, requires_grad=True)
    w = torch.full((16,), 1 / 16)
    h = ot.semi_dual(cost, g, w, 1e-3)
    h.backward()
    assert torch.isfinite(h)
    for t in (fs, ft, g):
        assert torch.isfinite(t.grad).all() and t.grad.abs().sum() > 0


def _maximise_semi_dual(cost: torch.Tensor, a: torch.Tensor, eps: float) -> float:
    """max over a free vector g of the semi-dual (float64, L-BFGS to convergence)."""
    g = torch.zeros(cost.shape[1], dtype=torch.float64, requires_grad=True)
    opt = torch.optim.LBFGS([g], lr=1, max_iter=500, tolerance_grad=1e-12, tolerance_change=1e-15,
                            line_search_fn="strong_wolfe")

    def closure():
        opt.zero_grad()
        loss = -ot.semi_dual(cost, g, a, eps)
        loss.backward()
        return loss

    for _ in range(5):
        opt.step(closure)
    return ot.semi_dual(cost, g, a, eps).item()


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("eps", [0.1, 1.0])
def test_semi_dual_maximum_equals_pot_entropic_ot(weighted, eps):
    pot = pytest.importorskip("ot")
    rng = np.random.default_rng(4)
    xs, xt = rng.normal(size=(7, 3)), rng.normal(size=(6, 3)) + 0.5
    cost = ot.cost_matrix(torch.tensor(xs), torch.tensor(xt))
    if weighted:
        m = torch.tensor([0.0, 0.5, 2.0], dtype=torch.float64)
        ys = torch.tensor([0, 1, 2, 2, 1, 0, 2])
        a = ot.source_weights(m, ys)
    else:
        a = torch.full((7,), 1 / 7, dtype=torch.float64)
    b = np.full(6, 1 / 6)
    # POT needs strictly positive marginals: drop zero-weight rows, they add nothing to H.
    keep = (a > 0).numpy()
    ref = pot.solve(cost.numpy()[keep], a.numpy()[keep], b, reg=eps, reg_type="KL").value - eps
    assert _maximise_semi_dual(cost, a, eps) == pytest.approx(ref, abs=1e-6)


def test_soft_mask_rows_sum_to_one_and_favour_same_class_pairs():
    K = 4
    confident = torch.eye(K) * 0.97 + 0.01  # rows on the simplex, confident
    ps = confident[[0, 1, 2, 3, 0]]
    pt = confident[[0, 2, 1, 3]]
    s = ot.soft_mask(ps, pt)
    np.testing.assert_allclose(s.sum(1).numpy(), 1.0, rtol=1e-6)
    same = torch.tensor([[int(ps[i].argmax() == pt[j].argmax()) for j in range(4)] for i in range(5)]).bool()
    for i in range(5):
        assert s[i][same[i]].max() < s[i][~same[i]].min()
    # closed form: exp(1 - p.q) / sum_j exp(1 - p.q_j)
    logits = 1 - ps @ pt.T
    np.testing.assert_allclose(s.numpy(), (logits.exp() / logits.exp().sum(1, keepdim=True)).numpy(), rtol=1e-6)


def test_class_weights_vanish_on_outliers_for_perfect_predictions():
    p_s = torch.tensor([0.1, 0.2, 0.3, 0.4])
    p_t = torch.tensor([0.5, 0.5, 0.0, 0.0])  # perfect predictions of a 2-class target
    m = ot.class_weights(p_t, p_s)
    assert m[2] == 0 and m[3] == 0
    assert (p_s * m).sum().item() == pytest.approx(1.0, abs=1e-6)
    np.testing.assert_allclose(m[:2].numpy(), [5.0, 2.5], rtol=1e-6)
    # normalisation holds even for a p_t that is not exactly on the simplex
    m2 = ot.class_weights(torch.tensor([0.3, 0.3, 0.1, 0.0]), p_s)
    assert (p_s * m2).sum().item() == pytest.approx(1.0, abs=1e-6)


def test_source_weights_normalise_and_survive_an_all_outlier_batch():
    m = torch.tensor([0.0, 1.0, 3.0])
    w = ot.source_weights(m, torch.tensor([1, 2, 2, 0]))
    np.testing.assert_allclose(w.numpy(), [1 / 7, 3 / 7, 3 / 7, 0.0], rtol=1e-6)
    w0 = ot.source_weights(m, torch.tensor([0, 0]))
    assert torch.equal(w0, torch.zeros(2))


def test_entropy_closed_forms():
    uniform = torch.full((3, 5), 0.2)
    assert ot.entropy(uniform).item() == pytest.approx(math.log(5), rel=1e-6)
    assert ot.entropy(torch.eye(5)).item() == pytest.approx(0.0, abs=1e-9)


def test_negative_eps_is_refused():
    with pytest.raises(ValueError, match="'eps' parameter must be a float in \\[0, inf\\)"):
        ot.c_transform(torch.zeros(2, 2), torch.zeros(2), -1.0)


def test_a_stack_of_problems_gives_each_member_its_own_result():
    """The step's calls on stacks (ssot/method.py): member p of a stack gets exactly the result of
    the call on its slice, with its own eps."""
    gen = torch.Generator().manual_seed(0)
    P, bs, bt, d, K = 3, 5, 4, 6, 7
    fs, ft = torch.randn(P, bs, d, generator=gen), torch.randn(P, bt, d, generator=gen)
    ps, pt = torch.softmax(torch.randn(P, bs, K, generator=gen), -1), torch.softmax(torch.randn(P, bt, K, generator=gen), -1)
    g, m = torch.randn(P, bt, generator=gen), torch.rand(P, K, generator=gen) + 0.1
    ys, p_s = torch.tensor([0, 3, 3, 6, 1]), torch.softmax(torch.randn(K, generator=gen), -1)
    eps = torch.tensor([0.05, 1.0, 7.0])
    cost = ot.cost_matrix(fs, ft)
    mask = ot.soft_mask(ps, pt)
    w = ot.source_weights(m, ys)
    stacked = (cost, mask, w, ot.semi_dual(cost * mask, g, w, eps), ot.class_weights(m, p_s), ot.entropy(ps))
    for p in range(P):
        one = (ot.cost_matrix(fs[p], ft[p]), ot.soft_mask(ps[p], pt[p]), ot.source_weights(m[p], ys),
               ot.semi_dual(cost[p] * mask[p], g[p], w[p], float(eps[p])), ot.class_weights(m[p], p_s), ot.entropy(ps[p]))
        for batched, single in zip(stacked, one):
            torch.testing.assert_close(batched[p], single, rtol=1e-6, atol=1e-6)
    # a stack's eps is validated where it enters (the config, ssot.population.check_members), never
    # read here: a check would be a host read (a device sync) in every step
    with no_host_reads():
        ot.semi_dual(cost * mask, g, w, eps)


def test_the_cost_is_the_squared_difference_of_pow_bit_for_bit():
    """cost_matrix squares by a product (pow(2) takes ten times as long on a CPU): the same values
    and gradients, bit for bit, as diff.pow(2), alone and on a stack."""
    gen = torch.Generator().manual_seed(1)
    for lead in ((), (3,)):
        fs = torch.randn(*lead, 9, 16, generator=gen).requires_grad_(True)
        ft = (torch.randn(*lead, 7, 16, generator=gen) + 0.3).requires_grad_(True)
        weights = torch.randn(*lead, 9, 7, generator=gen)
        before = (fs[..., :, None, :] - ft[..., None, :, :]).pow(2).sum(-1)
        now = ot.cost_matrix(fs, ft)
        assert torch.equal(before, now)
        grads_before = torch.autograd.grad((before * weights).sum(), (fs, ft))
        grads_now = torch.autograd.grad((now * weights).sum(), (fs, ft))
        assert all(torch.equal(a, b) for a, b in zip(grads_before, grads_now))
