"""The embedded default task: scikit-learn's bundled handwritten digits, no download.

Construction (deterministic; independent of the run's seed):

1. ``sklearn.datasets.load_digits``: 1797 images of 8x8 pixels, values 0..16, classes 0..9.
2. Split each class in two halves by its sample order (even positions -> source, odd -> target),
   so both domains come from the same writers' distribution before the shift.
3. Source: its half, all 10 classes, pixels scaled to [0, 1] and upsampled to 16x16 (bilinear).
4. Target: the other half restricted to classes 0..4 (partial label space: 5 of 10), upsampled
   the same way, then shifted: rotation by 20 degrees, Gaussian blur (kernel 5, sigma 1.0), and a
   contrast gain of 1.5 around 0.5, clipped to [0, 1].

A source-only model is clearly worse on the target than on held-out source data: the shift is
real but leaves the classes recognisable, so adaptation has something to recover.
"""
from __future__ import annotations

import hashlib
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
import torchvision.transforms.functional as TF
from torch.utils.data import TensorDataset

from ssot.data.base import TaskData
from ssot.data.registry import DATASETS, TaskSpec

#: The target's classes (the registry's ``digits`` spec): 0..4.
TARGET_CLASSES: list[int] = DATASETS["digits"].target_classes
ROTATION_DEG = 20.0
BLUR_KERNEL, BLUR_SIGMA = 5, 1.0
CONTRAST_GAIN = 1.5
SIZE = 16


def upsample(images: torch.Tensor) -> torch.Tensor:
    """``(n, 1, 8, 8)`` images to ``(n, 1, 16, 16)``, bilinear (the scans' and the printed digits' size)."""
    return F.interpolate(images, size=(SIZE, SIZE), mode="bilinear", align_corners=False)


def shift(images: torch.Tensor) -> torch.Tensor:
    """The documented target-domain shift applied to ``(n, 1, 16, 16)`` images in [0, 1]."""
    out = TF.rotate(images, ROTATION_DEG, interpolation=TF.InterpolationMode.BILINEAR)
    out = TF.gaussian_blur(out, kernel_size=BLUR_KERNEL, sigma=BLUR_SIGMA)
    return (0.5 + CONTRAST_GAIN * (out - 0.5)).clamp(0.0, 1.0)


def checksum(arrays: dict[str, np.ndarray]) -> str:
    """sha256 over the bytes of the arrays, in sorted key order (dtype and shape included): the
    check of the embedded domains' arrays (:mod:`ssot.data.printed`, :mod:`ssot.data.shifted`)."""
    h = hashlib.sha256()
    for key in sorted(arrays):
        a = np.ascontiguousarray(arrays[key])
        h.update(f"{key}:{a.dtype}:{a.shape};".encode())
        h.update(a.tobytes())
    return h.hexdigest()


def split_digits() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(x_source, y_source, x_target, y_target)`` before restriction and shift."""
    from sklearn.datasets import load_digits

    digits = load_digits()
    x = torch.tensor(digits.images, dtype=torch.float32).unsqueeze(1) / 16.0
    y = torch.tensor(digits.target, dtype=torch.long)
    src, tgt = [], []
    for k in range(10):
        idx = torch.nonzero(y == k).squeeze(1)
        src.append(idx[0::2])
        tgt.append(idx[1::2])
    src_idx, tgt_idx = torch.cat(src).sort().values, torch.cat(tgt).sort().values
    return upsample(x[src_idx]), y[src_idx], upsample(x[tgt_idx]), y[tgt_idx]


def build_digits_task(*, shifted: bool = True) -> TaskData:
    """The embedded partial-DA task ``digits`` (10 source classes, 5 target classes).

    ``shifted=False`` gives the same target samples without the shift: an in-domain held-out
    set, the reference that shows how much accuracy the shift costs.
    """
    xs, ys, xt, yt = split_digits()
    keep = torch.isin(yt, torch.tensor(TARGET_CLASSES))
    xt, yt = xt[keep], yt[keep]
    if shifted:
        xt = shift(xt)
    source, target = TensorDataset(xs, ys), TensorDataset(xt, yt)
    return TaskData(
        name="digits",
        source=source,
        source_eval=source,
        target=target,
        target_eval=target,
        class_names=list(DATASETS["digits"].classes),
        target_classes=list(TARGET_CLASSES),
        input_shape=(1, SIZE, SIZE),
    )


def from_config(spec_task: TaskSpec, config: Any) -> TaskData:
    """The registry's builder of the ``digits`` dataset (the config chooses nothing here)."""
    return build_digits_task()
