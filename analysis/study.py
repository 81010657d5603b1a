"""The index page of a study: its table, dashboards, atlas, the screens' agreement with confirmation, its cost.

    python analysis/study.py STUDY              # -> STUDY/index.html, STUDY/agreement.csv and .md
    python analysis/study.py STUDY --overwrite  # replace them (tune/study.py does, each time it ends)

STUDY is the folder of ``python tune/study.py --out STUDY``: the page reads its record
(``study.json``, :mod:`ssot.results.study`) and links every output that exists (what a study not
finished yet lacks is shown as not written yet). How to read the agreement table:
:mod:`analysis.data.study`. Existing pages are refused unless ``--overwrite`` (exit status 2,
:mod:`ssot.cli`).
"""
from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from ssot import cli


def build_parser() -> argparse.ArgumentParser:
    parser = cli.Parser(prog="python analysis/study.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("study", type=Path, metavar="STUDY", help="the folder of a study (tune/study.py --out)")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing index.html and agreement tables")
    return parser


def study(args: argparse.Namespace) -> int:
    """The command's work: read the record, check the outputs, write the page and the agreement tables."""
    from analysis.dashboard.study import agreement_markdown, study_page
    from analysis.data.study import agreement_table
    from ssot.results import storage
    from ssot.results.outputs import check_output
    from ssot.results.study import StudyPaths, read_study

    record = read_study(args.study)
    paths = StudyPaths(args.study.resolve())
    csv, md = paths.agreement
    check_output(paths.root, "STUDY", folder=True, exists_ok=args.overwrite,
                     new=[paths.index.name, csv.name, md.name], hint="pass --overwrite to replace them")
    table = agreement_table(record)
    storage.write_text(str(csv), table.to_csv(index=False))
    storage.write_text(str(md), agreement_markdown(table))
    storage.write_text(str(paths.index), study_page(paths, record))
    flagged = table.loc[table["verdict"] == "disagree", "task"].tolist() if not table.empty else []
    print(f"wrote {paths.index} ({len(record.tasks)} task(s)"
          + (f"; the screen and confirmation disagree on {', '.join(flagged)}" if flagged else "") + ")")
    return cli.EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    """Command line entry point (``ssot-study-page``); the exit status of :mod:`ssot.cli`."""
    return cli.command(build_parser(), study, argv)


if __name__ == "__main__":
    sys.exit(main())

