"""`ssot/validators.py`: each validator against a hand value or its published formula on small arrays,
every member of a stack against its own, and DEV's batched solver against the per-fit L-BFGS it
replaced (tests/fixtures/dev_lbfgs.py), scikit-learn's logistic regression and skada's DEV."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from ssot import validators as V
from tests.fixtures import dev_lbfgs


@pytest.fixture(autouse=True)
def one_thread():
    """The solves here are small: one torch thread (a second only waits for the first, and on a
    loaded machine many times longer)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _probs(n=12, k=4, seed=0, members=None):
    g = torch.Generator().manual_seed(seed)
    shape = (n, k) if members is None else (members, n, k)
    return torch.softmax(torch.randn(*shape, generator=g, dtype=torch.float64) * 2, -1)


# ---------------------------------------------------------------- the published formulas, member by member

def _entropy(p: np.ndarray) -> float:
    return float(-(p * np.log(np.clip(p, 1e-12, None))).sum(1).mean())


def _im(p: np.ndarray) -> float:
    pbar = p.mean(0)
    return float(-(pbar * np.log(np.clip(pbar, 1e-12, None))).sum()) - _entropy(p)


def _snd(p: np.ndarray, T: float = 0.05) -> float:
    # pytorch-adapt's test formula (softmax outputs, normalised, self excluded)
    z = F.normalize(torch.tensor(p), dim=1)
    sim = z @ z.t()
    n = sim.shape[0]
    sim = sim[~torch.eye(n, dtype=torch.bool)].view(n, n - 1)
    q = F.softmax(sim / T, dim=1)
    return float(torch.mean(-torch.sum(q * torch.log(q), dim=1)))


def _bnm(p: np.ndarray) -> float:
    return float(np.linalg.svd(p, compute_uv=False).sum() / p.shape[0])


def test_entropy_hand_value():
    p = torch.tensor([[0.5, 0.5], [1.0, 0.0]])
    assert float(V.entropy(p)) == pytest.approx(math.log(2) / 2)


def test_im_hand_value():
    p = torch.tensor([[1.0, 0.0], [0.0, 1.0]])  # confident and diverse: IM = log 2
    assert float(V.im(p)) == pytest.approx(math.log(2))
    q = torch.tensor([[1.0, 0.0], [1.0, 0.0]])  # confident, one class: IM = 0
    assert float(V.im(q)) == pytest.approx(0.0, abs=1e-9)


def test_im_pda_ignores_absent_classes():
    # 4 classes, the model uses only 2, evenly and confidently: IM penalises, IM_PDA does not
    p = torch.tensor([[1.0, 0, 0, 0], [0, 1.0, 0, 0]] * 3)
    assert float(V.im(p)) == pytest.approx(math.log(2))
    assert float(V.im_pda(p)) == pytest.approx(math.log(2))
    # a class with a tiny share (< half uniform) is dropped from the diversity term
    r = torch.tensor([[0.9, 0.05, 0.05, 0.0]] * 4)
    ent = float(-(r.double() * torch.log(r.double().clamp_min(1e-12))).sum(1).mean())
    assert float(V.im_pda(r)) == pytest.approx(0.0 - ent)


def test_bnm_matches_singular_values():
    p = _probs()
    assert float(V.bnm(p)) == pytest.approx(_bnm(p.numpy()), rel=1e-10)
    onehot = torch.eye(3).repeat(2, 1)  # orthogonal columns of norm sqrt(2): nuclear norm 3 sqrt 2
    assert float(V.bnm(onehot)) == pytest.approx(3 * math.sqrt(2) / 6)
    rank_one = torch.full((20, 5), 0.2)  # one singular value, the others zero: the eigensolver's noise stays tiny
    assert float(V.bnm(rank_one)) == pytest.approx(_bnm(rank_one.double().numpy()), rel=1e-7)


def test_snd_matches_reference_formula():
    p = _probs(n=13)
    assert float(V.snd(p, 0.05)) == pytest.approx(_snd(p.numpy()), rel=1e-9)


