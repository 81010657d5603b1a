"""The three OT solvers (net, vector, sinkhorn) on one task over seeds, and their figure.

    python examples/solvers.py                       # digits, seed 0 (manual: Measured results, The paper's other analyses)
    python examples/solvers.py --task P2H --seeds 0 1 2

Runs ``tune/solvers.py`` (one run at a time, so that times per epoch compare) and
``analysis/paper_figures.py solvers`` (OT value and time per epoch per solver), then prints
``solvers.md``. The OT part alone against POT is ``benchmarks/ot_solvers.py``.
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402


def body(example: common.Example) -> int:
    example.check_data()
    out = example.out / "solvers"
    seeds = example.args.seeds[:1] if example.smoke else example.args.seeds
    example.run("tune/solvers.py", "--task", example.task, "--seeds", *seeds, "--out", out,
                *(["--epochs", "1"] if example.smoke else []))
    example.run("analysis/paper_figures.py", "solvers", out, "--out", example.out / f"solvers_{example.task.lower()}.png")
    example.show(out / "solvers.md")
    return 0


if __name__ == "__main__":
    p = common.parser(__doc__)
    p.add_argument("--seeds", nargs="+", default=["0"], help="seeds, one run each (the P2H/H2P figures use 0 1 2)")
    sys.exit(common.main(body, p.parse_args(), "solvers"))
