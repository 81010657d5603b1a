"""Replay the best config of each task on every task: the transfer matrix of the atlas.

    python tune/transfer.py RESULTS --out RESULTS/transfer --seeds 0 1 2
    python tune/transfer.py RESULTS --name ssot-embedded --out transfer --seeds 0 1 2 --num-cpus 2
    python analysis/atlas.py RESULTS --out atlas          # draws the matrix (it finds RESULTS/transfer)

The searches under RESULTS (one finished search per task, :mod:`ssot.results.searches`; ``--name``
chooses among several) give each task's best config (``best_config.json``). Each of them, and
the paper's default, is replayed on every task once per seed: the target task's own search
setting (``base_config`` of its ``experiment.json``: data, epochs, feature cache, ...) with the
source's values of the fields its space searched, so on feature-cache screens the replays are
screens on the target's cache. The diagonal (a task's best config on itself, same seeds) is the
own best that every loss is measured against (:mod:`ssot.results.transfer`).

Runs go through the Ray runner (:func:`tune.runner.train_on_ray`): each (source,
target, seed) is a Ray task with the search's resource flags, its run record written to
``OUT/runs/<target>/<source>_seed<s>.json`` as soon as it ends and reused when the command is run
again, so an interrupted transfer continues where it stopped. Once every replay ended, the table
goes to ``OUT/transfer.csv`` and ``OUT/transfer.md`` and the manifest to ``OUT/transfer.json``;
existing files are never overwritten. Exit statuses: :mod:`ssot.cli` (2: bad input, refused
before any run; 1: a replay did not complete, diverged).
"""
from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ssot import cli
from ssot.config import SEARCHED_FIELDS, SSOTConfig, defaults
from ssot.errors import ResultsError, SSOTError
from ssot.results import discovery, outputs, storage
from ssot.results.experiment import Experiment
from ssot.results.markdown import write_new_tables
from ssot.results.record import RUNS_DIR, RunRecord, write_new
from ssot.results.searches import task_searches
from ssot.results.transfer import (
    CSV_NAME,
    DEFAULT_SOURCE,
    MANIFEST_FILE,
    MARKDOWN_NAME,
    new_manifest,
    output_names,
    run_path,
    to_markdown,
    transfer_table,
)
from tune import flags
from tune.runner import train_on_ray

__all__ = ["Source", "sources_of", "replay_config", "build_parser", "main"]


@dataclass(frozen=True)
class Source:
    """A config replayed on every task: its name (a task, or the paper's default), the values it
    sets, the search and trial it comes from."""

    name: str
    values: dict[str, Any]
    experiment: str | None = None
    trial_id: str | None = None

    def manifest(self) -> dict[str, Any]:
        return {"experiment": self.experiment, "trial_id": self.trial_id, "values": self.values}


def sources_of(searches: Sequence[Experiment], include_default: bool = True) -> list[Source]:
    """The best config of each search (the values of the fields its space names, from its
    ``best_config.json``), then the paper's default (the field defaults of the searched fields).

    Raises
    ------
    ResultsError
        If a search has no valid best config or no ``base_config`` (not written by tune/search.py).
    """
    out = []
    for search in searches:
        meta = search.meta or {}
        if "base_config" not in meta or search.best_config is None:
            raise ResultsError(f"The search {search.path} has no base_config or no best_config.json: it was not written "
                               "by tune/search.py, so its setting cannot be replayed.")
        try:
            best = SSOTConfig.from_dict(dict(search.best_config), source=f"{search.path}/best_config.json")
        except SSOTError as exc:
            raise ResultsError(str(exc)) from None
        fields = list(meta.get("space") or {}) or list(SEARCHED_FIELDS)
        out.append(Source(search.task, {f: getattr(best, f) for f in fields}, str(search.path), meta.get("best_trial")))
    if include_default:
        out.append(Source(DEFAULT_SOURCE, defaults(SEARCHED_FIELDS)))
    return out