def test_snd_in_blocks_of_rows_is_the_same(monkeypatch):
    p = _probs(n=13, members=3)
    whole = V.snd(p)
    monkeypatch.setattr(V, "SND_CHUNK_ELEMENTS", 3 * 13 * 4)  # blocks of 4 rows
    assert torch.allclose(V.snd(p), whole, rtol=1e-12, atol=0)


def test_snd_identical_predictions_is_log_n_minus_1():
    p = torch.full((6, 3), 1 / 3)
    assert float(V.snd(p)) == pytest.approx(math.log(5))


def test_every_validator_of_a_stack_is_each_members_published_value():
    """A stack of 4 members at once: each member's score is its published formula's on its own
    predictions (and, for the stacked functions, what the member alone gets)."""
    stack = _probs(n=30, k=6, members=4, seed=3)
    stack[2] = torch.softmax(stack[2] * 8, -1)  # one confident member, one near-uniform
    stack[3] = torch.softmax(stack[3] * 0.1, -1)
    references = {"entropy": _entropy, "im": _im, "snd": _snd, "bnm": _bnm}
    for name, reference in references.items():
        scores = getattr(V, name)(stack)
        assert scores.shape == (4,) and scores.dtype == torch.float64
        for p in range(4):
            assert float(scores[p]) == pytest.approx(reference(stack[p].numpy()), rel=1e-9), name
            assert float(scores[p]) == pytest.approx(float(getattr(V, name)(stack[p])), rel=1e-12), name
    assert torch.allclose(V.im_pda(stack), torch.stack([V.im_pda(s) for s in stack]), rtol=1e-12)


def test_mixval_counts_and_means():
    probs_mixed = torch.tensor([[0.9, 0.1], [0.2, 0.8], [0.6, 0.4], [0.3, 0.7]])
    pseudo = torch.tensor([0, 0, 0, 1])
    partner = torch.tensor([3, 2, 1, 0])  # pseudo-labels of the pairs: (0, 1), (0, 0), (0, 0), (1, 0)
    counts = V.mixval_counts(probs_mixed, pseudo, partner)  # mixed argmax: 0, 1, 0, 1
    assert counts.tolist() == [2.0, 2.0, 1.0, 2.0]  # inter: samples 0 and 3 right; intra: 1 wrong, 2 right
    out = V.mixval(counts)
    assert {k: float(v) for k, v in out.items()} == {"mixval_inter": 1.0, "mixval_intra": 0.5, "mixval": 0.75}
    stacked = V.mixval(torch.tensor([[0.0, 0.0, 1.0, 2.0], [1.0, 4.0, 3.0, 4.0]]))
    assert math.isnan(float(stacked["mixval_inter"][0])) and float(stacked["mixval"][0]) == 0.5  # no inter pair: the intra mean
    assert float(stacked["mixval"][1]) == pytest.approx(0.5)
    assert math.isnan(float(V.mixval(torch.zeros(4))["mixval"]))


def test_dev_risk_matches_authors_formula():
    rng = np.random.default_rng(0)
    w = rng.uniform(0.2, 3, size=20)
    loss = rng.uniform(0, 2, size=20)
    weighted = w * loss
    cov = np.cov(np.stack([weighted, w]))[0, 1]
    eta = -cov / np.var(w, ddof=1)
    expected = weighted.mean() + eta * w.mean() - eta
    assert float(V.dev_risk(torch.tensor(w), torch.tensor(loss))) == pytest.approx(expected, rel=1e-12)
    # constant weights: no control variate, plain weighted mean; one sample likewise
    assert float(V.dev_risk(torch.ones(5), torch.arange(5.0))) == pytest.approx(2.0)
    assert float(V.dev_risk(torch.tensor([2.0]), torch.tensor([3.0]))) == 6.0
    # a stack: each row its own risk
    stacked = V.dev_risk(torch.tensor(np.stack([w, w[::-1]])), torch.tensor(np.stack([loss, loss])))
    assert float(stacked[0]) == pytest.approx(expected, rel=1e-12)


