"""OT-solver comparison: the same SSOT run with ``ot_solver`` = net, vector and sinkhorn.

    python tune/solvers.py --task digits                      # writes solvers_digits/
    python tune/solvers.py --config best/A2D.json --seeds 0 1 --out solvers_A2D

Each solver's run goes through Ray one at a time (``--num-cpus 1`` by default, so the times per
epoch are comparable), with run records in ``OUT/<solver>/runs/<task>_seed<s>.json`` (reused when
present, like ``tune/ablation.py``). Writes ``OUT/solvers.png`` and ``OUT/solvers.pdf`` (OT value
per epoch and time per epoch, the paper's "Optimization comparison"; drawn by
:mod:`analysis.paper_figures`) and ``OUT/solvers.md`` (final accuracy and time per epoch);
none of them is ever overwritten. User errors print one line and exit with status 2.
"""
from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a file: the one script idiom, see ssot/cli.py ("Scripts")
    sys.path[0] = str(Path(__file__).resolve().parents[1])

from ssot.config import OT_SOLVERS, SSOTConfig  # noqa: E402
from ssot.errors import SSOTError, one_line  # noqa: E402
from tune.ablation import run_variants  # noqa: E402
from tune.final import apply_overrides  # noqa: E402
from ssot.errors import ResultsError  # noqa: E402
from ssot.results.final_table import check_new  # noqa: E402
from ssot.results.record import RunRecord, records  # noqa: E402

#: solver name -> (folder, config changes), in the figure's order.
SOLVER_VARIANTS: dict[str, tuple[str, dict[str, Any]]] = {name: (name, {"ot_solver": name}) for name in OT_SOLVERS}


def output_paths(out_dir: str | Path) -> tuple[Path, Path, Path]:
    out = Path(out_dir)
    return out / "solvers.png", out / "solvers.pdf", out / "solvers.md"


def solver_table(by_solver: dict[str, list[dict[str, Any] | RunRecord]]) -> str:
    """Markdown: solver, final target accuracy (%) and last-epoch OT value of the runs with an
    adaptation epoch, time per epoch (s)."""
    lines = ["| OT solver | target acc (%) | OT value, last epoch | time / epoch (s) |", "|---|---:|---:|---:|"]
    for name, runs in by_solver.items():
        done = [r for r in records(runs) if r.epochs]
        acc = statistics.fmean(100 * r.final_acc for r in done) if done else float("nan")
        val = statistics.fmean(r.epochs[-1]["ot_value"] for r in done) if done else float("nan")
        t = statistics.fmean(e["time_s"] for r in done for e in r.epochs) if done else float("nan")
        lines.append(f"| {name} | {acc:.1f} | {val:.4g} | {t:.2f} |")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python tune/solvers.py", description=__doc__.split("\n\n")[0])
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--task", help="task whose default config is used (e.g. digits)")
    source.add_argument("--config", type=Path, help="a config JSON (e.g. a best config)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0], help="seeds (default: 0)")
    parser.add_argument("--out", type=Path, help="output folder (default: solvers_<task>)")
    parser.add_argument("--epochs", type=int, help="override the adaptation epochs")
    parser.add_argument("--device", choices=("auto", "cpu", "cuda"), help="override the device")
    parser.add_argument("--num-cpus", type=int, default=1, help="runs at a time (1: comparable timings)")
    args = parser.parse_args(argv)
    try:
        config = SSOTConfig.from_json(args.config) if args.config else SSOTConfig.for_task(args.task)
        config = apply_overrides(config, epochs=args.epochs, device=args.device)
        out = args.out if args.out is not None else Path(f"solvers_{config.task}")
        if len(set(args.seeds)) != len(args.seeds):
            raise ResultsError(f"The '--seeds' argument has repeated seeds. Got {' '.join(map(str, args.seeds))} instead.")
        check_new(list(output_paths(out)))
        by_solver = run_variants(config, args.seeds, out, variants=SOLVER_VARIANTS, num_cpus=args.num_cpus)
    except SSOTError as exc:
        print(f"error: {one_line(exc)}", file=sys.stderr)
        return 2
    from analysis.paper_figures import solver_figure

    png, pdf, md = output_paths(out)
    fig = solver_figure([r.to_dict() for rs in by_solver.values() for r in rs])
    fig.savefig(png, dpi=130)
    fig.savefig(pdf)
    table = solver_table(by_solver)
    with open(md, "x") as fh:
        fh.write(table)
    print(table, end="")
    print(f"wrote {png}, {pdf} and {md}")
    return 0 if all(r.completed for rs in by_solver.values() for r in rs) else 1


if __name__ == "__main__":
    sys.exit(main())
