"""Regret of label-free model selection against the oracle (target accuracy).

    python analysis/selection.py RESULTS_DIR            # -> RESULTS_DIR/selection.csv, selection.md
    python analysis/selection.py RESULTS_DIR --out DIR
    python analysis/selection.py s3://bucket/ssot --out DIR   # experiments in object storage

The tables are computed by :mod:`analysis.data.selection` (hyperparameter and epoch selection,
BenchmarkPDA's split); existing files are never overwritten.
"""
from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

if __package__ in (None, ""):  # run as a file: the one script idiom, see ssot/cli.py ("Scripts")
    sys.path[0] = str(Path(__file__).resolve().parents[1])

from analysis.data.selection import (CSV_NAME, MARKDOWN_NAME, read_experiments, recipe_markdown, selection_table,  # noqa: E402
                                     summary, task_tables, to_markdown)
from ssot import cli  # noqa: E402
from ssot.errors import ResultsError  # noqa: E402
from ssot.results import storage  # noqa: E402

def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python analysis/selection.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("results_dir", metavar="RESULTS_DIR",
                        help="folder searched recursively for experiment.json, or a URI such as s3://bucket/prefix (then --out is required)")
    parser.add_argument("--out", type=Path, help="output folder (default RESULTS_DIR); existing files are never overwritten")
    return parser


def selection(args: argparse.Namespace) -> int:
    """The command's work: check the outputs, read the experiments, write the tables."""
    if storage.is_uri(args.results_dir) and args.out is None:
        raise ResultsError(f"The results {args.results_dir} are not a local folder: pass --out, the local folder to write the tables to.")
    out = args.out or Path(args.results_dir)
    cli.check_output(out, "--out", folder=True, new=[CSV_NAME, MARKDOWN_NAME])
    try:
        experiments = read_experiments(args.results_dir)
    except storage.StorageError as exc:
        raise ResultsError(str(exc)) from None
    table = selection_table(experiments)
    if table.empty:
        raise ResultsError(f"no experiment with validator scores under {args.results_dir}; run tune/search.py first.")
    summ = summary(table)
    out.mkdir(parents=True, exist_ok=True)
    with open(out / CSV_NAME, "x", newline="") as fh:
        table.to_csv(fh, index=False)
    with open(out / MARKDOWN_NAME, "x") as fh:
        fh.write(task_tables(summ) + "\n" + recipe_markdown(table) + "\n" + to_markdown(summ))
    print(task_tables(summ) + "\n" + recipe_markdown(table), end="")
    print(f"wrote {out / CSV_NAME} and {out / MARKDOWN_NAME} ({len(experiments)} experiments)")
    return cli.EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    """Command line entry point (``ssot-selection``); the exit status of :mod:`ssot.cli`."""
    return cli.command(build_parser(), selection, argv)


if __name__ == "__main__":
    sys.exit(main())
