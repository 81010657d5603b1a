"""Tasks: the embedded tasks (``digits``, printed <-> handwritten), the paper's 26 benchmark tasks,
the ``custom`` task of two folders, feature caches.

Every dataset is described once in :mod:`ssot.data.registry` (torch-free); :func:`build_task`
builds the task a config asks for with its dataset's builder; :func:`check_task` finds its data
first without loading torch, so that a command refuses a missing dataset before torch or Ray
start. Importing ``ssot.data`` (``TaskData`` included) loads no torch: the builders do, when a
task is built.
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ssot.data.base import TaskData
from ssot.data.registry import dataset_of, task_names
from ssot.data.registry import searched_tasks as tasks_of_dataset

if TYPE_CHECKING:
    from ssot.config import SSOTConfig

__all__ = ["TaskData", "build_task", "check_task", "dataset_of", "task_names", "tasks_of_dataset"]


def check_task(config: SSOTConfig) -> None:
    """Find the data ``config`` reads, without loading torch or opening an image: an unknown task
    (naming the closest one), a feature or decoded-image cache that is not a file, and for a task
    read from disk its missing data root, dataset, domain or folders (its dataset's checker,
    :func:`ssot.data.registry.check_function`) are refused in the one line :func:`build_task`
    would print, and so is a default decoded-image cache to prepare that does not fit on the disk
    (:func:`ssot.data.image_cache.check`). What only reading the files finds (a damaged cache, a
    missing class, an unreadable image) is left to :func:`build_task`.

    Raises
    ------
    ConfigError, DataError
    """
    from ssot.data import image_cache
    from ssot.data.registry import check_function, task
    from ssot.errors import DataError

    spec_task = task(config.task)
    for path, what, build in ((config.features_path, "Feature cache", f"python -m ssot.features --task {spec_task.name}"),
                              (config.image_cache_path, "Decoded-image cache", f"python -m ssot.data prepare --task {spec_task.name}")):
        if path and not Path(path).expanduser().is_file():  # both are local files (read with open and torch.load)
            state = "is a folder, not a file" if Path(path).expanduser().is_dir() else "does not exist"
            raise DataError(f"{what} {path} {state}. Build it with `{build} --out {path}`.")
        if path:
            return
    checker = check_function(spec_task.name)
    if checker is not None:
        checker(spec_task, config)
    image_cache.check(config)  # the default decoded-image cache: the disk it needs, its folder


def build_task(config: SSOTConfig) -> TaskData:
    """The :class:`TaskData` that ``config`` asks for: its feature cache, its decoded-image cache
    (the file ``image_cache`` names, or with ``auto`` the task's default cache, prepared on first
    use: :mod:`ssot.data.image_cache`), else its task built by the task's dataset builder
    (:func:`ssot.data.registry.build_function`; an unknown task is refused naming every valid one)."""
    if config.features_path:
        from ssot.data.features import load_feature_task

        return load_feature_task(config.features_path, config.task)
    from ssot.data import image_cache
    from ssot.data.registry import build_function, task

    cache = image_cache.path_for(config)  # a cache file, the default one (prepared on first use), or none
    if cache is not None:
        from ssot.data.decoded_images import load_decoded_task

        return load_decoded_task(cache, task(config.task).name, image_size=config.image_size,
                                 resize_size=config.resize_size, transform=config.transform)

    return build_function(config.task)(task(config.task), config)

