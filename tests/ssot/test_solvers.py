"""`ssot/solvers.py`: the three OT solvers against POT, and in training."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from ssot import SSOTConfig, Trainer, ot
from ssot.data.digits import build_digits_task
from ssot.solvers import NetSolver, SampleIds, SinkhornSolver, VectorSolver, entropic_value, sinkhorn_log

pot = pytest.importorskip("ot")


def _problem(weighted: bool, n: int = 7, m: int = 6, seed: int = 4):
    rng = np.random.default_rng(seed)
    xs, xt = rng.normal(size=(n, 3)), rng.normal(size=(m, 3)) + 0.5
    cost = ot.cost_matrix(torch.tensor(xs), torch.tensor(xt))
    if weighted:
        ys = torch.tensor(rng.integers(0, 3, size=n))
        a = ot.source_weights(torch.tensor([0.0, 0.5, 2.0], dtype=torch.float64), ys)
    else:
        a = torch.full((n,), 1 / n, dtype=torch.float64)
    return cost, a, torch.full((m,), 1 / m, dtype=torch.float64), torch.tensor(xt)


def _pot_semi_dual_max(cost, a, b, eps):
    keep = (a > 0).numpy()  # POT needs positive marginals; zero-weight rows add nothing
    return pot.solve(cost.numpy()[keep], a.numpy()[keep], b.numpy(), reg=eps, reg_type="KL").value - eps


@pytest.mark.parametrize("eps", [0.05, 1.0])
def test_sinkhorn_plan_value_and_marginals_match_pot(eps):
    cost, a, b, _ = _problem(False)
    plan = sinkhorn_log(cost, a, b, eps, iters=5000, tol=1e-12)
    ref = pot.sinkhorn(a.numpy(), b.numpy(), cost.numpy(), eps, method="sinkhorn_log", numItermax=5000, stopThr=1e-12)
    np.testing.assert_allclose(plan.numpy(), ref, atol=1e-9)
    np.testing.assert_allclose(plan.sum(1).numpy(), a.numpy(), atol=1e-9)
    np.testing.assert_allclose(plan.sum(0).numpy(), b.numpy(), atol=1e-9)
    value = SinkhornSolver(eps, 5000).ascend(cost, None, None, a)
    assert float(value) == pytest.approx(float(pot.sinkhorn2(a.numpy(), b.numpy(), cost.numpy(), eps, method="sinkhorn_log",
                                                      numItermax=5000, stopThr=1e-12)), abs=1e-6)  # solver stops at 1e-7 marginal error
    # the entropic primal value equals POT's, and the semi-dual maximum (duality)
    assert entropic_value(cost, plan, a, b, eps) == pytest.approx(_pot_semi_dual_max(cost, a, b, eps) + eps, abs=1e-7)


def test_sinkhorn_zero_weight_rows_and_an_all_zero_batch():
    cost, a, b, _ = _problem(True)
    assert (a == 0).any() and (a > 0).any()
    plan = sinkhorn_log(cost, a, b, 0.5, iters=5000, tol=1e-12)
    keep = (a > 0).numpy()
    ref = pot.sinkhorn(a.numpy()[keep], b.numpy(), cost.numpy()[keep], 0.5, method="sinkhorn_log", numItermax=5000, stopThr=1e-12)
    np.testing.assert_allclose(plan.numpy()[keep], ref, atol=1e-9)
    assert torch.all(plan[a == 0] == 0)
    assert torch.all(sinkhorn_log(cost, torch.zeros_like(a), b, 0.5) == 0)


def test_sinkhorn_loss_gradient_is_the_plan():
    cost, a, b, _ = _problem(False)
    cost = cost.clone().requires_grad_(True)
    solver = SinkhornSolver(0.5, 2000)
    solver.loss(cost, None, None, a).backward()
    np.testing.assert_allclose(cost.grad.numpy(), sinkhorn_log(cost.detach(), a, b, 0.5, 2000).numpy(), atol=1e-12)
    # the feature step reuses the plan of the ascent on the same batch, and only on the same batch
    solver.ascend(cost.detach(), None, None, a)
    cached_plan = solver._cached[2]
    assert torch.equal(solver.loss(cost, None, None, a).detach(), (cached_plan * cost.detach()).sum()) and solver._cached is None
    solver.ascend(cost.detach(), None, None, a)
    other = cost.detach() * 2
    assert float(solver.loss(other, None, None, a)) == pytest.approx(float((sinkhorn_log(other, a, b, 0.5, 2000) * other).sum()))


@pytest.mark.parametrize("weighted", [False, True])
def test_vector_solver_sgd_reaches_the_pot_semi_dual_maximum(weighted):
    cost, a, b, _ = _problem(weighted)
    eps = 1.0
    solver = VectorSolver(cost.shape[1], eps, lr=0.5, steps=1)
    solver.v = solver.v.double()
    ids = torch.arange(cost.shape[1])
    values = [solver.ascend(cost, None, ids, a) for _ in range(3000)]
    assert values[-1] > values[0]
    assert float(solver.loss(cost, None, ids, a)) == pytest.approx(_pot_semi_dual_max(cost, a, b, eps), abs=1e-8)


def test_vector_solver_updates_only_the_batch_entries():
    cost, a, _, _ = _problem(False)
    solver = VectorSolver(20, 1.0, lr=0.5, steps=2)
    ids = torch.tensor([3, 7, 8, 11, 15, 19])
    solver.ascend(cost.float(), None, ids, a.float())
    changed = torch.nonzero(solver.v).flatten().tolist()
    assert set(changed) <= set(ids.tolist()) and changed
    with pytest.raises(ValueError, match="sample ids"):
        solver.ascend(cost.float(), None, None, a.float())


def test_net_solver_reaches_the_pot_semi_dual_maximum():
    torch.manual_seed(0)
    cost, a, b, xt = _problem(True)
    g = torch.nn.Sequential(torch.nn.Linear(3, 32), torch.nn.Tanh(), torch.nn.Linear(32, 1)).double()
    solver = NetSolver(g, torch.optim.Adam(g.parameters(), lr=3e-2), eps=1.0, steps=400)
    solver.ascend(cost, xt, None, a)
    assert solver.loss(cost, xt, None, a).item() == pytest.approx(_pot_semi_dual_max(cost, a, b, 1.0), abs=1e-4)


@pytest.mark.parametrize("name", ["net", "vector", "sinkhorn"])
def test_ascend_returns_the_value_before_its_update_as_a_tensor_without_reading_it(name):
    torch.manual_seed(0)
    cost, a, b, xt = _problem(True)
    g = torch.nn.Sequential(torch.nn.Linear(3, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1)).double()
    ids = torch.arange(cost.shape[1])
    solver = {"net": lambda: NetSolver(g, torch.optim.Adam(g.parameters(), lr=0.1), eps=0.5, steps=2),
              "vector": lambda: VectorSolver(cost.shape[1], 0.5, lr=0.5, steps=2),
              "sinkhorn": lambda: SinkhornSolver(0.5, 2000)}[name]()
    if name == "vector":
        solver.v = torch.randn(cost.shape[1], dtype=torch.float64)
    before = float(solver.loss(cost, xt, ids, a).detach())  # the OT value of the state before the ascent
    value = solver.ascend(cost, xt, ids, a)
    assert isinstance(value, torch.Tensor) and value.dim() == 0 and not value.requires_grad
    assert float(value) == pytest.approx(before, rel=1e-12)
    if name != "sinkhorn":  # the state moved: the value after the ascent is another (a larger) one
        assert float(solver.loss(cost, xt, ids, a)) > before


def test_sample_ids_replace_labels():
    task = build_digits_task()
    ds = SampleIds(task.target)
    x, i = ds[5]
    assert i == 5 and torch.equal(x, task.target[5][0]) and len(ds) == len(task.target)


@pytest.mark.parametrize("solver", ["vector", "sinkhorn"])
def test_each_solver_trains_an_epoch_and_resumes(solver):
    task = build_digits_task()
    cfg = SSOTConfig.for_task("digits", ot_solver=solver, epochs=2, pretrain_epochs=0, iters_per_epoch=4,
                              source_eval_samples=64)
    trainer = Trainer(cfg, task)
    trainer.pretrain()
    m = trainer.adapt_epoch()
    assert np.isfinite(m["ot_value"]) and np.isfinite(m["loss_ot"])
    if solver == "vector":
        assert int((trainer.solver.v != 0).sum()) == 4 * cfg.batch_size  # 4 batches of distinct target samples
    state = trainer.state_dict()
    again = Trainer(cfg, task)
    again.load_state_dict(state)
    if solver == "vector":
        assert torch.equal(again.solver.v, trainer.solver.v)
