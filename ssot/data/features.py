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
     "pretrain_key": dict, "source_only_target_acc": float,   # the last two: pretrained only
     # since caches are checked (absent from older caches):
     "sha256": str}   # of everything above (content_checksum)

``source``/``target`` hold the features of the *evaluation* transform. ``*_views`` hold ``V``
augmented views (training transform) of every image, ``V = 0`` allowed. Training draws, for each
sample and each access, one of its ``V`` views at random (the eval features when ``V = 0``) from a
generator of the training set's own (:func:`seed_views`: the trainer seeds it from the run's seed
and the epoch, so the draws do not depend on what else used torch's global RNG);
evaluation uses the eval features. Format-1 caches (no ``format`` key) still load, with ``V = 0``.

Training on a cache skips the backbone entirely (only bottleneck, classifier and potential train),
which is what makes large hyperparameter searches cheap. The cache's *encoder stage*
(:mod:`ssot.data.encoder_stages`) says which network encoded it; training on a cache of an
untrained encoder is refused (:func:`~ssot.data.encoder_stages.check_screenable`): its screen
ranks configs by noise. :func:`save_feature_cache` writes one, atomically (a temporary file
renamed into place), with the checksum of its contents.

Every opening of a cache (:func:`read_feature_cache`: once per process that trains on it, e.g.
once per worker of a search, never per epoch) loads it safely (tensors and plain types only),
recomputes the checksum over everything it holds and checks its shapes, its labels and that every
feature is finite: a damaged cache is refused in one line naming the file, the expected and found
checksums and the command that rebuilds it, before any training (a NaN in a cache is never
reported as a diverged run). A cache without a checksum (written before caches had one, or by
hand) is accepted with a one-line warning, its shapes, labels and values still checked. What the
check costs: docs/screening.md.
"""
from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.utils.data import Dataset, TensorDataset

from ssot.data.base import TaskData
from ssot.data.encoder_stages import check_screenable, encoder_stage
from ssot.data.safe_load import load_dict
from ssot.errors import DataError

FORMAT = 2
#: The key of the checksum of a cache's contents (:func:`content_checksum`), written by
#: :func:`save_feature_cache` and verified by :func:`read_feature_cache`.
CHECKSUM_KEY = "sha256"
_KEYS = ("task", "class_names", "target_classes", "source", "target")


def hash_tensor(digest: Any, name: str, tensor: torch.Tensor) -> None:
    """Feed one named tensor to a ``hashlib`` digest: its name, shape and dtype, then its bytes
    (no copy when it is contiguous on the CPU). The one way the project checksums tensors: a
    cache's contents (:func:`content_checksum`) and an encoder's weights
    (:func:`ssot.features.weights_checksum`)."""
    t = tensor.detach().cpu().contiguous()
    digest.update(f"{name}:{tuple(t.shape)}:{t.dtype}".encode())
    if t.numel():
        digest.update(t.reshape(-1).view(torch.uint8).numpy())


def content_checksum(blob: dict[str, Any]) -> str:
    """SHA-256 of everything a cache holds but its own checksum (:data:`CHECKSUM_KEY`): every
    tensor (:func:`hash_tensor`) and every other value (as JSON), keys in sorted order, nested
    dicts included. Any changed feature, label, class name or provenance changes it."""
    digest = hashlib.sha256()

    def feed(prefix: str, value: Any) -> None:
        if isinstance(value, dict):
            for key in sorted(value, key=str):
                if not (prefix == "" and key == CHECKSUM_KEY):
                    feed(f"{prefix}/{key}", value[key])
        elif isinstance(value, torch.Tensor):
            hash_tensor(digest, prefix, value)
        else:
            digest.update(f"{prefix}={json.dumps(value, sort_keys=True, default=repr)};".encode())

    feed("", blob)
    return digest.hexdigest()


def save_feature_cache(path: str | Path, task: str, class_names: list[str], target_classes: list[int],
                       source: tuple[torch.Tensor, torch.Tensor], target: tuple[torch.Tensor, torch.Tensor], *,
                       source_views: torch.Tensor | None = None, target_views: torch.Tensor | None = None,
                       meta: dict[str, Any] | None = None) -> None:
    """Write a feature cache atomically (``source``/``target`` are ``(features, labels)`` pairs),
    with the checksum of its contents (:func:`content_checksum`).

    ``source_views``/``target_views`` are ``(V, n, d)`` augmented views; ``meta`` adds the
    provenance keys (``backbone``, ``weights_sha256``, ``transform``).

    Raises
    ------
    DataError
        When a feature is NaN or infinite (a diverged encoder): nothing is written.
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
    bad = _non_finite(blob)
    if bad:
        raise DataError(f"The features for {path} are not all finite ({bad}): the encoder diverged. Nothing was written; "
                        "rebuild the cache with another --seed or --pretrain-epochs.")
    blob[CHECKSUM_KEY] = content_checksum(blob)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    torch.save(blob, tmp)
    os.replace(tmp, path)


