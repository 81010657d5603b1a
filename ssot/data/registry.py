"""The dataset registry: one spec per dataset, every fact about it in one place (no torch).

A :class:`DatasetSpec` holds a dataset's domains (letters of task names -> folder names), its
classes and partial target classes, its tasks, the defaults of a run on it, the native size of its
images, and for the paper's four image benchmarks their published image counts, released
archives and accepted folder layouts (:mod:`ssot.data.layouts`, :mod:`ssot.data.check`,
:mod:`ssot.data.fetch` read them here). A :class:`TaskSpec` is one adaptation task. Nothing
outside this module branches on a task's or dataset's name: builders, defaults, checks and
messages all look the spec up (:func:`task`, :func:`task_defaults`, :func:`build_function`).

Datasets, in the order of :data:`DATASETS` (and of :data:`TASKS`)
---------------------------------------------------------------------
``digits``
    the embedded default task: scikit-learn's handwritten digits, a shifted partial target
    (:mod:`ssot.data.digits`).
``office31``, ``imageclef``, ``officehome``, ``visda2017``
    the paper's 26 tasks (:mod:`ssot.data.benchmarks`). Domain letters and folders, classes and
    the partial target classes are the paper's (its Section 4); the released layouts are
    documented in :mod:`ssot.data.layouts`, the published counts in :mod:`ssot.data.check`, the
    archives in :mod:`ssot.data.fetch`.
``embedded``
    printed <-> handwritten digits (:mod:`ssot.data.printed`): ``P2H``, ``H2P`` and their
    target-supervised references ``H2H``, ``P2P``; ``--task embedded`` searches ``digits``,
    ``P2H`` and ``H2P``.
``embedded3``
    the three domains printed (``P``), handwritten (``H``) and shifted handwritten (``S``,
    :mod:`ssot.data.shifted`) of the same digits, like Office-31's A/D/W: ``--task embedded3``
    searches its six tasks ``P2H``, ``H2P``, ``P2S``, ``S2P``, ``H2S``, ``S2H``. It holds the four
    tasks with ``S`` and the reference ``S2S``; ``P2H`` and ``H2P`` (and ``H2H``, ``P2P``) stay the
    ``embedded`` dataset's, unchanged. The target-supervised reference of ``X2Y`` is ``Y2Y``
    (:func:`reference_task`).
``custom``
    two image folders of the user's own (``--source``, ``--target``; :mod:`ssot.data.folders`).
"""
from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from ssot.errors import ConfigError, did_you_mean

__all__ = ["Archive", "DatasetSpec", "TaskSpec", "DATASETS", "BENCHMARKS", "TASKS", "task", "task_names",
           "tasks_of", "searched_tasks", "search_tasks", "dataset_of", "task_defaults", "default_variants",
           "build_function", "check_function", "reference_task"]


@dataclass(frozen=True)
class Archive:
    """One official archive of a dataset.

    Attributes
    ----------
    filename : its released file name.
    url : the direct link, or ``None`` where it sits behind a form or a cloud-drive page.
    page : where a person downloads it.
    sha256, size : published checksum and size (``None``: none is published).
    """

    filename: str
    url: str | None
    page: str
    sha256: str | None = None
    size: int | None = None


