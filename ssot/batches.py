"""How a run's batches reach the device: the training order, DataLoaders, the decoded-image cache.

Training batches are drawn in *passes* over a dataset: each pass a permutation of the samples,
cut into ``batch_size`` batches (the last, incomplete one dropped, so every training batch has the
same shape, unless the dataset is smaller than one batch). The permutations come from a
``torch.Generator`` seeded with the caller's seed, in exactly the order a
``DataLoader(shuffle=True, generator=...)`` draws them (:func:`passes`), whatever the path:

in memory, or ``num_workers = 0``
    a ``DataLoader`` per epoch in the main process, as it always was (digits, the embedded tasks,
    feature caches, JPEGs without workers): the numbers of these runs do not change;
JPEG images with ``num_workers > 0``
    one ``DataLoader`` per dataset for the whole run, with *persistent* workers (they are no
    longer started again every epoch). Each sample carries a seed (:class:`SeededSampler`) that
    its random transform runs under, so the random crops depend only on the seed of the pass and
    the sample, not on which worker reads it: a run is the same with 1 or 8 workers and when
    resumed from a checkpoint;
a decoded-image cache (:mod:`ssot.data.decoded`)
    no DataLoader: the batch's uint8 pixels are gathered from the memory-mapped file (into
    page-locked memory on CUDA), copied to the device without waiting, and cropped, flipped and
    normalised there; crops and flips are drawn from a second generator of the same seed.

On CUDA, ResNet-50's inputs (and the model, :mod:`ssot.trainer`) are channels_last
(:func:`memory_format`); on the CPU nothing changes.
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import torch
from torch.utils.data import DataLoader, Dataset, Sampler, Subset

from ssot.data.base import usable_workers
from ssot.data.decoded_images import DecodedImages
from ssot.data.features import seed_views
from ssot.solvers import SampleIds

Pair = tuple[torch.Tensor, torch.Tensor]
#: The generator of a feature cache's augmented views (:func:`ssot.data.features.seed_views`) is
#: seeded with a training pass's seed plus this offset.
VIEW_SEED_OFFSET = 7_777_777
_SEEDS = 2**63


def memory_format(config: Any, device: torch.device) -> torch.memory_format:
    """``channels_last`` for ResNet-50 on CUDA (faster convolutions, above all in bf16) unless the
    config turns it off (``channels_last``), else the default."""
    on = device.type == "cuda" and config.backbone == "resnet50" and config.channels_last
    return torch.channels_last if on else torch.contiguous_format


def passes(n: int, generator: torch.Generator) -> Iterator[tuple[int, torch.Tensor]]:
    """Endless ``(seed of the pass, permutation of range(n))``, with the draws a
    ``DataLoader(shuffle=True, generator=generator)`` makes, so the order is the DataLoader's: per
    pass an int64 (that seeds its workers), the permutation, and at the end of the pass a second
    permutation that ``RandomSampler`` draws and throws away."""
    while True:
        seed = int(torch.empty((), dtype=torch.int64).random_(generator=generator))
        yield seed, torch.randperm(n, generator=generator)
        torch.randperm(n, generator=generator)


def cut(perm: torch.Tensor, batch_size: int) -> list[torch.Tensor]:
    """A pass's batches: full batches only, or the whole pass when it is smaller than one batch."""
    if len(perm) < batch_size:
        return [perm]
    return list(perm[: len(perm) // batch_size * batch_size].split(batch_size))


class SeededSampler(Sampler):
    """Batches of ``(index, seed)`` pairs: :func:`passes` from a generator reseeded by :meth:`start`,
    each sample's seed the pass's seed plus its index."""

    def __init__(self, n: int, batch_size: int):
        self.n, self.batch_size = n, batch_size
        self.start(0)

    def start(self, seed: int) -> None:
        """Start the passes of ``seed`` (the next ``iter()`` is the first)."""
        self._passes = passes(self.n, torch.Generator().manual_seed(seed))

    def __iter__(self) -> Iterator[list[tuple[int, int]]]:
        seed, perm = next(self._passes)
        for batch in cut(perm, self.batch_size):
            yield [(i, (seed + i) % _SEEDS) for i in batch.tolist()]

    def __len__(self) -> int:
        return len(cut(torch.arange(self.n), self.batch_size))


class Seeded(Dataset):
    """Item ``(i, seed)`` is ``ds[i]`` computed under ``torch.manual_seed(seed)`` (the global
    generator of the process is restored afterwards)."""

    def __init__(self, ds: Dataset):
        self.ds = ds

    def __len__(self) -> int:
        return len(self.ds)  # type: ignore[arg-type]

    def __getitem__(self, key: tuple[int, int]) -> Any:
        index, seed = key
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            return self.ds[index]


def decoded_view(ds: Dataset) -> tuple[DecodedImages, torch.Tensor | None, bool] | None:
    """``(images, positions, ids)`` when ``ds`` reads a decoded-image cache, possibly through a
    :class:`~torch.utils.data.Subset` (``positions`` in the cache side) and :class:`SampleIds`
    (``ids``: the batch's labels are the sample ids); else ``None``."""
    ids = False
    if isinstance(ds, SampleIds):
        ids, ds = True, ds.dataset
    positions = None
    if isinstance(ds, Subset):
        positions, ds = torch.as_tensor(ds.indices, dtype=torch.long), ds.dataset
    return (ds, positions, ids) if isinstance(ds, DecodedImages) else None


class Batches:
    """The training and evaluation batches of one run, on its device (module docstring)."""

    def __init__(self, config: Any, device: torch.device):
        self.batch_size, self.eval_batch_size = config.batch_size, config.eval_batch_size
        self.device = device
        # never more workers than CPUs (PyTorch warns, and they fight); none for in-memory features
        self.workers = 0 if config.backbone == "features" else usable_workers(config.num_workers)
        self.format = memory_format(config, device)
        self._kept: dict[tuple[int, bool], tuple[Dataset, DataLoader]] = {}

    def per_pass(self, ds: Dataset) -> int:
        """Training batches in one pass over ``ds``."""
        return max(1, len(ds) // self.batch_size)  # type: ignore[arg-type]

    def _to_device(self, x: torch.Tensor, y: torch.Tensor) -> Pair:
        x, y = x.to(self.device, non_blocking=True), y.to(self.device, non_blocking=True)
        if x.dim() == 4 and self.format is torch.channels_last:
            x = x.contiguous(memory_format=torch.channels_last)
        return x, y

    # ------------------------------------------------------------------ training
    def train(self, ds: Dataset, seed: int) -> Iterator[Pair]:
        """Endless shuffled training batches of ``ds`` on the device, deterministic given ``seed``
        (a resumed epoch repeats exactly)."""
        view = decoded_view(ds)
        if view is not None:
            yield from self._decoded_train(view, len(ds), seed)  # type: ignore[arg-type]
            return
        if self.workers == 0:
            gen = torch.Generator().manual_seed(seed)
            seed_views(ds, seed + VIEW_SEED_OFFSET)  # a feature cache's augmented views: drawn from their own generator
            loader = DataLoader(ds, batch_size=self.batch_size, shuffle=True, drop_last=len(ds) >= self.batch_size,  # type: ignore[arg-type]
                                generator=gen, pin_memory=self.device.type == "cuda")
        else:
            loader = self._persistent(ds, train=True)
            loader.batch_sampler.start(seed)  # type: ignore[union-attr]
        while True:
            for x, y in loader:
                yield self._to_device(x, y)

    def _decoded_train(self, view: tuple[DecodedImages, torch.Tensor | None, bool], n: int, seed: int) -> Iterator[Pair]:
        images, positions, ids = view
        order = passes(n, torch.Generator().manual_seed(seed))
        draws = torch.Generator().manual_seed(seed ^ 0x5EED)  # crops and flips
        pin = self.device.type == "cuda"
        for _, perm in order:
            for index in cut(perm, self.batch_size):
                where = index if positions is None else positions[index]
                pixels = images.gather(where, pin=pin).to(self.device, non_blocking=True)
                x = images.to_input(pixels, draws)
                y = index if ids else images.labels[where]
                yield self._to_device(x, y)

    # ------------------------------------------------------------------ evaluation
    def eval(self, ds: Dataset) -> Iterator[Pair]:
        """``ds`` in order, by ``eval_batch_size`` batches, on the device."""
        view = decoded_view(ds)
        if view is not None:
            images, positions, ids = view
            pin = self.device.type == "cuda"
            for index in torch.arange(len(ds)).split(self.eval_batch_size):  # type: ignore[arg-type]
                where = index if positions is None else positions[index]
                x = images.to_input(images.gather(where, pin=pin).to(self.device, non_blocking=True))
                yield self._to_device(x, index if ids else images.labels[where])
            return
        if self.workers == 0:
            loader = DataLoader(ds, batch_size=self.eval_batch_size, shuffle=False, pin_memory=self.device.type == "cuda")
        else:
            loader = self._persistent(ds, train=False)
        for x, y in loader:
            yield self._to_device(x, y)

    # ------------------------------------------------------------------ persistent loaders
    def _persistent(self, ds: Dataset, *, train: bool) -> DataLoader:
        """The run's one DataLoader of ``ds`` (training or evaluation), its workers kept alive."""
        key = (id(ds), train)
        if key not in self._kept:
            common: dict[str, Any] = {"num_workers": self.workers, "persistent_workers": True,
                                      "pin_memory": self.device.type == "cuda", "generator": torch.Generator()}
            if train:
                loader = DataLoader(Seeded(ds), batch_sampler=SeededSampler(len(ds), self.batch_size), **common)  # type: ignore[arg-type]
            else:
                loader = DataLoader(ds, batch_size=self.eval_batch_size, shuffle=False, **common)
            self._kept[key] = (ds, loader)  # the dataset is kept alive with its loader: its id stays its own
        return self._kept[key][1]

    def close(self) -> None:
        """Stop the persistent workers (the next batches start new ones)."""
        self._kept.clear()


__all__ = ["Batches", "SeededSampler", "Seeded", "passes", "cut", "decoded_view", "memory_format"]
