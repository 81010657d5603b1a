"""Loaders for the paper's four image benchmarks (26 partial domain-adaptation tasks).

Nothing is downloaded at training time: put each dataset under a *data root* (the ``data_root``
argument, a ``--data-root DIR`` flag, or the ``SSOT_DATA_ROOT`` environment variable), by hand or
with ``python -m ssot.data fetch NAME --data-root DIR`` (:mod:`ssot.data.fetch`), in this layout
or as its official archive unpacks (both are accepted, see :mod:`ssot.data.layouts`)::

    <root>/office31/{amazon,dslr,webcam}/images/<class>/*.jpg
    <root>/officehome/{Art,Clipart,Product,Real_World}/<class>/*.jpg
    <root>/imageclef/{c,i,p}/*.jpg   with   <root>/imageclef/list/{c,i,p}List.txt
    <root>/visda2017/{train,validation}/<class>/*     (train = synthetic S, validation = real R)

Image-list files
----------------
A list file holds one ``relative/path.jpg <label>`` pair per line (blank lines and lines starting
with ``#`` are skipped). ``<label>`` must be the alphabetical class index used here (the position
in ``ssot.data.registry.DATASETS[name].classes``). For **any** dataset, a file ``<root>/<dataset>/list/<domain>.txt``
or ``<root>/<dataset>/list/<domain>List.txt`` (``<domain>`` is the domain *folder* name, e.g.
``amazon``, ``Real_World``, ``train``, ``c``), when it exists, is used instead of the folder scan.
ImageCLEF-DA always needs its list files. A listed path is resolved, in order, relative to
``<root>/<dataset>/``, relative to the list file's folder, and finally by its last two
components relative to ``<root>/<dataset>/`` (released lists often carry foreign prefixes).

Labels and partial targets
--------------------------
Labels are always the source's alphabetical class indices (Python ``sorted`` order of the class
folder names). The source keeps all K classes (each must have at least one image); the target
keeps only the samples of the dataset's partial target classes.
"""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from PIL import Image
from torch.utils.data import Dataset
from torchvision import transforms as T

from ssot.data.augment import IMAGENET_MEAN, IMAGENET_STD
from ssot.data.base import TaskData
from ssot.data.layouts import (  # noqa: F401  (re-exported: the loaders' public names)
    DATA_ROOT_ENV,
    IMAGE_EXTENSIONS,
    Sample,
    benchmark_task,
    find_domain_samples,
    load_image_list,
    load_rgb,
    resolve_data_root,
    scan_class_folders,
    task_samples,
)
from ssot.data.registry import TaskSpec
from ssot.errors import ConfigError


class ImageSampleDataset(Dataset):
    """A torch ``Dataset`` over ``(path, label)`` pairs: item ``i`` is ``(transform(img), label)``.

    Attributes
    ----------
    samples : the ``(path, label)`` pairs.
    targets : the labels alone (no image is opened), e.g. for class frequencies.
    """

    def __init__(self, samples: list[Sample], transform: Callable[[Image.Image], torch.Tensor]):
        self.samples = list(samples)
        self.targets = [label for _, label in self.samples]
        self.transform = transform

    def __len__(self) -> int:
        return len(self.samples)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        path, label = self.samples[index]
        return self.transform(load_rgb(path)), label


def check_sizes(image_size: int, resize_size: int) -> None:
    """Refuse image sizes the transforms cannot use (scikit-learn-style one-line :class:`ConfigError`)."""
    if not isinstance(image_size, int) or image_size < 1:
        raise ConfigError(f"The 'image_size' parameter must be a positive int. "
                          f"Got {image_size!r} instead.")
    if not isinstance(resize_size, int) or resize_size < image_size:
        raise ConfigError(f"The 'resize_size' parameter must be an int >= image_size "
                          f"({image_size}). Got {resize_size!r} instead.")


def square_resize(resize_size: int = 256) -> Callable[[Image.Image], Image.Image]:
    """Resize to ``resize_size x resize_size`` (PIL bilinear, antialiased; the aspect ratio is not
    kept): the paper's "256x256 resized images", and what a decoded-image cache stores."""
    return T.Resize((resize_size, resize_size))


def train_transform(image_size: int = 224, transform: str = "default",
                    resize_size: int = 256) -> Callable[[Image.Image], torch.Tensor]:
    """``default``: RandomResizedCrop + horizontal flip + ImageNet normalisation; ``paper``: the
    evaluation transform of the paper (:func:`eval_transform`), no random augmentation."""
    if transform == "paper":
        return eval_transform(image_size, resize_size, transform)
    return T.Compose([T.RandomResizedCrop(image_size), T.RandomHorizontalFlip(), T.ToTensor(),
                      T.Normalize(IMAGENET_MEAN, IMAGENET_STD)])


def eval_transform(image_size: int = 224, resize_size: int = 256,
                   transform: str = "default") -> Callable[[Image.Image], torch.Tensor]:
    """``default``: Resize (shorter side to ``resize_size``, aspect kept) + CenterCrop + ImageNet
    normalisation; ``paper``: :func:`square_resize` + CenterCrop + normalisation (the paper's
    "224x224 center crops of 256x256 resized images")."""
    resize = square_resize(resize_size) if transform == "paper" else T.Resize(resize_size)
    return T.Compose([resize, T.CenterCrop(image_size), T.ToTensor(), T.Normalize(IMAGENET_MEAN, IMAGENET_STD)])


def build_benchmark_task(name: str, data_root: str | Path | None = None, *,
                         image_size: int = 224, resize_size: int = 256, transform: str = "default") -> TaskData:
    """Build one of the 26 benchmark tasks from images under the data root.

    Parameters
    ----------
    name : task name, e.g. ``"A2W"``, ``"P2I"``, ``"Ar2Cl"``, ``"S2R"``.
    data_root : data root; ``None`` reads ``$SSOT_DATA_ROOT``.
    image_size : side of the square crops fed to the network.
    resize_size : side the evaluation transform resizes to before its centre crop.
    transform : ``default`` or ``paper`` (:func:`train_transform`, :func:`eval_transform`).

    Returns
    -------
    TaskData with the source (all classes) and the target (partial classes only), each wrapped
    twice: with the training and with the evaluation transform.

    Raises
    ------
    ConfigError : unknown task name or bad sizes.
    DataError : missing data root, dataset, domain, list file, class or unknown class folder.
    """
    spec_task = benchmark_task(name)
    check_sizes(image_size, resize_size)
    spec, source, target = task_samples(spec_task, data_root)
    train_tf = train_transform(image_size, transform, resize_size)
    eval_tf = eval_transform(image_size, resize_size, transform)
    return TaskData(
        name=spec_task.name,
        source=ImageSampleDataset(source, train_tf),
        source_eval=ImageSampleDataset(source, eval_tf),
        target=ImageSampleDataset(target, train_tf),
        target_eval=ImageSampleDataset(target, eval_tf),
        class_names=list(spec.classes),
        target_classes=spec.target_classes,
        input_shape=(3, image_size, image_size),
    )


def from_config(spec_task: TaskSpec, config: Any) -> TaskData:
    """The builder of the registry's benchmark datasets: :func:`build_benchmark_task` of ``config``."""
    return build_benchmark_task(spec_task.name, config.data_root, image_size=config.image_size,
                                resize_size=config.resize_size, transform=config.transform)
