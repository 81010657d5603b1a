"""Image transforms on batches of decoded images, on any device (the decoded-image cache's path).

A batch of a decoded-image cache (:mod:`ssot.data.decoded`) is a ``(B, S, S, 3)`` uint8 tensor of
images already resized to ``S x S`` (``S = resize_size``). It is moved to the training device as
uint8 and turned into the network's ``(B, 3, s, s)`` float input there (``s = image_size``):

training, ``transform="default"``
    torchvision's ``RandomResizedCrop(s)`` (scale (0.08, 1), ratio (3/4, 4/3), 10 attempts, then
    the central fallback) followed by ``RandomHorizontalFlip(0.5)``, applied to the ``S x S``
    image. :func:`draw_crops` draws each sample's box and flip exactly as torchvision draws them
    (same random numbers from the same generator state); the crops are resized in one batched
    ``grid_sample`` that samples where torchvision's bilinear resize samples
    (:func:`resized_crops`: equal to torchvision's crop when it is upsampled, and without the
    antialiasing filter when a box larger than ``s`` is shrunk, by at most ``S / s``);
evaluation, and training with ``transform="paper"``
    the ``s x s`` centre crop of the ``S x S`` image (torchvision's ``CenterCrop`` arithmetic):
    the paper's "224x224 center crops of 256x256 resized images";
then, always
    ``/ 255`` and the ImageNet normalisation, in torchvision's order of operations.

The uint8 ``S x S`` images are a *square* resize of the originals (:mod:`ssot.data.decoded`), so
the random crops are drawn on the squashed image: for a non-square photo, the aspect ratios a
crop sees are those of the squashed image, and a small crop is upsampled from a ``S x S`` image
rather than from the full-resolution original.
"""
from __future__ import annotations

import math

import torch
from torch import Tensor

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
#: torchvision's ``RandomResizedCrop`` defaults (scale of the area, aspect ratio w / h).
SCALE = (0.08, 1.0)
RATIO = (3.0 / 4.0, 4.0 / 3.0)
FLIP_P = 0.5


def crop_box(height: int, width: int, generator: torch.Generator | None = None,
             scale: tuple[float, float] = SCALE, ratio: tuple[float, float] = RATIO) -> tuple[int, int, int, int]:
    """``(top, left, h, w)`` of one random resized crop of a ``height x width`` image.

    torchvision's ``RandomResizedCrop.get_params`` (BSD-3-Clause, torchvision 0.29), with its
    random numbers drawn from ``generator`` (torch's global generator when ``None``): the same
    generator state gives the same box as torchvision.
    """
    area = height * width
    log_ratio = torch.log(torch.tensor(ratio)).tolist()  # float32 logs, as torchvision draws them
    for _ in range(10):
        target_area = area * torch.empty(1).uniform_(scale[0], scale[1], generator=generator).item()
        aspect_ratio = torch.exp(torch.empty(1).uniform_(log_ratio[0], log_ratio[1], generator=generator)).item()
        w = int(round(math.sqrt(target_area * aspect_ratio)))
        h = int(round(math.sqrt(target_area / aspect_ratio)))
        if 0 < w <= width and 0 < h <= height:
            top = int(torch.randint(0, height - h + 1, size=(1,), generator=generator).item())
            left = int(torch.randint(0, width - w + 1, size=(1,), generator=generator).item())
            return top, left, h, w
    in_ratio = float(width) / float(height)  # fallback: the central crop
    if in_ratio < min(ratio):
        w, h = width, int(round(width / min(ratio)))
    elif in_ratio > max(ratio):
        h, w = height, int(round(height * max(ratio)))
    else:
        w, h = width, height
    return (height - h) // 2, (width - w) // 2, h, w


def draw_crops(n: int, height: int, width: int, generator: torch.Generator | None = None) -> tuple[Tensor, Tensor]:
    """``n`` samples' crop boxes ``(n, 4)`` as ``(top, left, h, w)`` and flips ``(n,)`` bool, drawn
    in torchvision's order (``Compose([RandomResizedCrop, RandomHorizontalFlip])`` per sample)."""
    boxes, flips = torch.empty(n, 4, dtype=torch.int64), torch.empty(n, dtype=torch.bool)
    for k in range(n):
        boxes[k] = torch.tensor(crop_box(height, width, generator))
        flips[k] = bool(torch.rand(1, generator=generator) < FLIP_P)
    return boxes, flips