def test_dev_risk_is_skadas_deep_embedded_validation_on_the_same_weights():
    """skada's DEV scorer (its split, its scikit-learn domain classifier) end to end on a toy task,
    against ``dev_risk`` of the weights and losses that protocol gives. skada 0.6's default loss
    returns ``(n,)``, which its ``(n, 1)`` weights broadcast into an ``(n, n)`` matrix (not the DEV
    formula); with a loss returning a column, the two agree to rounding."""
    pytest.importorskip("skada")
    from skada import make_da_pipeline
    from skada.metrics import DeepEmbeddedValidation
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import train_test_split

    rng = np.random.default_rng(0)
    xs, xt = rng.normal(size=(120, 5)), rng.normal(size=(80, 5)) + 0.5
    ys = (xs[:, 0] > 0).astype(int)
    X, y = np.concatenate([xs, xt]), np.concatenate([ys, -np.ones(80, dtype=int)])
    domain = np.concatenate([np.ones(120, dtype=int), -2 * np.ones(80, dtype=int)])
    estimator = make_da_pipeline(LogisticRegression()).fit(X, y, sample_domain=domain)

    def column_loss(labels, probs):
        return -np.log(np.clip(probs[np.arange(len(labels)), labels], 1e-15, 1 - 1e-15))[:, None]

    theirs = DeepEmbeddedValidation(random_state=0, loss_func=column_loss)(estimator, X, y, sample_domain=domain)
    x_fit, x_val, _, y_val = train_test_split(xs, ys, test_size=0.33, random_state=np.random.RandomState(0))
    domain_probs = LogisticRegression().fit(np.concatenate([x_fit, xt]), np.r_[np.ones(len(x_fit)), np.zeros(80)]).predict_proba(x_val)
    weights = len(x_fit) / 80 * domain_probs[:, 0] / domain_probs[:, 1]
    losses = column_loss(y_val, estimator.predict_proba(x_val))[:, 0]
    assert -theirs == pytest.approx(float(V.dev_risk(torch.tensor(weights), torch.tensor(losses))), rel=1e-12)


# ---------------------------------------------------------------- DEV's domain weights

def _gaussian_shift(d, n_source, n_target, shift, seed):
    """Source N(0, I), target N(mu, I) with |mu| = shift: the true ratio p_t/p_s = exp(mu.x - |mu|^2/2)."""
    g = torch.Generator().manual_seed(seed)
    mu = torch.full((d,), shift / d ** 0.5, dtype=torch.float64)
    src = torch.randn(n_source, d, generator=g, dtype=torch.float64)
    tgt = torch.randn(n_target, d, generator=g, dtype=torch.float64) + mu
    return src, tgt, torch.exp(src @ mu - mu @ mu / 2)


def _features(members, n_source, n_target, d, seed):
    """Class-structured non-negative features of a shifted target, like a bottleneck's (ReLU outputs)."""
    g = torch.Generator().manual_seed(seed)
    means = torch.rand(members, 6, d, generator=g) * 2
    src = (means[:, torch.arange(n_source) % 6] + torch.randn(members, n_source, d, generator=g)).relu()
    tgt = (means[:, torch.arange(n_target) % 3] + 0.4 + torch.randn(members, n_target, d, generator=g)).relu()
    return src, tgt


def _spearman(a, b):
    ra, rb = np.argsort(np.argsort(a)), np.argsort(np.argsort(b))  # no ties in continuous data
    return float(np.corrcoef(ra, rb)[0, 1])


