"""Saved models (``python -m ssot.train --save-model``) and their features, for feature maps.

The model file holds the run's config and the ``f``/``eta`` weights of the source-only model
(after pretraining) and of the adapted model (after the last epoch). :func:`model_features`
computes the features of a fixed, seeded subsample of source and target with either model;
``tune/feature_maps.py`` embeds them with t-SNE.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from ssot.config import SSOTConfig
from ssot.errors import SSOTError

#: The two models a model file holds, in drawing order.
MODEL_NAMES = ("source-only", "adapted")


def save_models(path: str | Path, config: SSOTConfig, source_only: dict[str, Any], adapted: dict[str, Any]) -> None:
    """Write ``{"config", "source-only": {"f", "eta"}, "adapted": {"f", "eta"}}``; never overwrites."""
    path = Path(path)
    if path.exists():
        raise SSOTError(f"{path} already exists; choose another --save-model path (files are never overwritten).")
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"config": config.to_dict(), "source-only": source_only, "adapted": adapted}, path)


def load_models(path: str | Path) -> dict[str, Any]:
    """Read a model file written by :func:`save_models` (one line naming the problem otherwise)."""
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except (OSError, RuntimeError, EOFError) as exc:
        raise SSOTError(f"The model file {path} cannot be read ({type(exc).__name__}). Write one with python -m ssot.train --save-model.") from None
    if not isinstance(state, dict) or not {"config", *MODEL_NAMES} <= set(state):
        raise SSOTError(f"{path} is not a model file of python -m ssot.train --save-model.")
    return state


def sample_indices(n: int, k: int, seed: int) -> list[int]:
    """``k`` of ``range(n)`` (all when ``k >= n``), the same for a given seed."""
    gen = torch.Generator().manual_seed(seed)
    return sorted(torch.randperm(n, generator=gen)[: min(n, k)].tolist())


def model_features(path: str | Path, per_domain: int = 500, seed: int = 0) -> dict[str, Any]:
    """Features of ``per_domain`` seeded source and target samples under both saved models.

    Returns
    -------
    dict with ``features`` (model name -> (n, d) array), ``label``, ``domain`` (0 source, 1
    target), ``outlier_classes``, ``class_names`` and ``config``.
    """
    from ssot.trainer import Trainer, dataset_labels

    state = load_models(path)
    config = SSOTConfig.from_dict(state["config"], source=f"model file {path}").replace(device="cpu", pretrain_epochs=0)
    trainer = Trainer(config)
    src = torch.utils.data.Subset(trainer.task.source_eval, sample_indices(len(trainer.task.source_eval), per_domain, seed))
    tgt = torch.utils.data.Subset(trainer.task.target_eval, sample_indices(len(trainer.task.target_eval), per_domain, seed + 1))
    labels = torch.cat([dataset_labels(src), dataset_labels(tgt)])
    domain = torch.cat([torch.zeros(len(src), dtype=torch.long), torch.ones(len(tgt), dtype=torch.long)])
    feats = {}
    for name in MODEL_NAMES:
        trainer.f.load_state_dict(state[name]["f"]); trainer.eta.load_state_dict(state[name]["eta"])
        trainer.f.eval()
        with torch.no_grad():
            feats[name] = torch.cat([torch.cat([trainer.f(x) for x, _ in trainer._loader(ds, train=False)]) for ds in (src, tgt)]).numpy()
    return {"features": feats, "label": labels.numpy(), "domain": domain.numpy(), "outlier_classes": list(trainer.task.outlier_classes),
            "class_names": list(trainer.task.class_names), "config": config.to_dict()}