@dataclass(frozen=True)
class DatasetSpec:
    """Static description of one dataset.

    Attributes
    ----------
    name : its name (the folder name under the data root for a benchmark), e.g. ``"office31"``.
    title : human name used in messages, e.g. ``"Office-31"``.
    url : where the dataset is published ("" for the embedded ones).
    domains : domain letter (as in task names) -> domain folder name.
    classes : the K class names in label order (alphabetical, Python ``sorted``).
    target_class_names : the classes kept in the (partial) target domain.
    tasks : its tasks, in order (each ``<source letter>2<target letter>``, or a single name).
    builder : ``"module:function"`` building a task of it from a config (imported on use).
    checker : ``"module:function"`` finding, without loading torch or opening an image, the data a
        task of it reads from a config (``""``: built in memory, nothing to find): a missing data
        root, dataset, domain or folder is refused before anything starts (:func:`check_function`).
    defaults : config defaults of every task of it (:meth:`ssot.config.SSOTConfig.for_task`).
    task_defaults : task -> further defaults of that task.
    references : target-supervised reference task -> the task whose ceiling it measures.
    searched : the tasks ``--task <dataset>`` searches (default: every task).
    image_pixels : side of its native images when small (8: the 8x8 digits), else ``None``.
    on_disk : its images are read from the data root (the paper's benchmarks).
    image_subdir : folder between the domain folder and the class folders (``"images"`` or ``""``).
    layout : the released layout of one domain, ``{domain}`` standing for its folder name.
    list_required : whether a domain must be described by a list file (ImageCLEF-DA).
    released_top : the top-level folder of its official archive ("" = no wrapper folder).
    released_folders : our domain folder name -> the archive's, where they differ.
    published_counts : domain folder -> number of images in the released dataset.
    published_per_class : images per class in every domain, where published.
    archives : its official archives.
    """

    name: str
    title: str
    domains: Mapping[str, str]
    classes: tuple[str, ...]
    target_class_names: tuple[str, ...]
    tasks: tuple[str, ...]
    builder: str
    checker: str = ""
    url: str = ""
    defaults: Mapping[str, Any] = field(default_factory=dict)
    task_defaults: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    references: Mapping[str, str] = field(default_factory=dict)
    searched: tuple[str, ...] | None = None
    image_pixels: int | None = None
    on_disk: bool = False
    image_subdir: str = ""
    layout: str = "{domain}/<class>/*.jpg"
    list_required: bool = False
    released_top: str = ""
    released_folders: Mapping[str, str] = field(default_factory=dict)
    published_counts: Mapping[str, int] = field(default_factory=dict)
    published_per_class: int | None = None
    archives: tuple[Archive, ...] = ()

    @property
    def num_classes(self) -> int:
        return len(self.classes)

    @property
    def users_own(self) -> bool:
        """Its images are the user's own folders (``custom``): no class list, no sizes known beforehand."""
        return not self.classes

    @property
    def target_classes(self) -> list[int]:
        """Sorted label indices of the partial target classes."""
        return sorted(self.classes.index(c) for c in self.target_class_names)

    def describe_layout(self, folder: str) -> str:
        """The expected layout of domain ``folder``, relative to the data root."""
        return f"{self.name}/" + self.layout.format(domain=folder)


@dataclass(frozen=True)
class TaskSpec:
    """One adaptation task: ``source`` and ``target`` are domain folder names of ``dataset``
    (``""`` for a task whose domains are not named, e.g. ``custom``); a reference task trains on
    the target domain's labels."""

    name: str
    dataset: str
    source: str
    target: str
    reference_of: str | None  # the task whose target-supervised reference (ceiling) it is

    @property
    def spec(self) -> DatasetSpec:
        """The spec of its dataset."""
        return DATASETS[self.dataset]


# ------------------------------------------------------------------------------------ the facts
_OFFICE31_CLASSES = (
    "back_pack bike bike_helmet bookcase bottle calculator desk_chair desk_lamp desktop_computer "
    "file_cabinet headphones keyboard laptop_computer letter_tray mobile_phone monitor mouse mug "
    "paper_notebook pen phone printer projector punchers ring_binder ruler scissors speaker "
    "stapler tape_dispenser trash_can"
).split()
_OFFICEHOME_CLASSES = (
    "Alarm_Clock Backpack Batteries Bed Bike Bottle Bucket Calculator Calendar Candles Chair "
    "Clipboards Computer Couch Curtains Desk_Lamp Drill Eraser Exit_Sign Fan File_Cabinet "
    "Flipflops Flowers Folder Fork Glasses Hammer Helmet Kettle Keyboard Knives Lamp_Shade Laptop "
    "Marker Monitor Mop Mouse Mug Notebook Oven Pan Paper_Clip Pen Pencil Postit_Notes Printer "
    "Push_Pin Radio Refrigerator Ruler Scissors Screwdriver Shelf Sink Sneakers Soda Speaker Spoon "
    "TV Table Telephone ToothBrush Toys Trash_Can Webcam"
).split()
_IMAGECLEF_CLASSES = "aeroplane bike bird boat bottle bus car dog horse monitor motorbike people".split()
_VISDA_CLASSES = "aeroplane bicycle bus car horse knife motorcycle person plant skateboard train truck".split()
_DIGITS = tuple(str(k) for k in range(10))
_VISDA = "http://csr.bu.edu/ftp/visda17/clf/"

