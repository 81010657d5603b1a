"""Precomputed backbone features as a task (the ``features`` backbone): the cache format.

A feature cache is a ``.pt`` file written with ``torch.save`` holding a dict::

    {"task": str, "class_names": list[str], "target_classes": list[int],
     "source": {"features": FloatTensor (n_s, d), "labels": LongTensor (n_s,)},
     "target": {"features": FloatTensor (n_t, d), "labels": LongTensor (n_t,)},
     # format 2 (written by ``python -m ssot.features``); absent from format-1 caches:
     "format": 2, "backbone": str, "weights_sha256": str, "transform": dict,
     "source_views": FloatTensor (V, n_s, d), "target_views": FloatTensor (V, n_t, d),
     # since the encoder stages (absent from older format-2 caches, see encoder_stage):
     "encoder": "pretrained" | "imagenet" | "untrained", "seed": int,
     "pretrain_key": dict, "source_only_target_acc": float}   # the last two: pretrained only

``source``/``target`` hold the features of the *evaluation* transform. ``*_views`` hold ``V``
augmented views (training transform) of every image, ``V = 0`` allowed. Training draws, for each
sample and each access, one of its ``V`` views at random (the eval features when ``V = 0``) from a
generator of the training set's own (:func:`seed_views`: the trainer seeds it from the run's seed
and the epoch, so the draws do not depend on what else used torch's global RNG);
evaluation uses the eval features. Format-1 caches (no ``format`` key) still load, with ``V = 0``.

Training on a cache skips the backbone entirely (only bottleneck, classifier and potential train),
which is what makes large hyperparameter searches cheap. The cache's *encoder stage*
(:data:`ENCODERS`, :func:`encoder_stage`) says which network encoded it; training on a cache of an
untrained encoder is refused (:func:`check_screenable`): its screen ranks configs by noise. :func:`save_feature_cache` writes one,
atomically (a temporary file renamed into place).
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import torch
from torch.utils.data import Dataset, TensorDataset

from ssot.data.base import TaskData
from ssot.errors import DataError

FORMAT = 2
_KEYS = ("task", "class_names", "target_classes", "source", "target")
#: The encoder stages of a cache: the source-pretrained backbone of the task and seed (the
#: default of ``python -m ssot.features``), ImageNet weights only, or a random initialisation.
ENCODERS: tuple[str, ...] = ("pretrained", "imagenet", "untrained")
#: The stage of a cache whose features were not encoded by one of our backbones (a format-1 cache,
#: or features the user brought): accepted as they are.
UNKNOWN_ENCODER = "unknown"


def save_feature_cache(path: str | Path, task: str, class_names: list[str], target_classes: list[int],
                       source: tuple[torch.Tensor, torch.Tensor], target: tuple[torch.Tensor, torch.Tensor], *,
                       source_views: torch.Tensor | None = None, target_views: torch.Tensor | None = None,
                       meta: dict[str, Any] | None = None) -> None:
    """Write a feature cache atomically (``source``/``target`` are ``(features, labels)`` pairs).

    ``source_views``/``target_views`` are ``(V, n, d)`` augmented views; ``meta`` adds the
    provenance keys (``backbone``, ``weights_sha256``, ``transform``).
    """
    d = source[0].shape[1]
    blob: dict[str, Any] = {
        "format": FORMAT, "task": task, "class_names": list(class_names), "target_classes": list(target_classes),
        "source": {"features": source[0].float(), "labels": source[1].long()},
        "target": {"features": target[0].float(), "labels": target[1].long()},
        "source_views": (source_views if source_views is not None else torch.empty(0, len(source[1]), d)).float(),
        "target_views": (target_views if target_views is not None else torch.empty(0, len(target[1]), d)).float(),
        **(meta or {}),
    }
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    torch.save(blob, tmp)
    os.replace(tmp, path)


def read_feature_cache(path: str | Path) -> dict[str, Any]:
    """The cache's dict, checked for the required keys (one-line :class:`DataError` otherwise)."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"Feature cache {path} does not exist. Build one with `python -m ssot.features --task TASK --out {path}`.")
    try:
        blob = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # noqa: BLE001 - any unpickling failure is a bad file
        raise DataError(f"Feature cache {path} cannot be read ({type(exc).__name__}: {exc}). Regenerate it.") from None
    if not isinstance(blob, dict) or any(k not in blob for k in _KEYS):
        missing = _KEYS if not isinstance(blob, dict) else [k for k in _KEYS if k not in blob]
        raise DataError(f"Feature cache {path} lacks keys {', '.join(missing)}. Regenerate it.")
    return blob


