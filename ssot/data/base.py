"""The container every task builder returns, whatever the data source (torch-free: torch's
``Dataset`` is only named in annotations)."""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from torch.utils.data import Dataset


@dataclass
class TaskData:
    """A partial domain-adaptation task, ready for the trainer.

    Every dataset yields ``(x, y)`` pairs: ``x`` a tensor (an image, or a precomputed feature
    vector), ``y`` an ``int`` label in the *source* label space (alphabetical index in
    ``class_names``). Target labels are used for evaluation only, never for training.

    Attributes
    ----------
    name : task name, e.g. ``"A2W"`` or ``"digits"``.
    source : source samples with the training transform (all K classes).
    source_eval : the same source samples with the evaluation transform.
    target : target samples with the training transform (only ``target_classes``).
    target_eval : the same target samples with the evaluation transform.
    class_names : the K source class names, in label order.
    target_classes : sorted label indices of the classes present in the target.
    input_shape : shape of one ``x`` (e.g. ``(3, 224, 224)`` or ``(1, 16, 16)`` or ``(2048,)``).
    labeled_target : whether the target labels are real (``False``: every target label is ``-1``,
        runs report validators and no accuracy).
    """

    name: str
    source: Dataset
    source_eval: Dataset
    target: Dataset
    target_eval: Dataset
    class_names: list[str]
    target_classes: list[int]
    input_shape: tuple[int, ...]
    labeled_target: bool = True

    @property
    def num_classes(self) -> int:
        return len(self.class_names)

    @property
    def outlier_classes(self) -> list[int]:
        """Source classes absent from the target (the ones PDA must filter out)."""
        shared = set(self.target_classes)
        return [k for k in range(self.num_classes) if k not in shared]


def num_samples(ds: Dataset) -> int:
    """The number of samples of a map-style dataset (torch's ``Dataset`` declares no ``__len__``,
    although every dataset of a task has one)."""
    return len(ds)  # type: ignore[arg-type]


def usable_workers(requested: int) -> int:
    """DataLoader workers: ``requested``, but never more than the CPUs this process may run on
    (its affinity mask: a Ray trial's or a container's share, not the whole machine)."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(0, min(requested, cpus))