#: The paper's settings of a run on an image task: ImageNet ResNet-50, bottleneck 1024-512.
_IMAGE_DEFAULTS = MappingProxyType({"backbone": "resnet50", "bottleneck_dims": (1024, 512), "epochs": 20,
                                    "pretrain_epochs": 5, "num_workers": 4})
_BENCHMARK = "ssot.data.benchmarks:from_config"
_BENCHMARK_CHECK = "ssot.data.layouts:check_benchmark"

DATASETS: dict[str, DatasetSpec] = {spec.name: spec for spec in (
    DatasetSpec(
        name="digits", title="digits (scikit-learn's handwritten digits, shifted target)",
        domains={}, classes=_DIGITS, target_class_names=_DIGITS[:5],
        tasks=("digits",), builder="ssot.data.digits:from_config", image_pixels=8,
    ),
    DatasetSpec(
        name="office31", title="Office-31", url="https://faculty.cc.gatech.edu/~judy/domainadapt/",
        domains={"A": "amazon", "D": "dslr", "W": "webcam"},
        classes=tuple(sorted(_OFFICE31_CLASSES)),
        target_class_names=("back_pack", "bike", "calculator", "headphones", "keyboard",
                            "laptop_computer", "monitor", "mouse", "mug", "projector"),
        tasks=("A2W", "D2W", "W2D", "A2D", "D2A", "W2A"), builder=_BENCHMARK, checker=_BENCHMARK_CHECK, defaults=_IMAGE_DEFAULTS, on_disk=True,
        image_subdir="images", layout="{domain}/images/<class>/*.jpg", released_top="domain_adaptation_images",
        published_counts={"amazon": 2817, "dslr": 498, "webcam": 795},
        archives=(Archive("domain_adaptation_images.tar.gz", None,
                          "https://faculty.cc.gatech.edu/~judy/domainadapt/ (Google Drive link)"),),
    ),
    DatasetSpec(
        name="imageclef", title="ImageCLEF-DA", url="https://www.imageclef.org/2014/adaptation",
        domains={"C": "c", "I": "i", "P": "p"},
        classes=tuple(sorted(_IMAGECLEF_CLASSES)), target_class_names=tuple(sorted(_IMAGECLEF_CLASSES)[:6]),
        tasks=("I2P", "P2I", "I2C", "C2I", "C2P", "P2C"), builder=_BENCHMARK, checker=_BENCHMARK_CHECK, defaults=_IMAGE_DEFAULTS, on_disk=True,
        layout="{domain}/*.jpg with imageclef/list/{domain}List.txt", list_required=True, released_top="image_CLEF",
        published_counts={"c": 600, "i": 600, "p": 600}, published_per_class=50,
        archives=(Archive("image_CLEF.zip", None, "https://www.imageclef.org/2014/adaptation (the image_CLEF.zip "
                                                  "release of Long et al., JAN, on Google Drive)"),),
    ),
    DatasetSpec(
        name="officehome", title="Office-Home", url="https://www.hemanthdv.org/officeHomeDataset.html",
        domains={"Ar": "Art", "Cl": "Clipart", "Pr": "Product", "Rw": "Real_World"},
        classes=tuple(sorted(_OFFICEHOME_CLASSES)), target_class_names=tuple(sorted(_OFFICEHOME_CLASSES)[:25]),
        tasks=tuple(f"{s}2{t}" for s in ("Ar", "Cl", "Pr", "Rw") for t in ("Ar", "Cl", "Pr", "Rw") if s != t),
        builder=_BENCHMARK, checker=_BENCHMARK_CHECK, defaults=_IMAGE_DEFAULTS, on_disk=True, released_top="OfficeHomeDataset_10072016",
        released_folders={"Real_World": "Real World"},
        published_counts={"Art": 2427, "Clipart": 4365, "Product": 4439, "Real_World": 4357},
        archives=(Archive("OfficeHomeDataset_10072016.zip", None,
                          "https://www.hemanthdv.org/officeHomeDataset.html (Google Drive link after accepting the terms)"),),
    ),
    DatasetSpec(
        name="visda2017", title="VisDA-2017", url="https://github.com/VisionLearningGroup/taskcv-2017-public",
        domains={"S": "train", "R": "validation"},
        classes=tuple(sorted(_VISDA_CLASSES)), target_class_names=tuple(sorted(_VISDA_CLASSES)[:6]),
        tasks=("S2R", "R2S"), builder=_BENCHMARK, checker=_BENCHMARK_CHECK, defaults=_IMAGE_DEFAULTS, on_disk=True, layout="{domain}/<class>/*",
        published_counts={"train": 152_397, "validation": 55_388},
        archives=(Archive("train.tar", _VISDA + "train.tar", _VISDA), Archive("validation.tar", _VISDA + "validation.tar", _VISDA)),
    ),
    DatasetSpec(
        name="embedded", title="printed <-> handwritten digits (embedded)",
        domains={"P": "printed", "H": "handwritten"}, classes=_DIGITS, target_class_names=_DIGITS[:5],
        tasks=("P2H", "H2P", "H2H", "P2P"), builder="ssot.data.printed:from_config", image_pixels=8,
        # 1800 printed sources: the 28 iterations per epoch of digits
        task_defaults={"P2H": {"iters_per_epoch": 28}, "P2P": {"iters_per_epoch": 28}},
        references={"H2H": "P2H", "P2P": "H2P"}, searched=("digits", "P2H", "H2P"),
    ),
    DatasetSpec(
        name="embedded3", title="printed, handwritten and shifted handwritten digits (embedded, three domains)",
        domains={"P": "printed", "H": "handwritten", "S": "shifted"}, classes=_DIGITS, target_class_names=_DIGITS[:5],
        # P2H, H2P, H2H and P2P are the embedded dataset's (unchanged); this one adds the domain S
        tasks=("P2S", "S2P", "H2S", "S2H", "S2S"), builder="ssot.data.printed:from_config", image_pixels=8,
        task_defaults={"P2S": {"iters_per_epoch": 28}},  # 1800 printed sources, as P2H
        references={"S2S": "P2S"}, searched=("P2H", "H2P", "P2S", "S2P", "H2S", "S2H"),
    ),
    DatasetSpec(
        name="custom", title="custom (--source and --target folders)", domains={}, classes=(), target_class_names=(),
        tasks=("custom",), builder="ssot.data.folders:from_config", checker="ssot.data.layouts:check_folders",
        defaults=_IMAGE_DEFAULTS,
    ),
)}
#: The paper's four image benchmarks, read from the data root.
BENCHMARKS: tuple[str, ...] = tuple(name for name, spec in DATASETS.items() if spec.on_disk)


