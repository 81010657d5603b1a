"""Synthetic run records and t-SNE data for the paper-figure tests (no torch, no training)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np


def synthetic_record(solver: str = "net", epochs: int = 4, use_class_weights: bool = True) -> dict:
    """A run record of a 4-class task whose target holds classes 0 and 1: the estimated
    proportions p_s * m move linearly from the source's to the truth's; the outlier mass recorded
    per epoch is that estimate's mass on classes 2 and 3, as the trainer records it."""
    p_s = np.full(4, 0.25)
    true = np.array([0.5, 0.5, 0.0, 0.0])
    est = [p_s + (true - p_s) * t / epochs for t in range(epochs + 1)]
    m = [list(e / p_s) for e in est]
    ep = [{"epoch": t, "target_acc": 0.5 + 0.1 * t, "class_weights": m[t], "ot_value": 1.0 / t, "time_s": 2.0 if solver == "net" else 3.0,
           "outlier_mass": float(est[t][2:].sum())} for t in range(1, epochs + 1)]
    return {"config": {"task": "toy", "ot_solver": solver, "use_class_weights": use_class_weights},
            "task": {"name": "toy", "class_names": ["a", "b", "c", "d"], "target_classes": [0, 1]},
            "source_class_freq": list(p_s), "target_class_freq": list(true),
            "source_only": {"class_weights": m[0], "outlier_mass": float(est[0][2:].sum())}, "epochs": ep, "status": "completed"}


def feature_map_data(n: int = 40, seed: int = 0) -> dict[str, np.ndarray]:
    """The arrays of a t-SNE file of tune/feature_maps.py: two models, n points each (half source)."""
    rng = np.random.default_rng(seed)
    return {"xy": rng.normal(size=(2 * n, 2)), "label": np.tile(np.arange(4), n // 2), "domain": np.tile([0, 1], n),
            "model": np.repeat([0, 1], n), "models": np.array(["source-only", "SSOT"]), "outlier_classes": np.array([2, 3])}


def write_record(path: Path, record: dict) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record))
    return path