def rebuild_command(blob: dict[str, Any] | None, path: str | Path) -> str:
    """The command that makes the cache at ``path`` again, from what ``blob`` (when readable)
    records: its task (with ``--data-root DIR`` for an image benchmark), backbone, encoder stage,
    seed and views."""
    from ssot.data.registry import DATASETS

    blob = blob or {}

    def recorded(key: str, kind: type) -> Any:
        value = blob.get(key)
        return value if isinstance(value, kind) and not isinstance(value, bool) else None

    task = recorded("task", str) or "TASK"
    parts = ["python -m ssot.features", f"--task {task}"]
    if any(task in spec.tasks for spec in DATASETS.values() if spec.on_disk):
        parts.append("--data-root DIR")
    if recorded("backbone", str) not in (None, "digits_cnn"):
        parts.append(f"--backbone {blob['backbone']}")
    if recorded("encoder", str) not in (None, "pretrained"):
        parts.append(f"--encoder {blob['encoder']}")
    if recorded("seed", int) is not None:
        parts.append(f"--seed {blob['seed']}")
    views = blob.get("transform", {}).get("views") if isinstance(blob.get("transform"), dict) else None
    if isinstance(views, int) and views > 0:
        parts.append(f"--views {views}")
    return " ".join([*parts, f"--out {path}"])


def _non_finite(blob: dict[str, Any]) -> str:
    """Where ``blob``'s features are NaN or infinite (``"12 NaN or infinite values in target/features"``), or ``""``."""
    found = []
    for name, tensor in (("source/features", blob["source"]["features"]), ("target/features", blob["target"]["features"]),
                         ("source_views", blob.get("source_views")), ("target_views", blob.get("target_views"))):
        if isinstance(tensor, torch.Tensor) and tensor.is_floating_point():
            n = _count_non_finite(tensor)
            if n:
                found.append(f"{n} NaN or infinite value{'s' * (n != 1)} in {name}")
    return ", ".join(found)


def _count_non_finite(tensor: torch.Tensor) -> int:
    """How many values of a float tensor are NaN or infinite. NumPy's check, one pass without
    threads, where it can (float16/32/64): torch's spreads a small tensor over its thread pool,
    measured over 100x slower on a loaded 2-core machine (4 MB: 60-90 ms against under 1 ms)."""
    if tensor.dtype not in (torch.float16, torch.float32, torch.float64):
        return int((~torch.isfinite(tensor)).sum())
    values = tensor.detach().cpu().numpy()
    return 0 if np.isfinite(values).all() else int(np.count_nonzero(~np.isfinite(values)))


#: The paths whose missing checksum was already reported by this process (one warning each).
_WARNED: set[str] = set()


def read_feature_cache(path: str | Path, *, verify: bool = True) -> dict[str, Any]:
    """The cache's dict, checked: loaded safely (:func:`ssot.data.safe_load.load_dict`), its
    keys, and (``verify``) its checksum, its shapes, its labels and finite features.

    The checksum (:func:`content_checksum`, recorded as :data:`CHECKSUM_KEY` by
    :func:`save_feature_cache`) is recomputed over every byte the file holds: a cache changed
    since it was written (a flipped bit, a NaN) is refused naming the expected and found
    checksums. A cache written before caches carried one (or features brought by hand with
    ``torch.save``) has none: it is accepted, with one warning line on stderr per process, and
    its shapes, labels and values are still checked. ``verify=False`` reads the dict only
    (provenance).

    Raises
    ------
    DataError
        One line naming the file, the problem, and the command that rebuilds it.
    """
    path = Path(path)
    fix = (f"Build one with `python -m ssot.features --task TASK --out {path}`." if not path.exists()
           else "Pass a cache written by `python -m ssot.features --task TASK --out FILE`, or rebuild it.")
    blob = load_dict(path, f"Feature cache {path}", fix, error=DataError)
    missing = [k for k in _KEYS if k not in blob]
    if missing:
        raise DataError(f"Feature cache {path} lacks keys {', '.join(missing)}: it is not a feature cache. "
                        f"Rebuild it: `{rebuild_command(blob, path)}` (after removing it).")
    if verify:
        check_contents(blob, path)
    return blob


