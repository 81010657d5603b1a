"""The atlas across tasks: importance, signed effects, tunability, transfer, trust in early
stopping and coverage of the searches of several tasks, on one self-contained page.

    python analysis/atlas.py RESULTS --out atlas                 # -> atlas/atlas.html, atlas/figures/*.pdf|png
    python analysis/atlas.py RESULTS --out atlas --name ssot-embedded --view final --bootstrap 200
    python tune/transfer.py RESULTS --out RESULTS/transfer --seeds 0 1 2   # the replays the atlas draws

RESULTS holds one finished search per task (any layout the dashboard reads, searched recursively;
``--name`` chooses among several searches of a task). The page (plotly.js inlined: it opens
offline) and the static figures (matplotlib, no browser) are new files in ``--out``; the replays of
``tune/transfer.py`` are found under RESULTS (or given with ``--transfer``). How to read every
section: docs/atlas.md. Bad input (no search, one task only, a search not finished, an output
that exists or lies inside an input) is refused in one line before any work, exit status 2
(:mod:`ssot.cli`).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from ssot import cli
from ssot.errors import ResultsError
from ssot.results import outputs


def build_parser() -> argparse.ArgumentParser:
    """The command line (it imports the atlas's figure modules: :func:`main` builds it under
    :func:`ssot.cli.run`, so Ctrl-C during those imports is ``interrupted``, exit 130)."""
    from analysis.dashboard.static import add_figure_flags
    from analysis.data.tunability import N_BOOTSTRAP

    parser = cli.Parser(prog="python analysis/atlas.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("results_dir", metavar="RESULTS",
                        help="folder searched recursively for one finished search per task, or a URI such as s3://bucket/prefix")
    parser.add_argument("--out", type=Path, required=True, metavar="FOLDER",
                        help="folder of the page (atlas.html) and its figures (figures/)")
    parser.add_argument("--name", help="use only the searches of this experiment name (--name of tune/search.py)")
    parser.add_argument("--view", default="default",
                        help="the trials each task is read on: default (per group, the earliest of the tasks' default "
                             "views, as the dashboard opens them), final, best or epoch<R> (an ASHA rung)")
    parser.add_argument("--transfer", type=Path, metavar="FOLDER",
                        help="the folder of tune/transfer.py's replays (default: the one found under RESULTS, if any)")
    parser.add_argument("--bootstrap", type=int, default=N_BOOTSTRAP, metavar="N",
                        help="bootstrap resamples of the tunability's intervals (0: no intervals, the fastest)")
    add_figure_flags(parser)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Command line entry point (``ssot-atlas``); the exit status of :mod:`ssot.cli`."""
    return cli.command(build_parser, atlas, argv)


def _inside(path: Path, folder: Path) -> bool:
    path, folder = Path(os.path.realpath(path)), Path(os.path.realpath(folder))
    return path == folder or folder in path.parents


def atlas(args: argparse.Namespace) -> int:
    """The command's work: choose the searches and check every input and output, then draw."""
    from analysis.dashboard.atlas import ATLAS_FIGURES_DIR, ATLAS_FILE, build_atlas_page, static_names
    from analysis.dashboard.page import print_written
    from analysis.data.atlas import build_atlas
    from analysis.data.experiments import load_experiments
    from analysis.data.transfer import find_atlas_transfer
    from ssot.results import storage
    from ssot.results.searches import task_searches
    from ssot.results.transfer import MANIFEST_FILE, Transfer, read_transfer

    if args.bootstrap < 0:
        raise ResultsError(f"The '--bootstrap' argument must be an int in [0, inf). Got {args.bootstrap} instead.")
    experiments, problems = load_experiments(args.results_dir)
    searches = task_searches(experiments, args.name, where=str(args.results_dir), what="The atlas")
    used = {str(s.path) for s in searches}
    problems = [p for p in problems if any(str(p.path) == u or str(p.path).startswith(u + os.sep) for u in used)]
    chosen = build_atlas(searches, args.view)  # a view that some task lacks: one line, before any work
    if args.transfer is not None:
        if not (args.transfer / MANIFEST_FILE).is_file():
            raise ResultsError(f"--transfer {args.transfer} holds no {MANIFEST_FILE}: pass the --out folder of a finished "
                               "tune/transfer.py (rerun it to finish an interrupted one).")
        given = read_transfer(args.transfer)
        if not given.manifest:
            raise ResultsError(f"--transfer {args.transfer}: {given.problems[0].message}")
        transfer: Transfer | None = given
        notes: list[str] = []
    else:
        local = [] if storage.is_uri(args.results_dir) else [args.results_dir]
        transfer, notes = find_atlas_transfer(local, [t.task for t in chosen.tasks])
    inputs = [Path(str(s.path)) for s in searches if not storage.is_uri(s.path)]
    inputs += [transfer.path] if transfer is not None else []
    for folder in inputs:
        if _inside(args.out, folder):
            raise ResultsError(f"--out {args.out} is inside {folder}, one of the atlas's inputs; choose a folder outside "
                               "every search and transfer folder (e.g. RESULTS/atlas).")
    new = [ATLAS_FILE] + ([] if args.no_images else [f"{ATLAS_FIGURES_DIR}/{n}" for n in static_names(
        [g.label for g in chosen.groups], args.format)])
    outputs.check_output(args.out, "--out", folder=True, new=new)
    result = build_atlas_page(searches, args.out, root=str(args.results_dir), transfer=transfer,
                              notes=notes, view=args.view, n_bootstrap=args.bootstrap, images=not args.no_images,
                              image_format=args.format, log=print, atlas=chosen)
    for problem in problems:
        print(problem, file=sys.stderr)
    print_written(result, f"{len(chosen.tasks)} tasks, {len(chosen.groups)} group(s), {result.n_plots} plots")
    return cli.EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