@pytest.mark.parametrize("d, shift, min_spearman", [(256, 1.5, 0.45), (64, 1.5, 0.7)])
def test_domain_weights_track_the_true_density_ratio(d, shift, min_spearman):
    """Cross-fitted weights in the dimensions and sizes of real features (256 = the embedded tasks'
    bottleneck; 300 source and 200 target samples) average 1 within 0.2 and rank like the true ratio.

    Measured over 8 data seeds (2026-11-25): out-of-fold weights average 0.86-1.08 (d = 256) and
    0.88-1.07 (d = 64), Spearman 0.53-0.67 and 0.80-0.89; the true weights' own sample mean lies in
    0.64-1.35. The in-sample fit (``folds=1``, the previous implementation with l2 = 0.01) averages
    0.23-0.33 at d = 256: the classifier separates its own training samples, so they look like
    source and get tiny weights. It is checked to fail here.
    """
    src, tgt, true = _gaussian_shift(d, 300, 200, shift, seed=0)
    w = V.domain_weights(src, tgt)
    assert abs(float(w.mean()) - 1.0) <= 0.2
    assert _spearman(w.numpy(), true.numpy()) >= min_spearman
    # not flat: the log-weights follow the true log-ratio with a clear positive slope
    lw, lt = torch.log(w) - torch.log(w).mean(), torch.log(true) - torch.log(true).mean()
    assert 0.2 <= float((lw * lt).sum() / (lt * lt).sum()) <= 1.5
    if d == 256:
        same_split = V.domain_weights(src, tgt, folds=1, l2=(0.01,))
        assert float(same_split.mean()) < 0.5  # the in-sample fit fails the mean test


def test_domain_weights_are_out_of_fold_and_seeded():
    src, tgt, _ = _gaussian_shift(16, 60, 40, 1.0, seed=1)
    a = V.domain_weights(src, tgt, seed=3)
    assert torch.equal(a, V.domain_weights(src, tgt, seed=3))
    assert not torch.equal(a, V.domain_weights(src, tgt, seed=4))  # other folds, other fits
    assert a.shape == (60,) and bool((a > 0).all())
    # out of fold: a source sample's own features never enter the fit that weighs it, so moving
    # it far towards the target raises its weight (an in-sample fit would learn it as source)
    moved = src.clone()
    moved[0] = tgt.mean(0) * 3
    assert float(V.domain_weights(moved, tgt, seed=3)[0]) > float(a[0])
    tiny = V.domain_weights(src[:1], tgt[:3])  # fewer samples than folds: one in-sample fit
    assert tiny.shape == (1,) and torch.isfinite(tiny).all()
    with pytest.raises(ValueError, match="no penalty"):
        V.domain_weights(src, tgt, l2=())