def replay_config(target: Experiment, source: Source, seed: int) -> SSOTConfig:
    """The config of ``source`` replayed on ``target``: the target search's ``base_config`` with
    the source's values and ``seed``.

    Raises
    ------
    ResultsError
        If the values do not make a valid config of the target's setting.
    """
    base = dict((target.meta or {})["base_config"])
    try:
        return SSOTConfig.from_dict({**base, **source.values, "seed": int(seed)},
                                    source=f"config of {source.name} replayed on {target.task}")
    except SSOTError as exc:
        raise ResultsError(str(exc)) from None


def build_parser() -> argparse.ArgumentParser:
    parser = cli.Parser(prog="python tune/transfer.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("results_dir", metavar="RESULTS",
                        help="folder (or URI, e.g. s3://bucket/prefix) holding one finished search per task, searched recursively")
    parser.add_argument("--out", type=Path, required=True, metavar="FOLDER",
                        help="output folder: runs/, transfer.csv, transfer.md, transfer.json")
    cli.add_seeds(parser, help="seeds of every replay")
    parser.add_argument("--name", help="use only the searches of this experiment name (--name of tune/search.py)")
    parser.add_argument("--no-default", action="store_true", help="do not replay the paper's default config")
    r = parser.add_argument_group("resources (as tune/search.py)")
    flags.add_trial_resources(r, "run")
    flags.add_ray_flags(r)
    return parser


def _inside(path: Path, folder: Path) -> bool:
    path, folder = Path(os.path.realpath(path)), Path(os.path.realpath(folder))
    return path == folder or folder in path.parents


def check_out(out: Path, searches: Sequence[Experiment]) -> None:
    """Refuse an ``--out`` that is (inside) one of the searches read: an output is never an input."""
    for search in searches:
        if not storage.is_uri(search.path) and _inside(out, Path(str(search.path))):
            raise ResultsError(f"--out {out} is inside the search {search.path}, one of the inputs; choose a folder "
                               "outside every search (e.g. RESULTS/transfer).")


def transfer(args: argparse.Namespace) -> int:
    """The command's work: choose the searches, check the outputs, run or reuse every replay, write
    the table and the manifest."""
    cli.check_seeds(args.seeds)
    flags.check_resources_args(args)
    try:
        found = discovery.read_experiments(args.results_dir)
    except storage.StorageError as exc:
        raise ResultsError(str(exc)) from None
    searches = task_searches(found, args.name, where=str(args.results_dir), what="A transfer")
    check_out(args.out, searches)
    outputs.check_output(args.out, "--out", folder=True, new=output_names())
    sources = sources_of(searches, include_default=not args.no_default)
    pairs = {f"{s.name} on {t.task}": (s.name, t.task) for t in searches for s in sources}
    jobs = {(f"{s.name} on {t.task}", seed): (replay_config(t, s, seed), run_path(args.out, t.task, s.name, seed))
            for t in searches for s in sources for seed in args.seeds}
    records = train_on_ray(jobs, num_cpus=args.num_cpus, address=args.address, cpus_per_run=args.cpus_per_trial,
                           gpus_per_run=args.gpus_per_trial)
    keyed: dict[tuple[str, str, int], RunRecord] = {(*pairs[label], seed): r for (label, seed), r in records.items()}
    manifest = new_manifest(str(args.results_dir), args.seeds, {s.name: s.manifest() for s in sources},
                            {t.task: {"experiment": str(t.path)} for t in searches})
    table = transfer_table(manifest, keyed)
    text = to_markdown(table)
    csv_path, md_path = write_new_tables(args.out, table, CSV_NAME, text, MARKDOWN_NAME)
    write_new(args.out / MANIFEST_FILE, manifest)
    print(text, end="")
    print(f"wrote {csv_path}, {md_path} and {args.out / MANIFEST_FILE} ({len(records)} replays)")
    return cli.runs_status(records.values())


def main(argv: Sequence[str] | None = None) -> int:
    """Command line entry point (``ssot-transfer``); the exit status of :mod:`ssot.cli` (1: a replay diverged)."""
    return cli.command(build_parser(), transfer, argv, kept=lambda args: args.out / RUNS_DIR)


if __name__ == "__main__":
    sys.exit(main())
