"""How well screens rank configs: each screen against the end-to-end search whose configs it replayed.

    python analysis/proxy.py RESULTS/screens                      # every screen made with --configs-from
    python analysis/proxy.py RESULTS/screens --out RESULTS/proxy  # + proxy.csv and proxy.md
    python analysis/proxy.py RESULTS/screen/P2H --reference RESULTS/e2e/P2H --k 1 3 5 10

Spearman and Kendall between the screen's ranking and the end-to-end accuracies of the same
configs, and the regret of "top-k of the screen, confirmed" (:mod:`analysis.data.proxy`); with
several screens of a task (seeds), their mean. Reads results only; existing files are never
overwritten.
"""
from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Sequence
from pathlib import Path

from analysis.data.proxy import DEFAULT_KS, proxy_info, reference_path, summary_table
from ssot import cli
from ssot.errors import ResultsError
from ssot.results import discovery, outputs, storage
from ssot.results.markdown import markdown_table, write_new_tables

CSV_NAME, MARKDOWN_NAME = "proxy.csv", "proxy.md"


def build_parser() -> argparse.ArgumentParser:
    parser = cli.Parser(prog="python analysis/proxy.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("screens", metavar="SCREENS", help="a screen's folder, or a folder searched recursively for screens")
    parser.add_argument("--reference", metavar="EXPERIMENT",
                        help="the end-to-end experiment to compare every screen with (default: the one each "
                             "screen replayed, recorded by tune/search.py --configs-from)")
    parser.add_argument("--k", type=int, nargs="+", default=list(DEFAULT_KS), help="the k of 'top-k of the screen, confirmed'")
    parser.add_argument("--out", type=Path, metavar="FOLDER",
                        help="also write proxy.csv and proxy.md into this folder (never overwritten)")
    return parser


def _one(path: str, screen: str | None = None):
    """The one readable experiment at ``path``: ``--reference``, or (``screen`` given) the
    end-to-end search that screen recorded it replayed."""
    what = f"--reference {path}" if screen is None else (f"The search {path} that the screen {screen} replayed "
                                                         "(recorded by --configs-from)")
    fix = "Pass the task folder of a search" if screen is None else "Move it back, or pass --reference"
    if not storage.is_uri(path) and not Path(path).is_dir():
        raise ResultsError(f"{what} is not a folder. {fix}.")
    found = [e for e in discovery.read_experiments(path) if e.meta is not None and e.trials is not None]
    if len(found) != 1:
        raise ResultsError(f"{what} must be one readable experiment (the task folder of a search); found {len(found)}. {fix}.")
    return found[0]


def to_markdown(table) -> str:
    """The summary as a Markdown table (accuracy regrets in points)."""
    ks = [c for c in table.columns if c.startswith("regret_top")]
    header = ["task", "screen", "reference", "n", "Spearman", "Kendall", *[f"regret top-{c[10:]}" for c in ks], "regret random",
              "best e2e acc (%)"]

    def fmt(value, digits=2):
        return "" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.{digits}f}"

    rows = [[r.task, r.screen, r.reference, fmt(r.n, 0), fmt(r.spearman), fmt(r.kendall), *[fmt(getattr(r, c), 1) for c in ks],
             fmt(r.regret_random, 1), fmt(r.best_acc, 1)] for r in table.itertuples()]
    return markdown_table(header, rows, "lllrrr" + "r" * (len(ks) + 2))


def proxy(args: argparse.Namespace) -> int:
    """The command's work: pair every screen with its reference, print (and write) the table."""
    if any(k < 1 for k in args.k):
        raise ResultsError(f"The '--k' argument must hold ints >= 1. Got {' '.join(map(str, args.k))} instead.")
    if args.out is not None:
        inputs = [*discovery.experiment_inputs(args.screens), *(discovery.experiment_inputs(args.reference) if args.reference else [])]
        outputs.check_output(args.out, "--out", folder=True, new=[CSV_NAME, MARKDOWN_NAME], inputs=inputs)
    try:
        experiments = [e for e in discovery.read_experiments(args.screens) if e.meta is not None and e.trials is not None]
        fixed = _one(args.reference) if args.reference else None
        infos, references = [], {}
        for screen in experiments:
            where = args.reference or reference_path(screen.meta or {})
            if where is None:
                continue
            if fixed is None and where not in references:
                references[where] = _one(where, str(screen.path))
            infos.append(proxy_info(screen, fixed if fixed is not None else references[where], args.k))
    except storage.StorageError as exc:
        raise ResultsError(str(exc)) from None
    if not infos:
        raise ResultsError(f"no screen under {args.screens} records the search it replayed; run tune/search.py with "
                           "--configs-from, or pass --reference.")
    table = summary_table(infos, args.k)
    text = to_markdown(table)
    print(text, end="")
    if args.out is not None:
        written = write_new_tables(args.out, table, CSV_NAME, text, MARKDOWN_NAME)
        print(f"wrote {written[0]} and {written[1]} ({len(infos)} screens)")
    return cli.EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    """Command line entry point (``ssot-proxy``); the exit status of :mod:`ssot.cli`."""
    return cli.command(build_parser(), proxy, argv)


if __name__ == "__main__":
    sys.exit(main())
