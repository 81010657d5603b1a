"""`python tune/solvers.py`: the OT-solver comparison."""
from __future__ import annotations


def test_solver_comparison_variants_and_table():
    from tune import solvers

    assert {name: changes for name, (_, changes) in solvers.SOLVER_VARIANTS.items()} == {
        "net": {"ot_solver": "net"}, "vector": {"ot_solver": "vector"}, "sinkhorn": {"ot_solver": "sinkhorn"}}
    rec = lambda acc, t: {"status": "completed", "epochs": [{"target_acc": 0.1, "ot_value": 9.0, "time_s": t},  # noqa: E731
                                                            {"target_acc": acc, "ot_value": 0.25, "time_s": t + 2}]}
    md = solvers.solver_table({"net": [rec(0.9, 1.0), rec(0.8, 3.0)], "sinkhorn": [rec(0.5, 5.0)]})
    assert "| net | 85.0 | 0.25 | 3.00 |" in md and "| sinkhorn | 50.0 | 0.25 | 6.00 |" in md