def check_contents(blob: dict[str, Any], path: str | Path) -> None:
    """Refuse a cache whose checksum does not match its contents, whose shapes or labels do not
    fit together, or whose features are not finite (:func:`read_feature_cache`)."""
    rebuild = f"Remove it and rebuild it: `{rebuild_command(blob, path)}`."
    recorded = blob.get(CHECKSUM_KEY)
    if recorded is None:
        if str(path) not in _WARNED:
            _WARNED.add(str(path))
            print(f"warning: feature cache {path} carries no checksum (written before caches had one, or by hand): "
                  f"its values cannot be checked against damage; rebuild it to have them checked: "
                  f"`{rebuild_command(blob, path)}`", file=sys.stderr, flush=True)
    else:
        found = content_checksum(blob)
        if found != recorded:
            raise DataError(f"Feature cache {path} is damaged: the SHA-256 of its contents is {found}, expected {recorded} "
                            f"(recorded when it was written). {rebuild}")
    problem = _shape_problem(blob) or _non_finite(blob)
    if problem:
        raise DataError(f"Feature cache {path} is damaged ({problem}). {rebuild}")


def _shape_problem(blob: dict[str, Any]) -> str:
    """What does not fit in a cache's tensors and labels, or ``""``."""
    names = blob["class_names"]
    if not isinstance(names, list) or not names:
        return "class_names is not a list of class names"
    targets = blob["target_classes"]
    if not isinstance(targets, list) or not targets or not all(isinstance(k, int) and 0 <= k < len(names) for k in targets):
        return f"target_classes {targets!r} are not classes in [0, {len(names)})"
    dim = None
    for side in ("source", "target"):
        part = blob[side]
        if not isinstance(part, dict) or not all(isinstance(part.get(k), torch.Tensor) for k in ("features", "labels")):
            return f"{side} lacks its features and labels tensors"
        feats, labels = part["features"], part["labels"]
        if feats.dim() != 2 or labels.dim() != 1 or feats.shape[0] != labels.shape[0] or not len(labels):
            return f"{side} holds features {tuple(feats.shape)} and labels {tuple(labels.shape)}, not (n, d) and (n,) with n > 0"
        if dim not in (None, feats.shape[1]):
            return f"source and target features have dimensions {dim} and {feats.shape[1]}"
        dim = feats.shape[1]
        allowed = range(len(names)) if side == "source" else set(targets)
        bad = [int(v) for v in labels.unique().tolist() if int(v) not in allowed]
        if bad:
            return f"{side} labels {bad[:5]} are not {'classes' if side == 'source' else 'target classes'} of the cache"
        views = blob.get(f"{side}_views")
        if views is not None and (not isinstance(views, torch.Tensor) or views.dim() != 3
                                  or tuple(views.shape[1:]) != (labels.shape[0], dim)):
            shape = tuple(views.shape) if isinstance(views, torch.Tensor) else type(views).__name__
            return f"{side}_views holds {shape}, not (V, {labels.shape[0]}, {dim})"
    return ""


def check_cache(blob: dict[str, Any], path: str | Path, task: str, backbone: str | None = None) -> None:
    """Refuse a cache built for another task, or (when ``backbone`` is given) another backbone."""
    if blob["task"] != task:
        raise DataError(f"Feature cache {path} holds task '{blob['task']}', not '{task}'. Pass the cache of task '{task}'.")
    if backbone is not None and blob.get("backbone") not in (None, backbone):
        raise DataError(f"Feature cache {path} was built with backbone '{blob['backbone']}', not '{backbone}'. "
                        f"Rebuild it with --backbone {backbone}.")


def cache_provenance(path: str | Path) -> dict[str, Any]:
    """What a search records about the cache it screens on: its path, encoder stage
    (:func:`~ssot.data.encoder_stages.encoder_stage`), backbone, seed (of the pretraining, for
    ``pretrained``) and the checksum of the encoder's weights."""
    blob = read_feature_cache(path)
    return {"path": str(path), "encoder": encoder_stage(blob), "backbone": blob.get("backbone"), "seed": blob.get("seed"),
            "weights_sha256": blob.get("weights_sha256")}


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


def seed_views(ds: Dataset | None, seed: int) -> None:
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

    A cache of an untrained encoder is refused (:func:`~ssot.data.encoder_stages.check_screenable`) unless
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