def _make_task(spec: DatasetSpec, name: str) -> TaskSpec:
    src, sep, tgt = name.partition("2")
    if not sep or src not in spec.domains or tgt not in spec.domains:
        return TaskSpec(name, spec.name, "", "", spec.references.get(name))
    return TaskSpec(name, spec.name, spec.domains[src], spec.domains[tgt], spec.references.get(name))


#: Every task, by name, in the order of :data:`DATASETS`.
TASKS: dict[str, TaskSpec] = {name: _make_task(spec, name) for spec in DATASETS.values() for name in spec.tasks}
_BY_LOWER = {name.lower(): spec for name, spec in TASKS.items()}
assert len(_BY_LOWER) == len(TASKS), "task names must differ case-insensitively"


# ------------------------------------------------------------------------------------ look-ups
def task_names() -> list[str]:
    """Every valid task name."""
    return list(TASKS)


def task(name: str) -> TaskSpec:
    """The task called ``name`` (case-insensitive: ``"ar2cl"`` is ``"Ar2Cl"``).

    Raises
    ------
    ConfigError
        Naming every valid task.
    """
    found = _BY_LOWER.get(str(name).lower())
    if found is None:
        raise ConfigError(f"Unknown task {name!r}.{did_you_mean(name, TASKS)} Valid tasks: {', '.join(TASKS)}.")
    return found


