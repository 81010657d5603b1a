"""Command line: build a feature cache of a task with a frozen backbone.

    python -m ssot.features --task P2H --out p2h.pt                 # the source-pretrained backbone (default)
    python -m ssot.features --task A2W --data-root DIR --views 4 --out a2w.pt    # + 4 augmented views
    python -m ssot.features --task A2W --data-root DIR --encoder imagenet --out a2w-imagenet.pt

The encoder (``--encoder``, the cache's *encoder stage*, :data:`ssot.data.encoder_stages.ENCODERS`):

``pretrained`` (default)
    the task's backbone after source pretraining (Algorithm 1, line 1): exactly the pretraining a
    search shares across its trials (:meth:`ssot.trainer.Trainer.pretrain`, same config fields
    :data:`ssot.trainer.Trainer.PRETRAIN_FIELDS` and seed), from ImageNet weights for ResNet-50
    (unless ``--no-pretrained``). A screen on the cache then trains, per config, what an
    end-to-end trial adapts on top of that backbone: bottleneck, classifier and potential.
    The cache of seed ``S`` comes from the pretraining of seed ``S`` (``--seed``).
``imagenet``
    ResNet-50's ImageNet weights, not adapted to the task (for comparison).
``untrained``
    the backbone's seeded random initialisation (for comparison). Training or searching on such
    a cache is refused (:func:`ssot.data.encoder_stages.check_screenable`): it ranks configs by noise.

Takes the model and transform flags of ``python -m ssot.train`` (``--no-pretrained``,
``--image-size 64``, ``--pretrained-path``, ``--device``, ``--precision``, ``--pretrain-epochs``...).
Every image of the source and the target goes once through the frozen backbone with the
evaluation transform, and ``--views`` more times with the training transform (random crops and
flips), batched under ``torch.no_grad()`` (bf16 autocast on a GPU). The file (format in
:mod:`ssot.data.features`) records the task, the backbone, its encoder stage (with the
pretraining's config fields and seed), a checksum of its weights and the transform; it is written
atomically and never overwrites a file. Train on it with ``python -m ssot.train --task TASK
--features PATH``, search on it with ``python tune/search.py --task TASK --features PATH``.
Bad input (a flag, an unknown task, a missing data root or dataset, an ``--out`` that exists or
is an input) is refused before torch is imported.
"""
from __future__ import annotations

import argparse
import contextlib
import hashlib
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ssot import cli
from ssot.config import SSOTConfig
from ssot.data.base import num_samples, usable_workers
from ssot.data.encoder_stages import ENCODERS
from ssot.errors import ConfigError, SSOTError
from ssot.results import outputs

if TYPE_CHECKING:  # torch loads once the arguments and the task's data are checked (build_feature_cache)
    import torch
    from torch.utils.data import Dataset


def weights_checksum(module: torch.nn.Module) -> str:
    """SHA-256 of a module's state dict (names, shapes and values, in order): the same weights
    give the same checksum whether they came from a file or from a seeded initialisation."""
    from ssot.data.features import hash_tensor

    h = hashlib.sha256()
    for name, tensor in module.state_dict().items():
        hash_tensor(h, name, tensor)
    return h.hexdigest()


def _encode(backbone: torch.nn.Module, ds: Dataset, config: SSOTConfig, device: torch.device, bar: Any) -> torch.Tensor:
    import torch
    from torch.utils.data import DataLoader

    loader = DataLoader(ds, batch_size=config.eval_batch_size, shuffle=False, num_workers=usable_workers(config.num_workers),
                        pin_memory=device.type == "cuda")
    bf16 = device.type == "cuda" or config.precision == "bf16"
    out = []
    for x, _ in loader:
        ctx = torch.autocast(device.type, dtype=torch.bfloat16) if bf16 else contextlib.nullcontext()
        with ctx:
            out.append(backbone(x.to(device, non_blocking=True)).float().cpu())
        bar.update(x.shape[0])
    return torch.cat(out)


def _encoder(config: SSOTConfig, encoder: str, task: Any, progress: bool) -> tuple[torch.nn.Module, dict[str, Any]]:
    """The frozen backbone of ``encoder`` and what the cache records about its stage."""
    import torch

    from ssot.models import build_backbone
    from ssot.trainer import Trainer

    if encoder == "pretrained":
        trainer = Trainer(config, task, progress=progress)
        with torch.enable_grad():
            trainer.pretrain()
        return trainer.f.backbone, {"pretrain_key": {k: getattr(config, k) for k in Trainer.PRETRAIN_FIELDS},
                                    "source_only_target_acc": trainer.record["source_only_target_acc"]}
    backbone, _ = build_backbone(config if encoder == "imagenet" else config.replace(pretrained=False))
    return backbone, {}


