"""Command line: train SSOT once, or several seeds of one config (final runs).

    python -m ssot.train --task digits
    python -m ssot.train --task P2I --data-root DIR
    python -m ssot.train --config best.json --seeds 0 1 2 --out final.json

Every field of :class:`ssot.config.SSOTConfig` is a flag (``--lambda-ot 0.5``, ``--no-use-mask``);
flags override ``--config``, which overrides the task's defaults. User errors print one line and
exit with status 2; a result file is never overwritten.
"""
from __future__ import annotations

import argparse
import dataclasses
import sys
import types
import typing
from pathlib import Path
from typing import Any

from ssot.config import SSOTConfig
from ssot.errors import SSOTError, check_output, one_line
from ssot.results.record import RunRecord, summarize, write_new

_HELP = {
    "task": "task name: digits, P2H, H2P (embedded, no download; H2H and P2P are their target-supervised references), custom (--source/--target folders) or a paper task such as A2W, P2I, Ar2Cl, S2R",
    "data_root": "root folder of the benchmark datasets (default: $SSOT_DATA_ROOT)",
    "source_dir": "task custom: source folder with one sub-folder per class",
    "target_dir": "task custom: target folder with class sub-folders, or a flat folder of unlabeled images",
}
_ALIASES = {"source_dir": "--source", "target_dir": "--target"}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m ssot.train", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--config", type=Path, help="JSON config (e.g. a best config exported by the search)")
    parser.add_argument("--seeds", type=int, nargs="+", help="run once per seed and report mean +- std")
    parser.add_argument("--out", type=Path, help="write the run record (JSON); refuses to overwrite")
    parser.add_argument("--quiet", action="store_true", help="no progress bar, only the summary")
    parser.add_argument("--save-model", type=Path, help="also save the source-only and final f/eta weights (.pt, one seed); "
                        "tune/feature_maps.py embeds their features")
    return add_config_flags(parser)


def add_config_flags(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add one flag per :class:`SSOTConfig` field (read back by :func:`config_from_args`)."""
    hints = typing.get_type_hints(SSOTConfig)
    for f in dataclasses.fields(SSOTConfig):
        flag = "--" + f.name.replace("_", "-")
        doc = _HELP.get(f.name, f"SSOTConfig.{f.name}")
        kind = hints[f.name]
        if kind is bool:
            parser.add_argument(flag, dest=f.name, action=argparse.BooleanOptionalAction, default=None, help=doc)
        elif f.name == "bottleneck_dims":
            parser.add_argument(flag, dest=f.name, type=int, nargs="+", default=None, help=doc)
        else:
            base = _base_type(kind)
            flags = [flag, _ALIASES[f.name]] if f.name in _ALIASES else [flag]
            parser.add_argument(*flags, dest=f.name, type=base, default=None, help=doc)
    return parser


def _base_type(kind: Any) -> type:
    """``float`` for ``float``, ``str`` for ``str | None`` and so on."""
    if isinstance(kind, types.UnionType) or typing.get_origin(kind) is typing.Union:
        kind = next(a for a in typing.get_args(kind) if a is not type(None))
    return kind


def config_from_args(args: argparse.Namespace) -> SSOTConfig:
    """Task defaults <- ``--config`` file <- explicit flags."""
    overrides = {f.name: getattr(args, f.name) for f in dataclasses.fields(SSOTConfig) if getattr(args, f.name) is not None}
    if args.config is not None:
        base = SSOTConfig.from_json(args.config).to_dict()
        return SSOTConfig.from_dict({**base, **overrides}, source=f"config file {args.config} with flags")
    task = overrides.pop("task", "digits")
    return SSOTConfig.for_task(task, **overrides)


def _acc(value: float | None) -> str:
    return "n/a (unlabeled)" if value is None else f"{value:.4f}"


def _print_epoch(metrics: dict[str, Any]) -> None:
    print(f"epoch {metrics['epoch']:3d}  target_acc {_acc(metrics['target_acc'])}  source_acc {metrics['source_acc']:.4f}  "
          f"L_ce {metrics['loss_ce']:.3f}  L_ot {metrics['loss_ot']:.3f}  L_ent {metrics['loss_ent']:.3f}  "
          f"outlier_mass {metrics['outlier_mass']:.3f}  classes {metrics['n_pred_classes']}  "
          f"snd {metrics['snd']:.3f}  im {metrics['im']:.3f}  dev {metrics['dev']:.3f}  mixval {metrics['mixval']:.3f}", flush=True)


def main(argv: list[str] | None = None) -> int:
    from ssot.trainer import Trainer

    args = build_parser().parse_args(argv)
    try:
        if args.out is not None and args.out.exists():
            raise SSOTError(f"--out {args.out} already exists; choose another path or move the old result away (results are never overwritten).")
        if args.out is not None:
            check_output(args.out, "--out", folder=False)
        if args.save_model is not None and args.save_model.exists():
            raise SSOTError(f"--save-model {args.save_model} already exists; choose another path (files are never overwritten).")
        if args.save_model is not None and args.seeds and len(args.seeds) > 1:
            raise SSOTError(f"--save-model saves one run but {len(args.seeds)} seeds were given; pass one seed.")
        config = config_from_args(args)
        seeds = args.seeds if args.seeds else [config.seed]
        records = []
        for seed in seeds:
            cfg = config.replace(seed=seed)
            trainer = Trainer(cfg, progress=not args.quiet)
            print(f"SSOT on task {cfg.task} ({trainer.device}), seed {seed}: lambda_ot={cfg.lambda_ot:g} "
                  f"lambda_ent={cfg.lambda_ent:g} eps={cfg.eps:g} potential_width={cfg.potential_width}", flush=True)
            trainer.pretrain()
            print(f"source-only target_acc {_acc(trainer.record['source_only_target_acc'])}", flush=True)
            source_only = {k: {n: t.clone() for n, t in trainer.pretrained_state()[k].items()} for k in ("f", "eta")}
            record = trainer.fit(on_epoch=None if args.quiet else _print_epoch)
            if args.save_model is not None:
                from ssot.feature_maps import save_models

                save_models(args.save_model, cfg, source_only, {"f": trainer.f.state_dict(), "eta": trainer.eta.state_dict()})
                print(f"wrote {args.save_model}")
            typed = RunRecord.from_dict(record)
            if typed.status == "diverged":
                print(f"run diverged: {typed.reason}", file=sys.stderr)
            else:
                print(f"final target_acc {_acc(typed.epochs[-1]['target_acc'] if typed.epochs else float('nan'))} "
                      f"(source-only {_acc(typed.source_only_target_acc)})", flush=True)
            records.append(record)
    except SSOTError as exc:
        print(f"error: {one_line(exc)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    summary = summarize(records)
    if len(records) > 1 and summary["target_acc"] is not None:
        t, b = summary["target_acc"], summary["source_only_target_acc"]
        print(f"{len(records)} seeds: target_acc {t['mean']:.4f} +- {t['std']:.4f}  (source-only {b['mean']:.4f} +- {b['std']:.4f})")
    if args.out is not None:
        payload = records[0] if len(records) == 1 else {"config": records[0]["config"], "summary": summary, "runs": records}
        print(f"wrote {write_new(args.out, payload)}")  # never overwrites a result
    return 0 if all(r["status"] == "completed" for r in records) else 1


if __name__ == "__main__":
    sys.exit(main())
