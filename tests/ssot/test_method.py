"""`ssot/method.py`: the one SSOT step reads nothing on the host, for a run and for a population."""
from __future__ import annotations

import math

import pytest
import torch

from ssot import SSOTConfig, Trainer
from ssot.data.features import load_feature_task
from ssot.method import LOSSES
from ssot.population import Population
from ssot.solvers import sinkhorn_log
from tests.fixtures.features import vector_cache
from tests.fixtures.host_reads import HostRead, adam_steps, no_host_reads

SMALL = {"epochs": 1, "pretrain_epochs": 0, "iters_per_epoch": 2, "device": "cpu", "num_threads": 1, "source_eval_samples": 64}


def _batches(trainer, n=2):
    src, tgt = trainer.epoch_batches(1)
    return [(*next(src), *next(tgt)) for _ in range(n)]


def test_the_guard_refuses_every_kind_of_host_read():
    x = torch.randn(5)
    reads = [lambda: x.sum().item(), lambda: bool(x.sum() > 0), lambda: float(x[0]), lambda: x.tolist(),
             lambda: torch.equal(x, x), lambda: x[x > 0], lambda: [1, 2, 3][torch.tensor(1)], lambda: x.numpy()]
    for read in reads:
        with pytest.raises(HostRead), no_host_reads():
            read()
    with no_host_reads():  # arithmetic, indexing by integer tensors, in-place updates: no read
        x[torch.tensor([0, 2])] += torch.where(x[:2] > 0, 1.0, 2.0).sum()


@pytest.mark.parametrize("precision", ["fp32", "bf16"])
@pytest.mark.parametrize("solver", ["net", "vector", "sinkhorn"])
def test_a_run_step_reads_nothing_on_the_host(digits_task, solver, precision):
    """Every solver, both precisions, g_steps 2: the step runs with every host read refused
    (except torch.optim.Adam's own step counter, a host tensor even on a GPU)."""
    cfg = SSOTConfig.for_task("digits", **SMALL, ot_solver=solver, precision=precision, eps=0.5, g_steps=2)
    trainer = Trainer(cfg, digits_task)
    for xs, ys, xt, ids in _batches(trainer):
        with no_host_reads(exempt=adam_steps(trainer.opt_fe, trainer.opt_g)):
            losses = trainer.step(xs, ys, xt, ids)
        assert set(losses) == set(LOSSES) and all(math.isfinite(float(v)) for v in losses.values())


@pytest.fixture(scope="module")
def vectors(tmp_path_factory):
    """A tiny feature cache: 10 classes of 24-d vectors, 5 of them in the target."""
    return vector_cache(tmp_path_factory.mktemp("method") / "vectors.pt")


def test_a_population_step_reads_nothing_on_the_host(vectors):
    base = SSOTConfig.for_task("digits", **SMALL, backbone="features", features_path=str(vectors), bottleneck_dims=(16,),
                               g_steps=2)
    members = [base.replace(lambda_ot=v, eps=e, potential_width=w) for v, e, w in ((1.0, 1.0, 64), (0.1, 0.2, 128), (3.0, 5.0, 64))]
    population = Population(members, load_feature_task(vectors, "digits"))
    population.pretrain(lambda host: None)
    for xs, ys, xt, ids in _batches(population.host):
        with no_host_reads():
            losses = population.step(xs, ys, xt, ids)
        assert losses.shape == (3, len(LOSSES)) and bool(torch.isfinite(losses).all())


def _early_exit(cost, a, b, eps, iters, tol):
    """Sinkhorn as it was: it read the marginal error on the host every 10 rounds and stopped."""
    log_a, log_b = torch.log(a), torch.log(b)
    f, g = torch.zeros_like(a), torch.zeros_like(b)
    for k in range(iters):
        f = eps * (log_a - torch.logsumexp((g[None, :] - cost) / eps, dim=1))
        g = eps * (log_b - torch.logsumexp((f[:, None] - cost) / eps, dim=0))
        if (k + 1) % 10 == 0 or k == iters - 1:
            if float((torch.exp((f[:, None] + g[None, :] - cost) / eps).sum(1) - a).abs().sum()) < tol:
                break
    return torch.exp((f[:, None] + g[None, :] - cost) / eps)


def test_sinkhorn_without_host_reads_gives_the_values_of_the_early_exit():
    """Converged problems are frozen by torch.where instead of leaving the loop: the same plans
    bit for bit, alone and as a stack with one eps per problem. Here problem 0 stops at round 10,
    problem 2 at round 40 (100 rounds give another plan), problem 1 never converges."""
    gen = torch.Generator().manual_seed(3)
    cost = torch.rand(3, 6, 5, generator=gen) * torch.tensor([1.0, 4.0, 0.2])[:, None, None]
    a = torch.softmax(torch.randn(3, 6, generator=gen), -1)
    b = torch.full((3, 5), 0.2)
    eps = torch.tensor([0.5, 0.03, 0.01])
    with no_host_reads():
        stacked = sinkhorn_log(cost, a, b, eps, iters=100, tol=1e-6)
    for p in range(3):
        expected = _early_exit(cost[p], a[p], b[p], float(eps[p]), 100, 1e-6)
        assert torch.equal(sinkhorn_log(cost[p], a[p], b[p], float(eps[p]), iters=100, tol=1e-6), expected)
        torch.testing.assert_close(stacked[p], expected, rtol=1e-6, atol=1e-7)
