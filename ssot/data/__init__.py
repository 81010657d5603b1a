"""Tasks: the embedded tasks (``digits``, printed <-> handwritten), the paper's 26 benchmark tasks,
feature caches."""
from __future__ import annotations

from ssot.config import SSOTConfig
from ssot.data.base import TaskData
from ssot.data.digits import build_digits_task

__all__ = ["TaskData", "build_task", "dataset_of", "task_names", "tasks_of_dataset"]


def task_names() -> list[str]:
    """Every valid task name: ``digits``, the printed-digits tasks, then the paper's 26 tasks."""
    from ssot.data.benchmarks import TASKS
    from ssot.data.printed import PRINTED_TASKS

    return ["digits", *PRINTED_TASKS, *TASKS]


def tasks_of_dataset(name: str) -> list[str] | None:
    """The tasks of dataset ``name`` (``embedded`` or a paper benchmark); ``None`` if not a dataset."""
    from ssot.data.benchmarks import DATASETS, tasks_of
    from ssot.data.printed import EMBEDDED_DATASET, EMBEDDED_TASKS

    if name == EMBEDDED_DATASET:
        return list(EMBEDDED_TASKS)
    return tasks_of(name) if name in DATASETS else None


def dataset_of(task: str) -> str:
    """The dataset a task belongs to: ``digits`` for ``digits`` (as before), ``embedded`` for the
    printed-digits tasks, the benchmark's name for a paper task, ``""`` for an unknown name."""
    from ssot.data.benchmarks import TASKS
    from ssot.data.printed import EMBEDDED_DATASET, PRINTED_TASKS

    if task == "digits":
        return "digits"
    if task in PRINTED_TASKS:
        return EMBEDDED_DATASET
    return TASKS[task].dataset if task in TASKS else ""


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
    from ssot.data.printed import PRINTED_TASKS, build_printed_task

    if config.task in PRINTED_TASKS:
        return build_printed_task(config.task)
    from ssot.data.benchmarks import build_benchmark_task

    return build_benchmark_task(config.task, config.data_root, image_size=config.image_size, resize_size=config.resize_size)
