"""A decoded-image cache as a task's datasets: each side with the training or the evaluation transform.

:func:`load_decoded_task` opens a cache (:func:`ssot.data.decoded.open_cache`: the file format
and its checks, torch-free) and wraps each side in a :class:`DecodedImages`, whose batches the
trainer gathers (:mod:`ssot.batches`) and transforms on the device (:mod:`ssot.data.augment`).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from torch.utils.data import Dataset

from ssot.data import augment
from ssot.data.base import TaskData
from ssot.data.decoded import DecodedCache, open_cache


class DecodedImages(Dataset):
    """One side of a cache with its transform: training (random resized crop + flip, or the
    ``paper`` centre crop) or evaluation (centre crop).

    The trainer reads it by batches (:meth:`gather`, then :meth:`to_input` on the device); item
    ``i`` (``ds[i]``) applies the same transform to one image on the CPU (random draws from
    torch's global generator, like the JPEG transforms).
    """

    def __init__(self, cache: DecodedCache, side: str, *, train: bool, image_size: int, transform: str):
        self.cache = cache
        self.images, self.targets = cache.side(side)
        self.labels = torch.tensor(self.targets, dtype=torch.long)
        self.train, self.image_size, self.transform_name = train, image_size, transform

    def __len__(self) -> int:
        return len(self.targets)

    def __repr__(self) -> str:
        how = "random resized crop + flip" if self.train and self.transform_name == "default" else "centre crop"
        return (f"DecodedImages({self.cache.path.name}, {len(self)} images {self.cache.size}x{self.cache.size}, "
                f"{how} {self.image_size}, transform={self.transform_name!r})")

    @property
    def transform(self) -> str:
        """What is done to each image (the provenance of a feature cache built from it)."""
        return repr(self)

    def gather(self, positions: torch.Tensor, *, pin: bool = False) -> torch.Tensor:
        """The uint8 pixels ``(B, S, S, 3)`` of the images at ``positions`` (a CPU tensor),
        in page-locked memory when ``pin`` (for an asynchronous copy to the GPU)."""
        index = positions.numpy()
        s = self.cache.size
        out = torch.empty((len(index), s, s, 3), dtype=torch.uint8, pin_memory=pin)
        np.take(self.images, index, axis=0, out=out.numpy())
        return out

    def to_input(self, images: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
        """The network's input ``(B, 3, s, s)`` float32 from uint8 ``images`` on any device; the
        random draws (training, ``default``) come from ``generator``."""
        if self.train:
            return augment.train_batch(images, self.image_size, self.transform_name, generator)
        return augment.eval_batch(images, self.image_size)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        images = torch.from_numpy(np.array(self.images[index : index + 1]))
        return self.to_input(images)[0], self.targets[index]


def load_decoded_task(path: str | Path, task: str, *, image_size: int = 224, resize_size: int = 256,
                      transform: str = "default") -> TaskData:
    """The :class:`TaskData` of a cache (:func:`open_cache`'s checks), each side twice: with the
    training and with the evaluation transform."""
    from ssot.data.benchmarks import check_sizes

    check_sizes(image_size, resize_size)
    cache = open_cache(path, task, resize_size)
    h = cache.header

    def side(name: str, train: bool) -> DecodedImages:
        return DecodedImages(cache, name, train=train, image_size=image_size, transform=transform)

    return TaskData(name=h["task"], source=side("source", True), source_eval=side("source", False),
                    target=side("target", True), target_eval=side("target", False), class_names=list(h["class_names"]),
                    target_classes=sorted(h["target_classes"]), input_shape=(3, image_size, image_size))
