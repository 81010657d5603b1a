"""Command line: train SSOT once, or several seeds of one config (final runs).

    python -m ssot.train --task digits                     # or: ssot-train --task digits
    python -m ssot.train --task P2I --data-root DIR
    python -m ssot.train --config best.json --seeds 0 1 2 --out final.json

Every field of :class:`ssot.config.SSOTConfig` is a flag (``--lambda-ot 0.5``, ``--no-use-mask``);
flags override ``--config``, which overrides the task's defaults. Exit statuses: :mod:`ssot.cli`
(1: a run diverged; 2: bad input, refused before training); a result file is never overwritten.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ssot import cli
from ssot.errors import SSOTError
from ssot.results import outputs
from ssot.results.record import RunRecord, summarize, write_new


def build_parser() -> argparse.ArgumentParser:
    parser = cli.Parser(prog="python -m ssot.train", description=__doc__.split("\n\n")[0])
    cli.add_config_file(parser, "the flags override its fields")
    cli.add_seeds(parser, default=None, help="run once per seed and report mean +- std",
                  default_text="one run, with the config's --seed")
    parser.add_argument("--out", type=Path, metavar="PATH", help="write the run record (JSON); never overwritten")
    cli.add_quiet(parser)
    parser.add_argument("--save-model", type=Path, metavar="PATH", help="also save the source-only and final f/eta "
                        "weights (.pt, one seed); python -m ssot.feature_maps embeds their features")
    return cli.add_config_flags(parser)


def _acc(value: float | None) -> str:
    return "n/a (unlabeled)" if value is None else f"{value:.4f}"


def _print_epoch(metrics: dict[str, Any]) -> None:
    print(f"epoch {metrics['epoch']:3d}  target_acc {_acc(metrics['target_acc'])}  source_acc {metrics['source_acc']:.4f}  "
          f"L_ce {metrics['loss_ce']:.3f}  L_ot {metrics['loss_ot']:.3f}  L_ent {metrics['loss_ent']:.3f}  "
          f"outlier_mass {metrics['outlier_mass']:.3f}  classes {metrics['n_pred_classes']}  "
          f"snd {metrics['snd']:.3f}  im {metrics['im']:.3f}  dev {metrics['dev']:.3f}  mixval {metrics['mixval']:.3f}", flush=True)


def train(args: argparse.Namespace) -> int:
    """The command's work: check the outputs and the data, train every seed, write the record(s)."""
    from ssot.data import check_task

    cli.check_seeds(args.seeds)
    inputs = [p for p in (args.config, args.features_path, args.image_cache, args.pretrained_path) if p]
    if args.out is not None:
        outputs.check_output(args.out, "--out", folder=False, inputs=inputs)
    if args.save_model is not None:
        outputs.check_output(args.save_model, "--save-model", folder=False, inputs=inputs)
        if args.out is not None and Path(args.save_model).expanduser().resolve() == Path(args.out).expanduser().resolve():
            raise SSOTError(f"--save-model {args.save_model} is also --out: the run record and the model would be one file. "
                            "Choose another --save-model.")
        if args.seeds and len(args.seeds) > 1:
            raise SSOTError(f"--save-model saves one run but {len(args.seeds)} seeds were given; pass one seed.")
    config = cli.config_from_args(args)
    check_task(config)  # a missing dataset: one line, before torch loads
    from ssot.trainer import Trainer

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
    summary = summarize(records)
    if len(records) > 1 and summary["target_acc"] is not None:
        t, b = summary["target_acc"], summary["source_only_target_acc"]
        print(f"{len(records)} seeds: target_acc {t['mean']:.4f} +- {t['std']:.4f}  (source-only {b['mean']:.4f} +- {b['std']:.4f})")
    if args.out is not None:
        payload = records[0] if len(records) == 1 else {"config": records[0]["config"], "summary": summary, "runs": records}
        print(f"wrote {write_new(args.out, payload)}")  # never overwrites a result
    return cli.runs_status(records)


def main(argv: list[str] | None = None) -> int:
    """Command line entry point (``ssot-train``); the exit status of :mod:`ssot.cli`."""
    return cli.command(build_parser(), train, argv)


if __name__ == "__main__":
    sys.exit(main())
