"""OT-solver comparison: the same SSOT run with ``ot_solver`` = net, vector and sinkhorn.

    python tune/solvers.py --task digits                      # writes solvers_digits/
    python tune/solvers.py --config best/A2D.json --seeds 0 1 --out solvers_A2D

Each solver's run goes through Ray one at a time (``--max-concurrent 1`` by default, so the times
per epoch are comparable), with run records in ``OUT/<solver>/runs/<task>_seed<s>.json`` (reused
when present, like ``tune/ablation.py``). Writes ``OUT/solvers.md`` (final accuracy, last OT value
and time per epoch; never overwritten). The figure (OT value per epoch and time per epoch, the
paper's "Optimization comparison") is drawn from those run records by the analysis (``tune``
never imports ``analysis``), by the command this one prints::

    python analysis/paper_figures.py solvers OUT --out OUT/solvers.png     # or .pdf

and in the dashboard of any folder holding ``OUT``. Exit statuses: :mod:`ssot.cli`.
"""
from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ssot import cli
from ssot.config import OT_SOLVERS, SSOTConfig
from ssot.results import outputs
from ssot.results.markdown import markdown_table
from ssot.results.record import RunRecord, records
from tune import flags
from tune.ablation import run_variants
from tune.runner import apply_overrides

#: solver name -> (folder, config changes), in the figure's order.
SOLVER_VARIANTS: dict[str, tuple[str, dict[str, Any]]] = {name: (name, {"ot_solver": name}) for name in OT_SOLVERS}


def table_path(out_dir: str | Path) -> Path:
    """``OUT/solvers.md``."""
    return Path(out_dir) / "solvers.md"


def solver_table(by_solver: Mapping[str, Sequence[Mapping[str, Any] | RunRecord]]) -> str:
    """Markdown: solver, final target accuracy (%) and last-epoch OT value of the runs with an
    adaptation epoch, time per epoch (s)."""
    rows = []
    for name, runs in by_solver.items():
        done = [r for r in records(runs) if r.epochs]
        accs = [r.final_acc for r in done if r.final_acc is not None]
        acc = statistics.fmean(100 * a for a in accs) if accs else float("nan")
        val = statistics.fmean(r.epochs[-1]["ot_value"] for r in done) if done else float("nan")
        t = statistics.fmean(e["time_s"] for r in done for e in r.epochs) if done else float("nan")
        rows.append([name, f"{acc:.1f}", f"{val:.4g}", f"{t:.2f}"])
    return markdown_table(["OT solver", "target acc (%)", "OT value, last epoch", "time / epoch (s)"], rows, "lrrr")


def build_parser() -> argparse.ArgumentParser:
    parser = cli.Parser(prog="python tune/solvers.py", description=__doc__.split("\n\n")[0])
    cli.add_config_source(parser, "here: its default config is compared", "the config compared (e.g. a best config)")
    parser.add_argument("--out", type=Path, metavar="FOLDER", help="output folder (default: solvers_<task>)")
    cli.add_config_flag(parser, "epochs", "overrides the config's", default_text="the config's")
    cli.add_config_flag(parser, "device", "overrides the config's", default_text="the config's")
    flags.add_ray_flags(parser)
    parser.add_argument("--max-concurrent", type=int, default=1, metavar="N",
                        help="most runs at once (1: the times per epoch are comparable)")
    return parser


def solvers(args: argparse.Namespace) -> int:
    """The command's work: check the outputs, train or reuse every (solver, seed), write the table."""
    cli.check_seeds(args.seeds)
    flags.check_resources_args(args)
    config = SSOTConfig.from_json(args.config) if args.config else SSOTConfig.for_task(args.task)
    with cli.flag_errors(("epochs", "device")):
        config = apply_overrides(config, epochs=args.epochs, device=args.device)
    out = args.out if args.out is not None else Path(f"solvers_{config.task}")
    md = table_path(out)
    outputs.check_output(out, "--out", folder=True, new=[md.name])
    by_solver = run_variants(config, args.seeds, out, variants=SOLVER_VARIANTS, num_cpus=args.num_cpus,
                             address=args.address, max_concurrent=args.max_concurrent)
    table = solver_table(by_solver)
    with open(md, "x") as fh:
        fh.write(table)
    print(table, end="")
    print(f"wrote {md}; draw the figure with: python analysis/paper_figures.py solvers {out} --out {out / 'solvers.png'}")
    return cli.runs_status(r for rs in by_solver.values() for r in rs)


def main(argv: Sequence[str] | None = None) -> int:
    """Command line entry point (``ssot-solvers``); the exit status of :mod:`ssot.cli` (1: a run diverged)."""
    return cli.command(build_parser(), solvers, argv, kept=lambda args: args.out or "solvers_<task>")


if __name__ == "__main__":
    sys.exit(main())
