"""Ablations of SSOT over seeds: full / w/o m / w/o Mask / w/o Ent, in the paper's layout.

    python tune/ablation.py --task digits --seeds 0 1 2 --out abl
    python tune/ablation.py --config best/P2I.json --seeds 0 1 2 --out abl_P2I
    python tune/ablation.py --task digits --seeds 0 --epochs 1 --out /tmp/abl   # quick check

The full method's config is ``--config`` (a best or confirmed config, e.g. from
``tune/export.py``) or the task's defaults; each ablation changes one field of it
(:data:`VARIANTS`). Every (variant, seed) run is a Ray task (one CPU each, on a local Ray of
``--num-cpus`` CPUs, default all);
its run record is written to ``OUT/<variant>/runs/<task>_seed<s>.json`` (the layout of
``tune/final.py``) as soon as it ends, and an existing record is reused instead of retrained, so
rerunning an interrupted command continues it. The table is written to ``OUT/ablation.csv`` and
``OUT/ablation.md`` (rows: variants; columns: tasks; target accuracy in %, mean +- std over seeds,
the last epoch of each run); existing tables are never overwritten. Exit statuses: :mod:`ssot.cli`
(2: bad input; 1: a run did not complete).
"""
from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from ssot import cli
from ssot.config import SSOTConfig
from ssot.results import outputs
from ssot.results.final_table import format_mean_std
from ssot.results.markdown import markdown_table
from ssot.results.record import RunRecord, mean_std, records, run_path
from tune import flags
from tune.runner import Log, apply_overrides, train_on_ray

#: variant -> (folder name, config changes). "w/o Ent" is lambda_ent = 0 (see ssot.config).
VARIANTS: dict[str, tuple[str, dict[str, Any]]] = {
    "SSOT w/o m": ("no_m", {"use_class_weights": False}),
    "SSOT w/o Mask": ("no_mask", {"use_mask": False}),
    "SSOT w/o Ent": ("no_ent", {"lambda_ent": 0.0}),
    "SSOT": ("full", {}),
}


def ablation_paths(out_dir: str | Path) -> tuple[Path, Path]:
    """``OUT/ablation.csv`` and ``OUT/ablation.md``."""
    return Path(out_dir) / "ablation.csv", Path(out_dir) / "ablation.md"


Variants = dict[str, tuple[str, dict[str, Any]]]


def variant_configs(full: SSOTConfig, variants: Variants = VARIANTS) -> dict[str, SSOTConfig]:
    """``full`` with each variant's changes applied (validated), by variant name."""
    return {name: full.replace(**changes) for name, (_, changes) in variants.items()}


def run_variants(full: SSOTConfig, seeds: Sequence[int], out_dir: str | Path, *, variants: Variants = VARIANTS,
                 num_cpus: int | None = None, address: str | None = None, max_concurrent: int | None = None,
                 log: Log = print) -> dict[str, list[RunRecord]]:
    """Train every (variant, seed) missing from ``out_dir/<variant folder>/runs`` through Ray
    (one CPU per run on a local Ray of ``num_cpus`` CPUs, default all, or the cluster at
    ``address``; at most ``max_concurrent`` at once, :func:`tune.runner.train_on_ray`); reuse the
    records already there.

    Returns
    -------
    dict
        variant name -> run records in the order of ``seeds``.
    """
    jobs = {(name, seed): (cfg.replace(seed=seed), run_path(Path(out_dir) / variants[name][0], cfg.task, seed))
            for name, cfg in variant_configs(full, variants).items() for seed in seeds}
    records = train_on_ray(jobs, num_cpus=num_cpus, address=address, max_concurrent=max_concurrent, log=log)
    return {name: [records[name, s] for s in seeds] for name in variants}


def ablation_table(by_task: Mapping[str, Mapping[str, Sequence[Mapping[str, Any] | RunRecord]]]) -> pd.DataFrame:
    """Long table: task, variant, mean, std (target accuracy in %, the final accuracy of each
    completed run), n_seeds, n_completed."""
    rows = []
    for task, by_variant in by_task.items():
        for name, runs in by_variant.items():
            typed = records(runs)
            accs = [100 * r.final_acc for r in typed if r.completed and r.final_acc is not None]
            mean, std = mean_std(accs) if accs else (float("nan"), 0.0)
            rows.append({"task": task, "variant": name, "mean": mean, "std": std,
                         "n_seeds": len(typed), "n_completed": len(accs)})
    return pd.DataFrame(rows, columns=["task", "variant", "mean", "std", "n_seeds", "n_completed"])


def ablation_markdown(table: pd.DataFrame) -> str:
    """Rows: variants in the paper's order; columns: tasks; cells ``mean +- std`` (%)."""
    tasks = list(dict.fromkeys(table["task"]))
    cell = {(r["task"], r["variant"]): format_mean_std(r["mean"], r["std"]) for r in table.to_dict("records")}
    return markdown_table(["Method", *tasks], [[name, *(cell[task, name] for task in tasks)] for name in VARIANTS])


def build_parser() -> argparse.ArgumentParser:
    parser = cli.Parser(prog="python tune/ablation.py", description=__doc__.split("\n\n")[0])
    cli.add_config_source(parser, "here: its default config is the full method", "the full method's (a best or confirmed config)")
    parser.add_argument("--out", type=Path, required=True, metavar="FOLDER", help="folder: <variant>/runs/, ablation.csv, ablation.md")
    cli.add_config_flag(parser, "epochs", "overrides the config's (quick checks)", default_text="the config's")
    cli.add_config_flag(parser, "device", "overrides the config's", default_text="the config's")
    flags.add_ray_flags(parser)
    return parser


def ablation(args: argparse.Namespace) -> int:
    """The command's work: check the outputs, train or reuse every (variant, seed), write the table."""
    cli.check_seeds(args.seeds)
    flags.check_resources_args(args)
    csv_path, md_path = ablation_paths(args.out)
    outputs.check_output(args.out, "--out", folder=True, new=[csv_path.name, md_path.name])
    full = SSOTConfig.from_json(args.config) if args.config else SSOTConfig.for_task(args.task)
    with cli.flag_errors(("epochs", "device")):
        full = apply_overrides(full, epochs=args.epochs, device=args.device)
    by_variant = run_variants(full, args.seeds, args.out, num_cpus=args.num_cpus, address=args.address)
    table = ablation_table({full.task: by_variant})
    outputs.check_output(args.out, "--out", folder=True, new=[csv_path.name, md_path.name])
    with open(csv_path, "x", newline="") as fh:  # "x": never overwrite a table
        table.to_csv(fh, index=False)
    with open(md_path, "x") as fh:
        fh.write(ablation_markdown(table))
    print(f"{ablation_markdown(table)}wrote {csv_path} and {md_path}")
    return cli.runs_status(r for rs in by_variant.values() for r in rs)


def main(argv: Sequence[str] | None = None) -> int:
    """Command line entry point (``ssot-ablation``); the exit status of :mod:`ssot.cli` (1: a run diverged)."""
    return cli.command(build_parser(), ablation, argv, kept=lambda args: args.out)


if __name__ == "__main__":
    sys.exit(main())