_STATS: dict[tuple[torch.device, torch.dtype], tuple[Tensor, Tensor]] = {}


def _to(t: Tensor, device: torch.device) -> Tensor:
    """A small CPU tensor on ``device`` without waiting for the GPU (a blocking copy would sync)."""
    return t.pin_memory().to(device, non_blocking=True) if device.type == "cuda" else t.to(device)


def normalize(x: Tensor) -> Tensor:
    """uint8 (or 0-255 float) ``(B, 3, h, w)`` pixels -> ImageNet-normalised float32, as
    ``ToTensor`` then ``Normalize`` compute it."""
    x = x.float().div(255) if x.dtype == torch.uint8 else x.div(255)
    key = (x.device, x.dtype)
    if key not in _STATS:  # copied to the device once, not once per batch
        _STATS[key] = tuple(torch.tensor(v, dtype=x.dtype).view(-1, 1, 1).to(x.device) for v in (IMAGENET_MEAN, IMAGENET_STD))  # type: ignore[assignment]
    mean, std = _STATS[key]
    return x.sub_(mean).div_(std)


def center_crop(images: Tensor, size: int) -> Tensor:
    """The ``size x size`` centre crop of ``(B, S, S, 3)`` uint8 images, normalised ``(B, 3, size, size)``."""
    height, width = images.shape[1:3]
    top, left = int(round((height - size) / 2.0)), int(round((width - size) / 2.0))
    return normalize(images[:, top:top + size, left:left + size].permute(0, 3, 1, 2))


def _source_coords(start: Tensor, length: Tensor, size: int) -> Tensor:
    """``(B, size)`` source pixel coordinates of a bilinear resize of ``[start, start + length)`` to
    ``size`` pixels (``align_corners=False``, clamped inside the crop: ``F.interpolate`` of the crop)."""
    dst = torch.arange(size, device=start.device, dtype=torch.float32) + 0.5
    src = dst[None, :] * (length[:, None] / size) - 0.5
    return start[:, None] + torch.minimum(src.clamp_min(0), length[:, None] - 1)


def resized_crops(images: Tensor, boxes: Tensor, flips: Tensor, size: int) -> Tensor:
    """Crop each image to its box, resize it to ``size x size`` (bilinear), flip it where asked,
    normalise: one batched ``grid_sample``.

    ``images``: ``(B, S, S, 3)`` uint8 on the device; ``boxes``: ``(B, 4)`` ``(top, left, h, w)``;
    ``flips``: ``(B,)`` bool. Each output pixel samples the crop where torchvision's
    ``resized_crop`` (``F.interpolate``, bilinear, ``align_corners=False``) samples it, so the
    result equals torchvision's up to float rounding when the box is at most ``size`` pixels
    high and wide; a larger box (at most ``S / size`` times larger: 1.14 for 256 -> 224) is
    downscaled without torchvision's antialiasing filter.
    """
    x = images.permute(0, 3, 1, 2).float()
    n, _, height, width = x.shape
    top, left, h, w = _to(boxes.to(torch.float32), x.device).unbind(1)
    ys, xs = _source_coords(top, h, size), _source_coords(left, w, size)
    xs = torch.where(_to(flips, x.device)[:, None], xs.flip(1), xs)  # a flipped crop reads its columns backwards
    grid = torch.stack([(2 * xs + 1) / width - 1, (2 * ys + 1) / height - 1], -1)  # (B, size, 2): x then y
    grid = torch.stack([grid[:, None, :, 0].expand(n, size, size), grid[:, :, None, 1].expand(n, size, size)], -1)
    out = torch.nn.functional.grid_sample(x, grid, mode="bilinear", padding_mode="border", align_corners=False)
    return normalize(out)


def train_batch(images: Tensor, size: int, transform: str, generator: torch.Generator | None = None) -> Tensor:
    """The training input of a batch: random resized crops and flips (``default``) or the centre
    crop (``paper``); boxes and flips drawn on the CPU from ``generator``."""
    if transform == "paper":
        return center_crop(images, size)
    boxes, flips = draw_crops(images.shape[0], images.shape[1], images.shape[2], generator)
    return resized_crops(images, boxes, flips, size)


def eval_batch(images: Tensor, size: int) -> Tensor:
    """The evaluation input of a batch: the centre crop (either transform)."""
    return center_crop(images, size)
