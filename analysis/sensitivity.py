"""Sensitivity heatmaps and the interactive dashboard of every experiment under a results folder.

    python analysis/sensitivity.py RESULTS          # or: python -m analysis.sensitivity
    python analysis/sensitivity.py RESULTS --out reports/p2h.html   # + reports/p2h_figures/
    python analysis/sensitivity.py s3://bucket/ssot --out dashboard.html   # object storage
    # -> RESULTS/dashboard.html (self-contained, opens offline)
    #    RESULTS/figures/<task>__<experiment>__<x>__<y>.pdf and .png (one per heatmap of
    #    the experiment's default view) and <task>__<experiment>__curves.pdf/.png, drawn with
    #    matplotlib: no browser needed (--image-backend plotly uses kaleido and Chromium instead)

The figures go beside the page, in a folder named after it (``figures/`` beside ``dashboard.html``,
``<name>_figures/`` beside ``--out <name>.html``), so that a second dashboard of the same results
with another ``--out`` has its own; ``--figures-dir`` puts them elsewhere.

Every search opens on its final-epoch view (the one the tables and the best trial use); the rung
views of an ASHA search are one click away. A search still running is drawn as far as it got,
with a banner saying that it is partial. Importances carry bootstrap intervals
(``--bootstrap N`` resamples, default 200; about 0.15 s per resample of 20 trials on a CPU core).

The dashboard also draws the paper's other analyses found under RESULTS (run records of
``tune/ablation.py``, ``tune/solvers.py``, ``tune/final.py`` or ``--out``, and t-SNE files of
``python -m ssot.feature_maps``): class weights vs the truth, OT solvers, feature maps
(:mod:`analysis.dashboard.paper_section`); a folder holding only those is drawn too.

Problems (a truncated or corrupt file, a missing file, a search still running) are printed on
stderr, one line each naming the file, and listed in the dashboard; the rest is still drawn.
A folder without any readable experiment is an error (exit status 2, :mod:`ssot.cli`). An
existing dashboard (``--out``) or a figures folder that holds files is refused before any work
(exit status 2) unless ``--overwrite`` is given.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from ssot import cli
from ssot.errors import ResultsError
from ssot.results import outputs


def _bins(text: str) -> str | int | list[float]:
    """Parse ``--bins``: ``decades``, a number of bins, or comma-separated edges."""
    if text == "decades":
        return text
    try:
        if "," in text:
            return [float(edge) for edge in text.split(",")]
        number = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"must be 'decades', a positive integer or comma-separated edges, got {text!r}"
        ) from None
    if number < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {number}")
    return number


def _resamples(text: str) -> int:
    """Parse ``--bootstrap``: a number of resamples, 0 or more."""
    try:
        number = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number of resamples (0 or more), got {text!r}") from None
    if number < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {number}")
    return number


def build_parser() -> argparse.ArgumentParser:
    """The command line (it imports the dashboard's figure modules: :func:`main` builds it
    under :func:`ssot.cli.run`, so Ctrl-C during those imports is ``interrupted``, exit 130)."""
    from analysis.dashboard import DASHBOARD_FILE, FIGURES_DIR
    from analysis.dashboard.page import FIGURES_SUFFIX
    from analysis.dashboard.static import BACKENDS, add_figure_flags
    from analysis.data.importance import N_BOOT

    parser = cli.Parser(
        prog="python analysis/sensitivity.py",
        description="Draw the sensitivity dashboard of every experiment under RESULTS.",
    )
    parser.add_argument("results_dir", metavar="RESULTS",
                        help="folder searched recursively for experiment.json, or a URI such as s3://bucket/prefix "
                             "(the storage path of tune/search.py; then --out is required)")
    parser.add_argument("--out", type=Path, default=None, metavar="PATH",
                        help=f"HTML file to write; its static figures go beside it, into {FIGURES_DIR}/ for "
                             f"{DASHBOARD_FILE}, <name>{FIGURES_SUFFIX}/ for <name>.html (default: RESULTS/{DASHBOARD_FILE})")
    parser.add_argument("--figures-dir", type=Path, default=None, metavar="FOLDER",
                        help="folder of the static figures (default: beside the page, named after it, see --out)")
    add_figure_flags(parser)
    parser.add_argument("--image-backend", choices=BACKENDS, default="matplotlib",
                        help="draw the static figures with matplotlib (no browser needed) or write the dashboard's "
                             "Plotly figures through kaleido (needs Chrome or Chromium)")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace an existing --out and figures of the same names in --figures-dir (refused by default)")
    parser.add_argument("--bins", type=_bins, default="decades",
                        help="binning of log/linear axes of TPE and random searches: 'decades' "
                             "(on log axes one cell centred on each power of ten, "
                             "[10^(k-1/2), 10^(k+1/2)), like the paper's grid; 5 equal cells on "
                             "linear axes), a number of equal-width bins (in log space on log "
                             "axes), or comma-separated edges; grid searches always keep one "
                             "cell per grid value")
    parser.add_argument("--bootstrap", type=_resamples, default=N_BOOT, metavar="N",
                        help="bootstrap resamples of the importances' intervals (0: no intervals, the fastest)")
    parser.add_argument("--paper-csv", type=Path, default=None, metavar="PATH",
                        help="the paper's accuracies (default: ssot/paper_accuracy.csv)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Command line entry point (``ssot-dashboard``); the exit status of :mod:`ssot.cli`."""
    return cli.command(build_parser, dashboard, argv)


def check_outputs(args: argparse.Namespace) -> None:
    """Refuse, before any work, an ``--out`` that is one of the command's inputs (an
    experiment's ``trials.csv``, a run record, ``--paper-csv``: even with ``--overwrite``), that
    exists (unless ``--overwrite``) or cannot be written, and a ``--figures-dir`` that cannot be
    written, already holds files (unless ``--overwrite``; figures of the same names would be
    replaced) or holds an input."""
    from analysis.dashboard import input_paths, output_paths

    out, figures = output_paths(args.results_dir, args.out, args.figures_dir)
    inputs = input_paths(args.results_dir, args.paper_csv)
    outputs.check_output(out, "--out", folder=False, exists_ok=True, inputs=inputs)
    if not args.overwrite and out.exists():
        raise ResultsError(f"--out {out} already exists; pass --overwrite to replace it, or choose another --out.")
    if args.no_images:
        return
    outputs.check_output(figures, "--figures-dir", folder=True, exists_ok=args.overwrite, inputs=inputs)
    if not args.overwrite and figures.is_dir() and any(p.is_file() for p in figures.iterdir()):
        raise ResultsError(f"--figures-dir {figures} already holds files (figures of the same names would be replaced); "
                           "pass --overwrite to write among them, or choose another --figures-dir.")


def dashboard(args: argparse.Namespace) -> int:
    """The command's work: check the outputs, :func:`analysis.dashboard.build_dashboard`, the problems on stderr."""
    from analysis.dashboard import build_dashboard
    from analysis.dashboard.page import print_written

    check_outputs(args)
    result = build_dashboard(
        args.results_dir, out=args.out, figures_dir=args.figures_dir,
        images=not args.no_images, image_format=args.format, bins=args.bins,
        image_backend=args.image_backend, paper_csv=args.paper_csv, n_boot=args.bootstrap,
    )
    print_written(result, f"{result.n_experiments} experiment(s), {result.n_plots} plots")
    return cli.EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
