"""Tasks: the embedded ``digits`` task, the paper's 26 benchmark tasks, feature caches."""
from __future__ import annotations

from ssot.config import SSOTConfig
from ssot.data.base import TaskData
from ssot.data.digits import build_digits_task

__all__ = ["TaskData", "build_task", "task_names"]


def task_names() -> list[str]:
    """Every valid task name: ``digits`` then the paper's 26 tasks."""
    from ssot.data.benchmarks import TASKS

    return ["digits", *TASKS]


def build_task(config: SSOTConfig) -> TaskData:
    """The :class:`TaskData` that ``config`` asks for (validates the task name first)."""
    if config.features_path:
        from ssot.data.features import load_feature_task

        return load_feature_task(config.features_path, config.task)
    if config.task == "digits":
        return build_digits_task()
    if config.task == "custom":
        from ssot.data.folders import build_custom_task

        return build_custom_task(config.source_dir, config.target_dir, image_size=config.image_size, resize_size=config.resize_size)
    from ssot.data.benchmarks import build_benchmark_task

    return build_benchmark_task(config.task, config.data_root, image_size=config.image_size, resize_size=config.resize_size)