def tasks_of(dataset_name: str) -> list[str]:
    """Names of the tasks of one dataset, e.g. ``tasks_of("visda2017") == ["S2R", "R2S"]``."""
    if dataset_name not in DATASETS:
        raise ConfigError(f"Unknown dataset {dataset_name!r}.{did_you_mean(dataset_name, DATASETS)} Valid datasets: "
                          f"{', '.join(DATASETS)}.")
    return list(DATASETS[dataset_name].tasks)


def searched_tasks(name: str) -> list[str] | None:
    """The tasks ``--task name`` searches when ``name`` is a dataset (:attr:`DatasetSpec.searched`,
    default every task of it); ``None`` when ``name`` is a task (or a dataset of one task named
    as it, such as ``digits``)."""
    spec = DATASETS.get(name)
    if spec is None or spec.tasks == (name,):
        return None
    return list(spec.searched if spec.searched is not None else spec.tasks)


def search_tasks(name: str) -> list[str]:
    """The tasks a search of ``--task name`` runs: a dataset's (:func:`searched_tasks`), or the task
    ``name`` itself.

    Raises
    ------
    ConfigError
        For a name that is neither a task nor a dataset, naming the closest of both and every valid one.
    """
    tasks = searched_tasks(name)
    if tasks is not None:
        return tasks
    if str(name).lower() not in _BY_LOWER:
        raise ConfigError(f"Unknown task or dataset {name!r}.{did_you_mean(name, [*TASKS, *DATASETS])} Valid tasks: "
                          f"{', '.join(TASKS)}; datasets: {', '.join(n for n in DATASETS if searched_tasks(n))}.")
    return [name]


def dataset_of(task_name: str) -> str:
    """The dataset a task belongs to (``""`` for an unknown name)."""
    found = _BY_LOWER.get(str(task_name).lower())
    return found.dataset if found is not None else ""


def task_defaults(name: str) -> dict[str, Any]:
    """The config defaults of task ``name``: its dataset's, then its own (raises for an unknown task)."""
    found = task(name)
    return {**found.spec.defaults, **found.spec.task_defaults.get(found.name, {})}


def default_variants(field: str) -> list[tuple[Any, str]]:
    """The defaults that datasets and tasks give config field ``field`` over the config's own
    (:func:`task_defaults`), each with who gives it: ``[(20, "image tasks")]`` for ``epochs``,
    ``[(28, "P2H, P2P")]`` for ``iters_per_epoch`` (the help of the field's flag shows them)."""
    found: dict[str, tuple[Any, list[str]]] = {}
    for spec in DATASETS.values():
        given = [("image tasks" if spec.defaults is _IMAGE_DEFAULTS else spec.name, spec.defaults)]
        given += [(name, values) for name, values in spec.task_defaults.items()]
        for who, values in given:
            if field in values:
                _, names = found.setdefault(repr(values[field]), (values[field], []))
                if who not in names:
                    names.append(who)
    return [(value, ", ".join(names)) for value, names in found.values()]


def check_function(name: str) -> Callable[..., Any] | None:
    """The function ``checker(task_spec, config)`` of task ``name``'s dataset (torch-free), or
    ``None`` when its data is built in memory."""
    checker = task(name).spec.checker
    if not checker:
        return None
    module, _, function = checker.partition(":")
    return getattr(importlib.import_module(module), function)


def reference_task(name: str) -> str | None:
    """The target-supervised reference (ceiling) of task ``name``: ``Y2Y`` for a task ``X2Y`` when
    ``Y2Y`` is a reference task on the same target domain (``P2H`` -> ``H2H``, ``S2P`` -> ``P2P``;
    ImageCLEF's ``I2P`` has none), else ``None``."""
    found = task(name)
    _, sep, tgt = found.name.partition("2")
    reference = _BY_LOWER.get(f"{tgt}2{tgt}".lower()) if sep and found.reference_of is None else None
    if reference is None or reference.reference_of is None or reference.target != found.target:
        return None
    return reference.name


def build_function(name: str) -> Callable[..., Any]:
    """The function ``builder(task_spec, config) -> TaskData`` of task ``name``'s dataset
    (imported now: it loads torch)."""
    module, _, function = task(name).spec.builder.partition(":")
    return getattr(importlib.import_module(module), function)
