"""Draw the paper's analysis figures from run-record JSON files (matplotlib, PNG/PDF/SVG).

The figures are :mod:`analysis.mpl.paper` (OT solvers, class weights vs truth, feature maps); a
run record is the JSON that ``python -m ssot.train --out`` and ``tune/final.py`` write. This
command never imports torch. ``solvers`` also takes folders: every run record under them (the
``OUT`` of ``tune/solvers.py``).

    python analysis/paper_figures.py solvers RUN.json [RUN.json ...] --out solvers.png
    python analysis/paper_figures.py class-weights RUN.json --out class_weights.png
    python analysis/paper_figures.py solvers solvers_digits --out solvers_digits/solvers.png
    python analysis/paper_figures.py feature-map tsne.npz --out tsne.png
"""
from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from matplotlib import pyplot as plt  # noqa: E402  (the Agg backend: analysis.mpl.paper chose it)

from analysis.data.paper_runs import FigureError, class_weight_info, find_paper_inputs, paper_input_paths, read_feature_map, read_record
from analysis.mpl.paper import class_weight_figure, feature_map_figure, solver_figure
from ssot import cli
from ssot.results import outputs


def _save(fig: plt.Figure, out: Path) -> Path:
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=130)
    plt.close(fig)
    return out


def build_parser() -> argparse.ArgumentParser:
    parser = cli.Parser(prog="python analysis/paper_figures.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("figure", choices=("solvers", "class-weights", "feature-map"), help="the figure to draw")
    parser.add_argument("inputs", nargs="+", type=Path, help="run records (JSON; solvers: also folders of them), or one t-SNE file (.npz)")
    parser.add_argument("--out", type=Path, required=True, metavar="PATH", help="the figure (.png, .pdf or .svg); never overwritten")
    return parser


def draw(args: argparse.Namespace) -> int:
    """The command's work: check the output, read the inputs, draw and write the figure."""
    try:
        return _draw(args)
    except KeyError as exc:  # a record without a key its figure needs
        raise FigureError(f"The input of the {args.figure} figure lacks {exc}. Pass run records written by --out.") from None


def _draw(args: argparse.Namespace) -> int:
    if args.out.suffix.lower() not in (".png", ".pdf", ".svg"):
        raise FigureError(f"The '--out' argument must end in .png, .pdf or .svg. Got {args.out.name!r} instead.")
    outputs.check_output(args.out, "--out", folder=False,
                     inputs=[f for p in args.inputs for f in (paper_input_paths(p) if p.is_dir() else [p])])
    if args.figure == "feature-map":
        if not args.inputs[0].is_file():
            raise FigureError(f"The t-SNE file {args.inputs[0]} does not exist. Write it with python -m ssot.feature_maps.")
        fig = feature_map_figure(read_feature_map(args.inputs[0]))
    elif args.figure == "solvers":
        fig = solver_figure([r for p in args.inputs for r in (find_paper_inputs(p).records.values() if p.is_dir() else [read_record(p)])])
    else:
        record = read_record(args.inputs[0])
        fig, info = class_weight_figure(record), class_weight_info(record)
        so = info.estimate[0, info.outliers].sum() if info.epochs[0] == 0 else float("nan")
        print(f"final mass on outlier classes: {info.outlier_mass:.4f} (source-only {so:.4f})")
    print(f"wrote {_save(fig, args.out)}")
    return cli.EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    """Command line entry point (``ssot-paper-figures``): ``solvers`` / ``class-weights`` /
    ``feature-map``; the exit status of :mod:`ssot.cli`."""
    return cli.command(build_parser(), draw, argv)


if __name__ == "__main__":
    sys.exit(main())
