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

from analysis.data.selection import CSV_NAME, MARKDOWN_NAME, read_experiments, selection_table, summary, to_markdown  # noqa: E402
from ssot.errors import ResultsError  # noqa: E402

def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python analysis/selection.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("results_dir", metavar="RESULTS_DIR", help="folder searched recursively for experiment.json, or a URI such as s3://bucket/prefix (then --out is required)")
    parser.add_argument("--out", type=Path, help="output folder (default RESULTS_DIR); existing files are never overwritten")
    args = parser.parse_args(argv)
    out = args.out or Path(args.results_dir)
    paths = [out / CSV_NAME, out / MARKDOWN_NAME]
    existing = [p for p in paths if p.exists()]
    if existing:
        print(f"error: {existing[0]} already exists; move it away or choose another --out (results are never overwritten).", file=sys.stderr)
        return 2
    try:
        experiments = read_experiments(args.results_dir)
    except ResultsError:
        print(f"error: RESULTS_DIR {args.results_dir} is not a folder; pass the --storage-path of a search.", file=sys.stderr)
        return 2
    table = selection_table(experiments)
    if table.empty:
        print(f"error: no experiment with validator scores under {args.results_dir}; run tune/search.py first.", file=sys.stderr)
        return 2
    summ = summary(table)
    out.mkdir(parents=True, exist_ok=True)
    with open(paths[0], "x", newline="") as fh:
        table.to_csv(fh, index=False)
    with open(paths[1], "x") as fh:
        fh.write(to_markdown(summ))
    print(to_markdown(summ), end="")
    print(f"wrote {paths[0]} and {paths[1]} ({len(experiments)} experiments)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
