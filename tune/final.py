"""Final multi-seed runs of exported configs, and the results table beside the paper.

    python tune/final.py CONFIG_DIR --seeds 0 1 2 --out OUT
    python tune/final.py configs/P2I.json configs/A2W.json --seeds 0 1 2 --out OUT
    python tune/final.py CONFIG_DIR --seeds 0 1 --epochs 1 --device cpu --out /tmp/check   # quick check
    python tune/final.py CONFIG_DIR --features a2w.pt --out OUT        # on a feature cache
    python tune/final.py ray_results/confirmed --seeds 0 1 2 --out OUT  # confirmed configs (tune/confirm.py)

Each config (a ``<task>.json`` written by ``tune/export.py`` or ``tune/confirm.py``, or any config
file) is trained once per seed with :func:`ssot.trainer.run`, in this process (the commands that
run on Ray use :mod:`tune.runner`). Each run record is written to
``OUT/runs/<task>_seed<s>.json`` as soon as the run ends; a record that already exists
there is reused instead of retrained, so an interrupted final run continues where it stopped by
rerunning the same command. The table (:mod:`ssot.results.final_table`) is written to
``OUT/results.csv`` and ``OUT/results.md``; existing tables are never
overwritten. Exit statuses: :mod:`ssot.cli` (2: bad input, refused before training; 1: a run did
not complete, diverged).
"""
from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from ssot import cli
from ssot.config import SSOTConfig
from ssot.errors import ResultsError
from ssot.results import outputs
from ssot.results.final_table import result_paths, results_table, to_markdown, write_results
from ssot.results.record import RUNS_DIR, RunRecord, run_path, write_new
from tune.runner import Log, apply_overrides, describe, read_run_record

__all__ = ["collect_configs", "feature_caches", "final_runs", "run_all", "main"]


# ------------------------------------------------------------------------------------ configs
def collect_configs(paths: Sequence[str | Path]) -> list[tuple[Path, SSOTConfig]]:
    """The configs named by ``paths``: JSON files, or folders of ``*.json`` files (sorted).

    Raises
    ------
    SSOTError
        If a path is missing, a folder holds no JSON file, a config is invalid, or two configs
        are for the same task (their run records would collide).
    """
    files: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found = sorted(p for p in path.glob("*.json") if p.is_file())
            if not found:
                raise ResultsError(f"The config folder {path} holds no *.json file. Export configs with tune/export.py first.")
            files.extend(found)
        elif path.is_file():
            files.append(path)
        else:
            raise ResultsError(f"The config path {path} does not exist. Pass config files or a folder written by tune/export.py.")
    configs = [(f, SSOTConfig.from_json(f)) for f in files]
    seen: dict[str, Path] = {}
    for f, config in configs:
        if config.task in seen:
            raise ResultsError(f"The configs {seen[config.task]} and {f} are both for task {config.task!r}; pass one config per task.")
        seen[config.task] = f
    return configs


def feature_caches(paths: Sequence[str | Path]) -> dict[str, Path]:
    """Task -> feature cache for the caches ``paths`` (each file says its task)."""
    from ssot.data.features import read_feature_cache

    return {read_feature_cache(p)["task"]: Path(p) for p in paths}


def final_runs(config: SSOTConfig, seeds: Sequence[int], out_dir: str | Path, *,
               log: Log = print) -> list[RunRecord]:
    """Train ``config`` once per seed, or reuse the run records already in ``out_dir/runs``.

    Parameters
    ----------
    config : SSOTConfig
        The config to run (its ``seed`` is replaced by each seed).
    seeds : sequence of int
        The seeds.
    out_dir : str or Path
        The results folder; each new record is written to :func:`ssot.results.record.run_path` as soon as
        its run ends.
    log : callable
        Receives one progress line per seed.

    Returns
    -------
    list of RunRecord
        The run records, in the order of ``seeds``.
    """
    from ssot.trainer import run  # torch is imported only when something trains

    records = []
    for seed in seeds:
        cfg = config.replace(seed=seed)
        path = run_path(out_dir, cfg.task, seed)
        if path.exists():
            record = read_run_record(path, cfg)
            log(f"{describe(cfg.task, seed, record)} [reused {path}]")
        else:
            start = time.perf_counter()
            record = RunRecord.from_dict(run(cfg))
            write_new(path, record)
            log(f"{describe(cfg.task, seed, record)} [{time.perf_counter() - start:.1f} s, wrote {path}]")
        records.append(record)
    return records


def run_all(configs: Sequence[SSOTConfig], seeds: Sequence[int], out_dir: str | Path, *,
            log: Log = print) -> dict[str, list[RunRecord]]:
    """:func:`final_runs` for every config; returns task -> run records (in config order)."""
    return {config.task: final_runs(config, seeds, out_dir, log=log) for config in configs}


# ------------------------------------------------------------------------------------ command line
def build_parser() -> argparse.ArgumentParser:
    parser = cli.Parser(prog="python tune/final.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("configs", nargs="+", type=Path, help="config files, or folders of <task>.json (tune/export.py --out)")
    cli.add_seeds(parser, help="seeds of the final runs")
    parser.add_argument("--out", type=Path, required=True, metavar="FOLDER", help="results folder: runs/, results.csv, results.md")
    cli.add_config_flag(parser, "epochs", "overrides the configs' (quick checks)", default_text="the configs'")
    cli.add_config_flag(parser, "device", "overrides the configs'", default_text="the configs'")
    cli.add_config_flag(parser, "features_path", "here: one per task, run on instead of images", nargs="+",
                        default_text="")
    return parser


def final(args: argparse.Namespace) -> int:
    """The command's work: check the outputs, train or reuse every (config, seed), write the table."""
    cli.check_seeds(args.seeds)
    collected = collect_configs(args.configs)
    outputs.check_output(args.out, "--out", folder=True, new=[p.name for p in result_paths(args.out)],
                     inputs=[*(f for f, _ in collected), *(Path(p) for p in args.features_path or [])])
    caches = feature_caches(args.features_path) if args.features_path else None
    with cli.flag_errors(("epochs", "device")):
        configs = [apply_overrides(c, epochs=args.epochs, device=args.device, features=caches) for _, c in collected]
    records = run_all(configs, args.seeds, args.out)
    table = results_table(records)
    csv_path, md_path = write_results(table, args.out)
    print(to_markdown(table), end="")
    print(f"wrote {csv_path} and {md_path}")
    return cli.runs_status(r for rs in records.values() for r in rs)


def main(argv: Sequence[str] | None = None) -> int:
    """Command line entry point (``ssot-final``); the exit status of :mod:`ssot.cli` (1: a run diverged)."""
    return cli.command(build_parser(), final, argv, kept=lambda args: args.out / RUNS_DIR)


if __name__ == "__main__":
    sys.exit(main())
