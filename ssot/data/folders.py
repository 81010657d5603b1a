"""The ``custom`` task: a source and a target image folder of the user's own.

    python -m ssot.train --task custom --source DIR_S --target DIR_T

``DIR_S`` holds one sub-folder per class (the class names, sorted, are the label space).
``DIR_T`` holds either class sub-folders (names among the source classes; labels are then used
for evaluation only) or only image files (an unlabeled target: every label is ``-1``, runs report
the label-free validators and no accuracy, and the target classes are unknown, so every source
class counts as a target class).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from ssot.data.base import TaskData
from ssot.data.benchmarks import ImageSampleDataset, check_sizes, eval_transform, train_transform
from ssot.data.layouts import IMAGE_EXTENSIONS, custom_folder
from ssot.data.registry import TaskSpec
from ssot.errors import DataError

UNLABELED = -1


def _images(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.is_file() and p.suffix.lower() in IMAGE_EXTENSIONS)


def _class_dirs(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith("."))


def build_custom_task(source_dir: str | None, target_dir: str | None, *, image_size: int = 224,
                      resize_size: int = 256, transform: str = "default") -> TaskData:
    """Build the ``custom`` task from two folders (see the module docstring for the layouts).

    Raises
    ------
    ConfigError : a folder is not given, or bad image sizes.
    DataError : a folder is missing or empty, a source class has no image, or a target class
        folder is not a source class.
    """
    check_sizes(image_size, resize_size)
    src, tgt = custom_folder(source_dir, "--source"), custom_folder(target_dir, "--target")
    classes = [d.name for d in _class_dirs(src)]
    if not classes:
        raise DataError(f"--source {src} has no class sub-folders; put each class's images in DIR/<class>/.")
    source = []
    for k, name in enumerate(classes):
        files = _images(src / name)
        if not files:
            raise DataError(f"source class folder {src / name} has no images ({', '.join(sorted(IMAGE_EXTENSIONS))}); the source needs every class.")
        source += [(p, k) for p in files]
    target_dirs = _class_dirs(tgt)
    if target_dirs:
        unknown = [d.name for d in target_dirs if d.name not in classes]
        if unknown:
            raise DataError(f"target class folder(s) {', '.join(unknown)} in {tgt} are not source classes "
                            f"({', '.join(classes[:5])}{', ...' if len(classes) > 5 else ''}); rename or remove them.")
        target = [(p, classes.index(d.name)) for d in target_dirs for p in _images(d)]
        target_classes = sorted({label for _, label in target})
    else:
        target = [(p, UNLABELED) for p in _images(tgt)]
        target_classes = list(range(len(classes)))
    if not target:
        raise DataError(f"--target {tgt} has no images; pass a folder of class sub-folders or of unlabeled images.")
    train_tf = train_transform(image_size, transform, resize_size)
    eval_tf = eval_transform(image_size, resize_size, transform)
    return TaskData(name="custom", source=ImageSampleDataset(source, train_tf), source_eval=ImageSampleDataset(source, eval_tf),
                    target=ImageSampleDataset(target, train_tf), target_eval=ImageSampleDataset(target, eval_tf),
                    class_names=classes, target_classes=target_classes, input_shape=(3, image_size, image_size),
                    labeled_target=bool(target_dirs))


def from_config(spec_task: TaskSpec, config: Any) -> TaskData:
    """The registry's builder of the ``custom`` dataset: the config's two folders."""
    return build_custom_task(config.source_dir, config.target_dir, image_size=config.image_size,
                             resize_size=config.resize_size, transform=config.transform)
