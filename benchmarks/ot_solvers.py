"""The OT part alone: our three solvers against POT, at batch 32, 256 and 1024 (one run, side by side).

    PYTHONPATH=. python benchmarks/ot_solvers.py            # CPU, float64, d = 8, 1 thread
    PYTHONPATH=. python benchmarks/ot_solvers.py --batches 32 256 --repeats 5

For each batch size ``b`` (``b_s = b_t = b``, random features in ``d = 8`` dimensions, squared-Euclidean cost scaled to
median 1, uniform weights, ``eps = 0.1``) it times

- ``sinkhorn (ours)``: :func:`ssot.solvers.sinkhorn_log`, 100 iterations (torch);
- ``POT sinkhorn2 log``: ``ot.sinkhorn(..., method="sinkhorn_log", numItermax=100, stopThr=0)``
  (the iterations of ``ot.sinkhorn2``; the plan is needed for the value gap);
- ``POT sinkhorn2``: ``ot.sinkhorn(..., numItermax=100, stopThr=0)`` (scaling form, same remark);
- ``vector SGD (ours)``: 100 full-batch ascent steps of :class:`ssot.solvers.VectorSolver`;
- ``POT semi-dual SAG``: ``ot.stochastic.solve_semi_dual_entropic(..., "SAG", numItermax=100 b)``
  (100 passes of single-sample SAG);
- ``net (ours)``: 100 Adam ascent steps of a width-256 potential network (the paper's ``g``).

and prints the time, the time ratio to ``POT sinkhorn2 log`` and the gap of each method's
entropic-OT value to the exact one (``ot.solve(..., reg_type="KL")``; for the semi-dual methods
the gap of the semi-dual :math:`H` to its maximum). Speed is measured here, never in unit tests.
"""
from __future__ import annotations

import time
import warnings

import numpy as np
import ot as pot
import torch

from ssot import ot
from ssot.solvers import NetSolver, VectorSolver, entropic_value, sinkhorn_log

ITERS = 100


def _timed(fn, repeats: int):
    best, out = float("inf"), None
    for _ in range(repeats):
        start = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - start)
    return best, out


def bench(b: int, d: int, eps: float, repeats: int, seed: int = 0) -> list[tuple[str, float, float]]:
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    xs, xt = torch.tensor(rng.normal(size=(b, d))), torch.tensor(rng.normal(size=(b, d)) + 0.3)
    cost = ot.cost_matrix(xs, xt)
    cost = cost / cost.median()
    a = torch.full((b,), 1.0 / b, dtype=torch.float64)
    M, an = cost.numpy(), a.numpy()
    exact = pot.solve(M, an, an, reg=eps, reg_type="KL").value
    rows = []

    t, plan = _timed(lambda: sinkhorn_log(cost, a, a, eps, ITERS, tol=0.0), repeats)
    rows.append(("sinkhorn (ours)", t, abs(entropic_value(cost, plan, a, a, eps) - exact)))
    t, plan = _timed(lambda: pot.sinkhorn(an, an, M, eps, method="sinkhorn_log", numItermax=ITERS, stopThr=0.0), repeats)
    rows.append(("POT sinkhorn2 log", t, abs(entropic_value(cost, torch.tensor(plan), a, a, eps) - exact)))
    t, plan = _timed(lambda: pot.sinkhorn(an, an, M, eps, numItermax=ITERS, stopThr=0.0), repeats)
    rows.append(("POT sinkhorn2", t, abs(entropic_value(cost, torch.tensor(plan), a, a, eps) - exact)))

    ids = torch.arange(b)

    def vector():
        s = VectorSolver(b, eps, lr=0.5, steps=ITERS)
        s.v = s.v.double()
        s.ascend(cost, None, ids, a)
        return float(s.loss(cost, None, ids, a))

    t, h = _timed(vector, repeats)
    rows.append(("vector SGD (ours)", t, abs(h + eps - exact)))

    def sag():
        _, log = pot.stochastic.solve_semi_dual_entropic(an, an, M, eps, "SAG", numItermax=ITERS * b, log=True)
        return float(ot.semi_dual(cost, torch.tensor(log["beta"]), a, eps))

    t, h = _timed(sag, repeats)
    rows.append(("POT semi-dual SAG", t, abs(h + eps - exact)))

    def net():
        g = torch.nn.Sequential(torch.nn.Linear(d, 256), torch.nn.ReLU(), torch.nn.Linear(256, 1)).double()
        s = NetSolver(g, torch.optim.Adam(g.parameters(), lr=1e-3), eps, ITERS)
        s.ascend(cost, xt, None, a)
        with torch.no_grad():
            return float(s.loss(cost, xt, None, a))

    t, h = _timed(net, repeats)
    rows.append(("net Adam (ours)", t, abs(h + eps - exact)))
    return rows


def main() -> None:
    from ssot import cli

    parser = cli.Parser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batches", type=int, nargs="+", default=[32, 256, 1024])
    parser.add_argument("--dim", type=int, default=8)
    parser.add_argument("--threads", type=int, default=1, help="torch threads (POT's numpy is single-threaded)")
    parser.add_argument("--eps", type=float, default=0.1)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    warnings.filterwarnings("ignore", message="Sinkhorn did not converge")  # fixed iteration counts on purpose
    print(f"torch {torch.__version__}, POT {pot.__version__}, threads {torch.get_num_threads()}, float64, "
          f"d={args.dim}, eps={args.eps}, {ITERS} iterations/steps/passes, best of {args.repeats}")
    print(f"{'batch':>6} | {'method':<20} | {'time ms':>9} | {'/ POT log':>9} | {'value gap':>9}")
    for b in args.batches:
        rows = bench(b, args.dim, args.eps, args.repeats)
        ref = dict((n, t) for n, t, _ in rows)["POT sinkhorn2 log"]
        for name, t, gap in rows:
            print(f"{b:>6} | {name:<20} | {1e3 * t:>9.2f} | {t / ref:>9.2f} | {gap:>9.2e}")


if __name__ == "__main__":
    main()