def check_cache(blob: dict[str, Any], path: str | Path, task: str, backbone: str | None = None) -> None:
    """Refuse a cache built for another task, or (when ``backbone`` is given) another backbone."""
    if blob["task"] != task:
        raise DataError(f"Feature cache {path} holds task '{blob['task']}', not '{task}'. Pass the cache of task '{task}'.")
    if backbone is not None and blob.get("backbone") not in (None, backbone):
        raise DataError(f"Feature cache {path} was built with backbone '{blob['backbone']}', not '{backbone}'. "
                        f"Rebuild it with --backbone {backbone}.")


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


def cache_provenance(path: str | Path) -> dict[str, Any]:
    """What a search records about the cache it screens on: its path, encoder stage
    (:func:`encoder_stage`), backbone, seed (of the pretraining, for ``pretrained``) and the
    checksum of the encoder's weights."""
    blob = read_feature_cache(path)
    return {"path": str(path), "encoder": encoder_stage(blob), "backbone": blob.get("backbone"), "seed": blob.get("seed"),
            "weights_sha256": blob.get("weights_sha256")}


def check_screenable(blob: dict[str, Any], path: str | Path) -> None:
    """Refuse, in one line naming the fix, a cache encoded by an untrained backbone."""
    if encoder_stage(blob) == "untrained":
        raise DataError(f"Feature cache {path} was encoded by an untrained {blob.get('backbone', 'backbone')}: configs screened "
                        f"on it are ranked by noise. Rebuild it from the source-pretrained backbone: "
                        f"`python -m ssot.features --task {blob['task']} --out NEW.pt` (the default --encoder pretrained).")


class FeatureViews(Dataset):
    """Training view of a cache: item ``i`` is one of sample ``i``'s ``V`` augmented feature
    vectors, and its label.

    The view is drawn from :attr:`generator` (set by :func:`seed_views`; torch's global RNG until
    then). A generator of its own makes the draws of a run depend only on its seed and epoch, not
    on how many numbers its model initialisation took from the global RNG (which depends on the
    potential's width), so that runs of different configs, and the members of a population
    (:mod:`ssot.population`), see the same batches.
    """

    def __init__(self, views: torch.Tensor, labels: torch.Tensor):
        self.views, self.labels = views, labels
        self.tensors = (views[0], labels)  # lets trainer.dataset_labels read the labels directly
        self.generator: torch.Generator | None = None

    def __len__(self) -> int:
        return self.labels.shape[0]

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        v = int(torch.randint(self.views.shape[0], (), generator=self.generator))
        return self.views[v, index], self.labels[index]


def seed_views(ds: Dataset, seed: int) -> None:
    """Give the :class:`FeatureViews` under ``ds`` (itself, or wrapped by datasets that expose
    ``.dataset``, such as ``Subset``) a generator of its own seeded with ``seed``; other datasets
    are left alone."""
    while ds is not None:
        if isinstance(ds, FeatureViews):
            ds.generator = torch.Generator().manual_seed(seed)
            return
        ds = getattr(ds, "dataset", None)


def _train_set(blob: dict[str, Any], side: str) -> Dataset:
    views = blob.get(f"{side}_views")
    labels = blob[side]["labels"]
    if views is None or views.shape[0] == 0:
        return TensorDataset(blob[side]["features"], labels)
    return FeatureViews(views, labels)


def load_feature_task(path: str | Path, task: str, backbone: str | None = None, *, untrained_ok: bool = False) -> TaskData:
    """Load a feature cache as a :class:`TaskData` (eval features for evaluation; augmented
    views, when the cache has them, for training).

    A cache of an untrained encoder is refused (:func:`check_screenable`) unless
    ``untrained_ok`` (library use only: a measurement comparing encoder stages).
    """
    blob = read_feature_cache(path)
    check_cache(blob, path, task, backbone)
    if not untrained_ok:
        check_screenable(blob, path)
    source_eval = TensorDataset(blob["source"]["features"], blob["source"]["labels"])
    target_eval = TensorDataset(blob["target"]["features"], blob["target"]["labels"])
    return TaskData(task, _train_set(blob, "source"), source_eval, _train_set(blob, "target"), target_eval,
                    list(blob["class_names"]), sorted(blob["target_classes"]), (blob["source"]["features"].shape[1],))
