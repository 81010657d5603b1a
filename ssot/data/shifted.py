"""The third domain of the embedded digits, ``S``: the handwritten scans under the ``digits`` shift.

**shifted** (``S``)
    scikit-learn's handwritten scans, split in the same halves as the ``handwritten`` domain
    (:func:`ssot.data.digits.split_digits`: even positions half A, odd positions half B),
    upsampled to 16x16 and shifted exactly as the ``digits`` task shifts its target
    (:func:`ssot.data.digits.shift`: rotation by 20 degrees, Gaussian blur with kernel 5 and
    sigma 1, contrast gain 1.5 around 0.5), computed in float64 and stored at 8 bits:
    ``round(255 * x)`` as uint8. In float64 no pixel lies within 1e-7 of a rounding tie (float32
    puts a few exactly on one), so the last-bit differences of another CPU's rotation and blur
    cannot change a level, and :func:`checksum` is a fixed number.

Why this shift: it is of another kind than printed <-> handwritten. ``P`` and ``H`` differ in
*style* (fonts against pens, stroke and shape); ``S`` differs from ``H`` in *acquisition* only
(the same writers' digits, rotated, blurred and contrast-stretched, as a tilted, out-of-focus
scanner would give), and from ``P`` in both. Its two halves hold the same scans as ``H``'s two
halves, so a task between ``H`` and ``S`` never has the same scan on both sides (source: half
A, target: half B). ``H2S`` is the ``digits`` task itself, its target stored at 8 bits (the
tests check it): the family's six tasks include the project's first task, under its family name.
"""
from __future__ import annotations

import functools

import numpy as np
import torch

from ssot.data.digits import checksum, shift, split_digits

#: sha256 of the uint8 arrays (images then labels, half A then half B), see :func:`checksum`.
EXPECTED_SHA256 = "bedbb9128b66281bba4555906fc027f855b8611f3569f305e510939bac565ba7"
LEVELS = 255


def _quantise(images: torch.Tensor) -> np.ndarray:
    return torch.round(images.clamp(0.0, 1.0) * LEVELS).to(torch.uint8).squeeze(1).numpy()


@functools.lru_cache(maxsize=1)
def shifted_scans() -> dict[str, np.ndarray]:
    """Both shifted halves, ``{"xA", "yA", "xB", "yB"}``: ``(n, 16, 16)`` uint8 images (0..255)
    and uint8 labels, cached in memory (built in well under a second)."""
    xa, ya, xb, yb = split_digits()
    return {"xA": _quantise(shift(xa.double())), "yA": ya.numpy().astype(np.uint8),
            "xB": _quantise(shift(xb.double())), "yB": yb.numpy().astype(np.uint8)}


def shifted_half(half: str) -> tuple[torch.Tensor, torch.Tensor]:
    """Half ``"A"`` or ``"B"`` as ``(images (n, 1, 16, 16) float in [0, 1], labels int64)``."""
    arrays = shifted_scans()
    x = torch.from_numpy(arrays[f"x{half}"].astype(np.float32) / LEVELS).unsqueeze(1)
    return x, torch.from_numpy(arrays[f"y{half}"].astype(np.int64))


__all__ = ["EXPECTED_SHA256", "checksum", "shifted_half", "shifted_scans"]
