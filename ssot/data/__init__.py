"""Tasks: the embedded tasks (``digits``, printed <-> handwritten), the paper's 26 benchmark tasks,
the ``custom`` task of two folders, feature caches.

Every dataset is described once in :mod:`ssot.data.registry` (torch-free); :func:`build_task`
builds the task a config asks for with its dataset's builder. ``TaskData`` and :func:`build_task`
load torch on first use (PEP 562), so ``import ssot.data.registry`` does not.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ssot.data.registry import dataset_of, task_names
from ssot.data.registry import searched_tasks as tasks_of_dataset

if TYPE_CHECKING:
    from ssot.config import SSOTConfig
    from ssot.data.base import TaskData

__all__ = ["TaskData", "build_task", "dataset_of", "task_names", "tasks_of_dataset"]


def build_task(config: SSOTConfig) -> TaskData:
    """The :class:`TaskData` that ``config`` asks for: its feature cache, its decoded-image cache,
    else its task built by the task's dataset builder (:func:`ssot.data.registry.build_function`;
    an unknown task is refused naming every valid one)."""
    if config.features_path:
        from ssot.data.features import load_feature_task

        return load_feature_task(config.features_path, config.task)
    from ssot.data.registry import build_function, task

    if config.image_cache:
        from ssot.data.decoded import load_decoded_task

        return load_decoded_task(config.image_cache, task(config.task).name, image_size=config.image_size,
                                 resize_size=config.resize_size, transform=config.transform)

    return build_function(config.task)(task(config.task), config)


def __getattr__(name: str) -> Any:
    if name == "TaskData":
        from ssot.data.base import TaskData

        globals()["TaskData"] = TaskData
        return TaskData
    raise AttributeError(f"module 'ssot.data' has no attribute {name!r}")
