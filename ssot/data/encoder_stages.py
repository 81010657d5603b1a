"""The encoder stage of a feature cache: which network encoded its features (torch-free).

``python -m ssot.features --encoder STAGE`` builds a cache of one of :data:`ENCODERS`;
:func:`encoder_stage` reads a cache's stage back (inferring it for caches written before stages
were recorded) and :func:`check_screenable` refuses training or searching on a cache of an
untrained encoder. The cache's format is :mod:`ssot.data.features`; this module loads no torch,
so that a command's parser and its refusals run before torch is imported.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from ssot.errors import DataError

#: The encoder stages of a cache: the source-pretrained backbone of the task and seed (the
#: default of ``python -m ssot.features``), ImageNet weights only, or a random initialisation.
ENCODERS: tuple[str, ...] = ("pretrained", "imagenet", "untrained")
#: The stage of a cache whose features were not encoded by one of our backbones (a format-1 cache,
#: or features the user brought): accepted as they are.
UNKNOWN_ENCODER = "unknown"


def encoder_stage(blob: dict[str, Any]) -> str:
    """The encoder stage of a cache (:data:`ENCODERS`, or :data:`UNKNOWN_ENCODER`).

    Caches written before the stages were recorded are inferred: the digits CNN was never
    pretrained, so ``digits_cnn`` is ``untrained``; ``resnet50`` is ``imagenet`` when built with
    its ImageNet weights (``pretrained`` true), else ``untrained``; a cache without a
    ``backbone`` (format 1, or user-made features) is ``unknown``.
    """
    if blob.get("encoder") in ENCODERS:
        return str(blob["encoder"])
    backbone = blob.get("backbone")
    if backbone == "digits_cnn":
        return "untrained"
    if backbone == "resnet50":
        return "imagenet" if blob.get("pretrained") else "untrained"
    return UNKNOWN_ENCODER


def check_screenable(blob: dict[str, Any], path: str | Path) -> None:
    """Refuse, in one line naming the fix, a cache encoded by an untrained backbone."""
    if encoder_stage(blob) == "untrained":
        raise DataError(f"Feature cache {path} was encoded by an untrained {blob.get('backbone', 'backbone')}: configs screened "
                        f"on it are ranked by noise. Rebuild it from the source-pretrained backbone: "
                        f"`python -m ssot.features --task {blob['task']} --out NEW.pt` (the default --encoder pretrained).")