@pytest.mark.parametrize("case", ["gaussians d=64", "gaussians d=16, 100 samples", "features d=256"])
def test_domain_weights_are_the_l_bfgs_fits_within_its_tolerance(case):
    """The batched Newton solver and the per-fit L-BFGS it replaced minimise the same strictly convex
    objectives: their weights agree to L-BFGS's tolerance (it stops at a gradient of about 5e-6;
    measured up to 7e-4 relative on these cases and on P2H's features, benchmarks/dev_weights.py),
    and DEV to about 1e-4 (measured up to 3e-5)."""
    if case == "gaussians d=64":
        src, tgt, _ = _gaussian_shift(64, 300, 200, 1.5, seed=2)
    elif case == "gaussians d=16, 100 samples":
        src, tgt, _ = _gaussian_shift(16, 60, 40, 1.0, seed=1)
    else:
        fs, ft = _features(1, 400, 150, 256, seed=4)
        src, tgt = fs[0], ft[0]
    ours, theirs = V.domain_weights(src, tgt), dev_lbfgs.domain_weights(src, tgt)
    assert float(((ours - theirs).abs() / theirs).max()) <= 2e-3
    losses = torch.rand(len(src), generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    assert float(V.dev_risk(ours, losses)) == pytest.approx(float(V.dev_risk(theirs, losses)), rel=2e-4)


@pytest.mark.parametrize("d", [64, 256])
def test_domain_weights_are_scikit_learns_optimum(d):
    """An independent solver run to a tight tolerance: scikit-learn's L-BFGS logistic regression of
    the same objective (one in-sample fit: ``C = 1 / (2 l2 n)`` on the standardised features) gives
    the same weights to its own tolerance (about 1e-6), from a cold start at a weak penalty in as many
    dimensions as samples / 2, where the classifier is nearly separating (the hardest start of DEV's
    fixed schedule; the L-BFGS reference stops 1e-4 away from the optimum there)."""
    from sklearn.linear_model import LogisticRegression

    fs, ft = _features(1, 400, 150, d, seed=4)
    src, tgt = fs[0].double(), ft[0].double()
    x = torch.cat([src, tgt])
    x = ((x - x.mean(0)) / x.std(0).clamp_min(1e-6)).numpy()
    y = np.r_[np.zeros(len(src)), np.ones(len(tgt))]
    penalty = 0.05
    clf = LogisticRegression(C=1 / (2 * penalty * len(y)), tol=1e-12, max_iter=100_000).fit(x, y)
    theirs = len(src) / len(tgt) * np.exp(x[:len(src)] @ clf.coef_[0] + clf.intercept_[0])
    ours = V.domain_weights(src, tgt, folds=1, l2=(penalty,)).numpy()
    np.testing.assert_allclose(ours, theirs, rtol=3e-6)


def test_a_members_dev_is_its_own_whatever_the_stack():
    """DEV is a function of the member alone: member p of a stack of 4 gets exactly its weights alone
    on a CPU (member by member; its whole evaluation too, tests/ssot/test_population.py), and within
    1e-9 with every member solved at once (the batched products a GPU uses, run here on the CPU)."""
    fs, ft = _features(4, 250, 90, 32, seed=6)
    losses = torch.rand(4, 250, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    alone = torch.stack([V.domain_weights(fs[p], ft[p]) for p in range(4)])
    assert torch.equal(V.domain_weights(fs, ft), alone)
    assert torch.equal(V.domain_weights(fs[2:3], ft[2:3])[0], alone[2])
    at_once, _ = V._domain_weights(fs, ft, V.DEV_FOLDS, V.DEV_L2, 0, V.DEV_STEPS)  # [4, 250]: one batched solve
    assert torch.allclose(at_once, alone, rtol=1e-9, atol=0)
    dev = V.dev(fs, losses, ft)
    assert torch.allclose(dev, torch.stack([V.dev_risk(w, loss) for w, loss in zip(alone, losses)]), rtol=1e-13, atol=0)
    assert len(set(dev.tolist())) == 4  # the members did differ


def test_dev_does_not_touch_the_global_rng():
    g = torch.Generator().manual_seed(1)
    src, tgt = torch.randn(50, 3, generator=g), torch.randn(40, 3, generator=g) + 0.5
    torch.manual_seed(123)
    before = torch.rand(1)
    torch.manual_seed(123)
    V.dev(src, torch.rand(50, generator=g), tgt)
    assert torch.equal(torch.rand(1), before)


def test_mixval_partners_are_a_seeded_cycle_of_the_set():
    p = V.mixval_partners(101, seed=5)
    assert sorted(p.tolist()) == list(range(101))  # every sample is the minor one exactly once
    assert not bool((p == torch.arange(101)).any())  # never paired with itself
    seen, i = {0}, int(p[0])
    while i != 0:
        seen.add(i); i = int(p[i])
    assert len(seen) == 101  # one cycle through the whole set
    assert torch.equal(p, V.mixval_partners(101, seed=5))
    assert not torch.equal(p, V.mixval_partners(101, seed=6))
    torch.manual_seed(0); a = V.mixval_partners(50)
    torch.manual_seed(1); b = V.mixval_partners(50)
    assert torch.equal(a, b)  # the global random state plays no part


def _next_epoch(fs, ft, seed, drift=0.05):
    """Features of the epoch after: each moved by a small fraction of its scale (a bottleneck's
    features change little from one epoch to the next)."""
    g = torch.Generator().manual_seed(seed)
    return ((fs + drift * fs.std() * torch.randn(fs.shape, generator=g)).relu(),
            (ft + drift * ft.std() * torch.randn(ft.shape, generator=g)).relu())


def test_a_warm_start_reaches_the_cold_optimum():
    """DEV from a member's classifiers of its previous epoch (DEV_WARM_STEPS, far fewer curvature
    refreshes) gives the weights of the optimum (40 fresh Newton steps per penalty from zero) to
    1e-6 relative, the tolerance of the cold schedule, and DEV within 1e-4 of the per-fit L-BFGS
    reference; the same short schedule from zero does not (the start is what makes it short)."""
    fs, ft = _features(1, 400, 150, 256, seed=4)
    before = V.domain_fit(fs[0], ft[0])
    assert before.classifiers.shape == (len(V.DEV_L2), V.DEV_FOLDS, 257)
    src, tgt = _next_epoch(fs[0], ft[0], seed=5)
    optimum = V.domain_weights(src, tgt, steps=((40, 40), (40, 40)))
    warm = V.domain_fit(src, tgt, start=V.DevStart(before.classifiers[None], [True]))
    assert float(((warm.weights - optimum).abs() / optimum).max()) <= 1e-6
    assert not torch.equal(warm.weights, V.domain_weights(src, tgt))  # it did take the other path
    losses = torch.rand(len(src), generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    reference = float(V.dev_risk(dev_lbfgs.domain_weights(src, tgt), losses))
    assert float(V.dev_risk(warm.weights, losses)) == pytest.approx(reference, rel=2e-4)
    from_zero = V.domain_fit(src, tgt, start=V.DevStart(torch.zeros_like(before.classifiers[None]), [True])).weights
    assert float(((from_zero - optimum).abs() / optimum).max()) > 1e-4
    again = V.domain_fit(*_next_epoch(src, tgt, seed=6), start=V.DevStart(warm.classifiers[None], [True]))  # warm from warm
    optimum = V.domain_weights(*_next_epoch(src, tgt, seed=6), steps=((40, 40), (40, 40)))
    assert float(((again.weights - optimum).abs() / optimum).max()) <= 1e-6


def test_a_stack_gets_each_members_own_warm_dev_and_unusable_starts_start_cold():
    """Member p of a stack gets exactly its own warm solve on a CPU (member by member), within
    1e-9 when the stack is solved at once (the GPU's way, here on the CPU); a member whose start is
    marked unusable (non-finite: :meth:`ssot.evaluation.Evaluation.read` marks it) is solved by the
    cold schedule, and a start of another shape sends every member to the cold schedule."""
    fs, ft = _features(4, 250, 90, 32, seed=6)
    starts = V.domain_fit(fs, ft).classifiers
    src, tgt = _next_epoch(fs, ft, seed=7)
    bad = starts.clone()
    bad[1, 2, 0, 3] = torch.nan
    start = V.DevStart(bad, [True, False, True, True])
    mine = [V.domain_fit(src[p], tgt[p], start=V.DevStart(bad[p:p + 1], [p != 1])) for p in range(4)]
    stacked = V.domain_fit(src, tgt, start=start)
    assert torch.equal(stacked.weights, torch.stack([m.weights for m in mine]))
    assert torch.equal(stacked.classifiers, torch.stack([m.classifiers for m in mine]))
    cold = V.domain_fit(src[1], tgt[1])
    assert torch.equal(mine[1].weights, cold.weights) and torch.isfinite(stacked.classifiers).all()
    assert not torch.equal(mine[0].weights, V.domain_weights(src[0], tgt[0]))  # the others started warm
    at_once = V.domain_fit(src, tgt, start=start, at_once=True)
    assert torch.allclose(at_once.weights, stacked.weights, rtol=1e-9, atol=0)
    assert torch.allclose(at_once.classifiers, stacked.classifiers, rtol=1e-7, atol=1e-9)
    other = V.DevStart(starts[..., :-1], [True] * 4)  # classifiers of other features (one dimension fewer)
    assert torch.equal(V.domain_fit(src, tgt, start=other).weights, V.domain_fit(src, tgt).weights)
    assert torch.equal(V.domain_fit(src, tgt, start=V.DevStart(starts[:3], [True] * 3)).weights, V.domain_fit(src, tgt).weights)
    loaded = V.DevStart.from_entries(V.DevStart.entries(start))
    assert loaded is not None and loaded.usable == start.usable
    torch.testing.assert_close(loaded.classifiers, bad, rtol=0, atol=0, equal_nan=True)
    assert V.DevStart.from_entries(V.DevStart.entries(None)) is None
