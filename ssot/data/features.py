"""Precomputed backbone features as a task (the ``features`` backbone).

A feature cache is a ``.pt`` file written with ``torch.save`` holding a dict::

    {"task": str, "class_names": list[str], "target_classes": list[int],
     "source": {"features": FloatTensor (n_s, d), "labels": LongTensor (n_s,)},
     "target": {"features": FloatTensor (n_t, d), "labels": LongTensor (n_t,)}}

Training on it skips the backbone entirely (only bottleneck, classifier and potential train),
which is what makes large hyperparameter searches cheap. :func:`save_feature_cache` writes one.
"""
from __future__ import annotations

from pathlib import Path

import torch
from torch.utils.data import TensorDataset

from ssot.data.base import TaskData
from ssot.errors import DataError

_KEYS = ("task", "class_names", "target_classes", "source", "target")


def save_feature_cache(path: str | Path, task: str, class_names: list[str], target_classes: list[int],
                       source: tuple[torch.Tensor, torch.Tensor], target: tuple[torch.Tensor, torch.Tensor]) -> None:
    """Write a feature cache (``source``/``target`` are ``(features, labels)`` pairs)."""
    torch.save({
        "task": task, "class_names": list(class_names), "target_classes": list(target_classes),
        "source": {"features": source[0].float(), "labels": source[1].long()},
        "target": {"features": target[0].float(), "labels": target[1].long()},
    }, path)


def load_feature_task(path: str | Path, task: str) -> TaskData:
    """Load a feature cache as a :class:`TaskData` (train and eval views are the same tensors)."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"Feature cache {path} does not exist. Pass --features-path to a file written by save_feature_cache.")
    try:
        blob = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # noqa: BLE001 - any unpickling failure is a bad file
        raise DataError(f"Feature cache {path} cannot be read ({type(exc).__name__}: {exc}). Regenerate it.") from None
    if not isinstance(blob, dict) or any(k not in blob for k in _KEYS):
        raise DataError(f"Feature cache {path} lacks keys {', '.join(k for k in _KEYS if k not in blob)}. Regenerate it.")
    if blob["task"] != task:
        raise DataError(f"Feature cache {path} holds task '{blob['task']}', not '{task}'. Pass the cache of task '{task}'.")
    source = TensorDataset(blob["source"]["features"], blob["source"]["labels"])
    target = TensorDataset(blob["target"]["features"], blob["target"]["labels"])
    return TaskData(task, source, source, target, target, list(blob["class_names"]),
                    sorted(blob["target_classes"]), (blob["source"]["features"].shape[1],))