def build_feature_cache(config: SSOTConfig, out: str | Path, *, views: int = 0, encoder: str = "pretrained",
                        progress: bool = True) -> dict[str, Any]:
    """Encode ``config``'s task with the frozen backbone of ``encoder`` and write the cache to ``out``.

    Every refusal of its arguments, the task's data included (:func:`ssot.data.check_task`),
    comes before torch is imported.

    Parameters
    ----------
    config : the task, backbone (``resnet50`` or ``digits_cnn``), transform sizes, device, and
        for ``encoder="pretrained"`` the pretraining (its seed included).
    out : the cache file; must not exist.
    views : augmented (training-transform) views per image, besides the evaluation view.
    encoder : the encoder stage, one of :data:`ssot.data.encoder_stages.ENCODERS` (module docstring).
    progress : show tqdm bars (pretraining, every image encoded).

    Returns
    -------
    The provenance recorded in the file (``backbone``, ``encoder``, ``weights_sha256``,
    ``transform``; ``pretrain_key`` and ``source_only_target_acc`` for a pretrained encoder).
    """
    from ssot.data import check_task

    out = Path(out)
    if out.exists():
        raise SSOTError(f"--out {out} already exists; choose another path or move the old cache away (caches are never overwritten).")
    if config.backbone == "features":
        raise ConfigError("The 'backbone' parameter must be an image backbone ('resnet50' or 'digits_cnn') to build a cache. Got 'features' instead.")
    if not isinstance(views, int) or views < 0:
        raise ConfigError(f"The 'views' parameter must be an int in [0, inf). Got {views!r} instead.")
    if encoder not in ENCODERS:
        raise ConfigError(f"The 'encoder' parameter must be one of {', '.join(ENCODERS)}. Got {encoder!r} instead.")
    if encoder == "imagenet" and not (config.backbone == "resnet50" and config.pretrained):
        raise ConfigError(f"The 'encoder' parameter 'imagenet' needs the resnet50 backbone with its ImageNet weights "
                          f"(backbone {config.backbone!r}, pretrained {config.pretrained}). Use --encoder pretrained or untrained.")
    check_task(config)
    import torch

    with torch.no_grad():
        return _write_cache(config, out, views, encoder, progress)


def _write_cache(config: SSOTConfig, out: Path, views: int, encoder: str, progress: bool) -> dict[str, Any]:
    """:func:`build_feature_cache` once its arguments are checked: encode the task, write the cache."""
    import torch

    from ssot.data import build_task
    from ssot.data.features import save_feature_cache
    from ssot.trainer import dataset_labels, resolve_device, seed_everything

    out.parent.mkdir(parents=True, exist_ok=True)
    seed_everything(config.seed)
    device = resolve_device(config.device)
    task = build_task(config)
    backbone, stage = _encoder(config, encoder, task, progress)
    seed_everything(config.seed)  # the augmented views' draws do not depend on the encoder stage
    backbone = backbone.to(device).eval()
    meta = {"backbone": config.backbone, "encoder": encoder, **stage, "weights_sha256": weights_checksum(backbone),
            "transform": {"image_size": config.image_size, "resize_size": config.resize_size, "views": views,
                          "eval": repr(getattr(task.source_eval, "transform", None)),
                          "train": repr(getattr(task.source, "transform", None))},
            "pretrained": config.pretrained, "pretrained_path": config.pretrained_path, "seed": config.seed}
    from tqdm.auto import tqdm

    total = (1 + views) * (num_samples(task.source_eval) + num_samples(task.target_eval))
    with tqdm(total=total, desc=f"features {task.name}", unit="img", disable=not progress, dynamic_ncols=True) as bar:
        enc = {side: _encode(backbone, ds, config, device, bar) for side, ds in (("source", task.source_eval), ("target", task.target_eval))}
        aug = {side: torch.stack([_encode(backbone, ds, config, device, bar) for _ in range(views)]) if views else None
               for side, ds in (("source", task.source), ("target", task.target))}
    save_feature_cache(out, task.name, task.class_names, task.target_classes,
                       (enc["source"], dataset_labels(task.source_eval)), (enc["target"], dataset_labels(task.target_eval)),
                       source_views=aug["source"], target_views=aug["target"], meta=meta)
    return meta


def build_parser() -> argparse.ArgumentParser:
    parser = cli.Parser(prog="python -m ssot.features", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, metavar="PATH", help="the cache file (.pt); never overwritten")
    parser.add_argument("--views", type=int, default=0, help="augmented views per image (training transform), besides the eval view")
    parser.add_argument("--encoder", choices=ENCODERS, default="pretrained",
                        help="the backbone's stage: pretrained (source-pretrained, as a search's trials share it), imagenet "
                             "(ResNet-50's ImageNet weights) or untrained (random init; refused by training and search)")
    cli.add_config_file(parser, "its model and transform fields are used, the flags override them")
    cli.add_quiet(parser)
    return cli.add_config_flags(parser)


def main(argv: list[str] | None = None) -> int:
    """Command line entry point (``ssot-features``); the exit status of :mod:`ssot.cli`."""
    return cli.command(build_parser(), features, argv, interrupted="no cache written")


def features(args: argparse.Namespace) -> int:
    """The command's work: check the output, encode the task, write the cache."""
    outputs.check_output(args.out, "--out", folder=False, inputs=[p for p in (args.config, args.pretrained_path, args.image_cache,
                                                                          args.features_path) if p])
    config = cli.config_from_args(args)
    meta = build_feature_cache(config, args.out, views=args.views, encoder=args.encoder, progress=not args.quiet)
    stage = meta["encoder"] + (f", seed {config.seed}, source-only target_acc {meta['source_only_target_acc']:.4f}"
                               if meta.get("source_only_target_acc") is not None else "")
    print(f"wrote {args.out} (task {config.task}, backbone {meta['backbone']} {stage}, weights {meta['weights_sha256'][:12]}, "
          f"{args.views} augmented views)")
    if meta["encoder"] == "untrained":
        print("an untrained encoder ranks configs by noise: training and searching on this cache are refused (comparisons only)")
    else:
        print(f"train on it with `python -m ssot.train --task {config.task} --features {args.out}`, search on it with "
              f"`python tune/search.py --task {config.task} --features {args.out}`")
    return cli.EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
