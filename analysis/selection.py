"""Regret of label-free model selection against the oracle (target accuracy).

    python analysis/selection.py RESULTS            # -> RESULTS/selection.csv, selection.md
    python analysis/selection.py RESULTS --out DIR
    python analysis/selection.py s3://bucket/ssot --out DIR   # experiments in object storage

The tables are computed by :mod:`analysis.data.selection` (hyperparameter and epoch selection,
BenchmarkPDA's split); existing files are never overwritten.
"""
from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from analysis.data.selection import CSV_NAME, MARKDOWN_NAME, recipe_markdown, selection_table, summary, task_tables, to_markdown
from ssot import cli
from ssot.errors import ResultsError
from ssot.results import discovery, outputs, storage
from ssot.results.experiment import EXPERIMENT_FILE
from ssot.results.markdown import write_new_tables


def build_parser() -> argparse.ArgumentParser:
    parser = cli.Parser(prog="python analysis/selection.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("results_dir", metavar="RESULTS",
                        help="folder searched recursively for experiment.json, or a URI such as s3://bucket/prefix (then --out is required)")
    parser.add_argument("--out", type=Path, metavar="FOLDER",
                        help="output folder; existing files are never overwritten (default: RESULTS)")
    return parser


def readable_experiments(results_dir: str) -> list[tuple[dict, Any]]:
    """``(experiment.json, trials)`` of every readable experiment under ``results_dir``, read by
    the one reader (:func:`ssot.results.discovery.read_experiments`) whose problems are printed on
    stderr, one line each, as the dashboard and the export print them.

    Raises
    ------
    ResultsError
        If no experiment is found, or none can be read (naming the first unusable file).
    """
    try:
        found = discovery.read_experiments(results_dir)
    except storage.StorageError as exc:
        raise ResultsError(str(exc)) from None
    for experiment in found:
        for problem in experiment.problems:
            print(problem, file=sys.stderr)
    if not found:
        raise ResultsError(f"No experiment (no {EXPERIMENT_FILE}) under {results_dir}. Pass the folder a search wrote its "
                           "experiments to (tune/search.py --storage-path).")
    usable = [(e.meta, e.trials) for e in found if e.meta is not None and e.trials is not None]
    if not usable:
        first = next(p for e in found for p in e.errors)
        raise ResultsError(f"None of the {len(found)} experiment(s) under {results_dir} can be read: {first.path} "
                           f"{first.message}.")
    return usable


def selection(args: argparse.Namespace) -> int:
    """The command's work: check the outputs, read the experiments, write the tables."""
    if storage.is_uri(args.results_dir) and args.out is None:
        raise ResultsError(f"The results {args.results_dir} are not a local folder: pass --out, the local folder to write the tables to.")
    out = args.out or Path(args.results_dir)
    outputs.check_output(out, "--out", folder=True, new=[CSV_NAME, MARKDOWN_NAME], inputs=discovery.experiment_inputs(args.results_dir))
    experiments = readable_experiments(args.results_dir)
    table = selection_table(experiments)
    if table.empty:
        raise ResultsError(f"None of the {len(experiments)} readable experiment(s) under {args.results_dir} has completed "
                           "trials with validator scores (experiment.json's validator_directions and their columns in "
                           "trials.csv); run tune/search.py to the end first.")
    summ = summary(table)
    shown = task_tables(summ) + "\n" + recipe_markdown(table)
    write_new_tables(out, table, CSV_NAME, shown + "\n" + to_markdown(summ), MARKDOWN_NAME)
    print(shown, end="")
    print(f"wrote {out / CSV_NAME} and {out / MARKDOWN_NAME} ({len(experiments)} experiments)")
    return cli.EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    """Command line entry point (``ssot-selection``); the exit status of :mod:`ssot.cli`."""
    return cli.command(build_parser(), selection, argv)


if __name__ == "__main__":
    sys.exit(main())
