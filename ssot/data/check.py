"""The data check: what is under the data root, what is missing, which of the 26 tasks can run.

``python -m ssot.data check --data-root DIR`` calls :func:`check_data` and prints its lines. For
every dataset and domain it counts the images found (either layout, :mod:`ssot.data.layouts`)
against the published count, lists missing or empty classes, opens a sample of the images (all
with ``--all-images``), and then says which tasks can run. One line per problem.

Published image counts (:attr:`ssot.data.registry.DatasetSpec.published_counts`)
-------------------------------------------------------------------------------
- Office-31: amazon 2817, dslr 498, webcam 795 (4652 in all) -- Saenko et al. (2010), the
  counts repeated by every Office-31 description, e.g. jindongwang/transferlearning
  ``data/dataset.md``.
- Office-Home: Art 2427, Clipart 4365, Product 4439, Real World 4357 (15,588 in all) --
  Venkateswara et al. (2017); the dataset page (hemanthdv/profile ``OfficeHome-Dataset.md``)
  says "around 15,500 images", the per-domain figures are the ones DA papers tabulate.
- ImageCLEF-DA: 600 images per domain, 50 per class (12 classes) -- Long et al. (2017), JAN.
- VisDA-2017 classification: train (synthetic) 152,397, validation (real) 55,388 -- Peng et
  al. (2017), Table 1.

References
----------
Saenko, Kulis, Fritz, Darrell. Adapting visual category models to new domains. ECCV 2010.
Venkateswara, Eusebio, Chakraborty, Panchanathan. Deep hashing network for unsupervised domain
adaptation. CVPR 2017.
Long, Zhu, Wang, Jordan. Deep transfer learning with joint adaptation networks. ICML 2017.
Peng, Usman, Kaushik, Hoffman, Wang, Saenko. VisDA: the visual domain adaptation challenge.
arXiv:1710.06924, 2017.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from ssot.data.layouts import Sample, dataset_bases, find_domain_samples, load_rgb, locate_domain
from ssot.data.registry import BENCHMARKS, DATASETS, TASKS
from ssot.errors import ConfigError, DataError

DEFAULT_SAMPLE = 20


@dataclass
class DomainReport:
    """What the check found for one domain; ``blocker`` says why it cannot serve a task."""

    samples: list[Sample] = field(default_factory=list)
    missing_classes: list[str] = field(default_factory=list)
    unreadable: int = 0
    blocker: str | None = None


@dataclass
class CheckReport:
    """The check's result: ``lines`` to print (``problems`` is the subset that are problems).

    Attributes
    ----------
    runnable : tasks whose source and target are complete.
    blocked : task -> the reason it cannot run.
    """

    lines: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    runnable: list[str] = field(default_factory=list)
    blocked: dict[str, str] = field(default_factory=dict)

    def problem(self, text: str) -> None:
        self.lines.append(f"PROBLEM {text}")
        self.problems.append(text)

    @property
    def exit_code(self) -> int:
        """0 when every checked task can run, 1 when at least one cannot (:mod:`ssot.cli`)."""
        return 1 if self.blocked else 0


def _sample(samples: list[Sample], count: int | None) -> list[Sample]:
    """``count`` samples spread evenly over the list (deterministic); all when ``None``."""
    if count is None or count >= len(samples):
        return samples
    if count == 0:
        return []
    step = len(samples) / count
    return [samples[int(i * step)] for i in range(count)]


def _released_list_count(root: Path, dataset: str, folder: str) -> int | None:
    """Entries of the ``image_list.txt`` shipped inside a VisDA split folder, if present."""
    spec = DATASETS[dataset]
    where = locate_domain(root, spec, folder)
    if where is None or where.class_root is None:
        return None
    list_file = where.class_root / "image_list.txt"
    if not list_file.is_file():
        return None
    return sum(1 for line in list_file.read_text().splitlines() if line.strip())


def check_domain(root: Path, dataset: str, folder: str, report: CheckReport,
                 sample: int | None) -> DomainReport:
    """Check one domain, appending its lines to ``report``."""
    spec = DATASETS[dataset]
    shown = f"{dataset}/{spec.released_folders.get(folder, folder)}"
    try:
        samples = find_domain_samples(root, spec, folder)
    except DataError as exc:
        report.problem(f"{shown}: {exc}")
        return DomainReport(blocker=f"{shown} cannot be loaded")
    out = DomainReport(samples=samples)
    published = spec.published_counts.get(folder)
    counts = Counter(label for _, label in samples)
    if published is not None and len(samples) != published:
        diff = published - len(samples)
        gap = f"{diff} missing" if diff > 0 else f"{-diff} more than published"
        report.problem(f"{shown}: {len(samples)} images found, {published} published ({gap})")
    else:
        report.lines.append(f"ok {shown}: {len(samples)} images (published {published})")
    listed = _released_list_count(root, dataset, folder)
    if listed is not None and listed != len(samples):
        report.problem(f"{shown}: image_list.txt lists {listed} images, {len(samples)} found")
    per_class = spec.published_per_class
    where = locate_domain(root, spec, folder)
    for k, name in enumerate(spec.classes):
        if counts[k] == 0:
            out.missing_classes.append(name)
            folder_exists = where is not None and where.class_root is not None and \
                (where.class_root / name).is_dir()
            kind = "empty class folder" if folder_exists else "missing class"
            report.problem(f"{shown}: {kind} {name} (no images)")
        elif per_class is not None and counts[k] != per_class:
            report.problem(f"{shown}: class {name} has {counts[k]} images, {per_class} "
                           "published")
    for path, _ in _sample(samples, sample):
        try:
            load_rgb(path)
        except DataError as exc:
            out.unreadable += 1
            report.problem(f"{shown}: {exc}")
    if out.unreadable:
        out.blocker = f"{shown} has {out.unreadable} unreadable image(s)"
    return out


def _task_blocker(task: str, domains: dict[tuple[str, str], DomainReport]) -> str | None:
    spec_task = TASKS[task]
    spec = DATASETS[spec_task.dataset]
    source = domains[(spec_task.dataset, spec_task.source)]
    target = domains[(spec_task.dataset, spec_task.target)]
    if source.blocker and source.blocker == target.blocker:
        return source.blocker
    for role, dom in (("source", source), ("target", target)):
        if dom.blocker:
            return f"{role} {dom.blocker}"
    if source.missing_classes:
        return (f"source {spec_task.dataset}/{spec_task.source} lacks "
                f"{len(source.missing_classes)} of {spec.num_classes} classes "
                f"({', '.join(source.missing_classes[:5])}{', ...' if len(source.missing_classes) > 5 else ''})")
    keep = set(spec.target_classes)
    if not any(label in keep for _, label in target.samples):
        return f"target {spec_task.dataset}/{spec_task.target} has no image of the target classes"
    return None


def check_data(root: Path, datasets: list[str] | None = None,
               sample: int | None = DEFAULT_SAMPLE) -> CheckReport:
    """Check the datasets under ``root`` and which of their tasks can run.

    Parameters
    ----------
    root : the data root (must exist).
    datasets : names to check (default: all four).
    sample : images opened per domain to find unreadable files; ``None`` opens every image.

    Returns
    -------
    CheckReport; its ``exit_code`` is 1 when a checked task cannot run.
    """
    names = list(BENCHMARKS) if not datasets else datasets
    for name in names:
        if name not in BENCHMARKS:
            raise ConfigError(f"Unknown dataset {name!r}. Valid datasets: {', '.join(BENCHMARKS)}.")
    if sample is not None and sample < 0:
        raise ConfigError(f"The 'sample' parameter must be an int >= 0. Got {sample} instead.")
    report = CheckReport()
    domains: dict[tuple[str, str], DomainReport] = {}
    for name in names:
        spec = DATASETS[name]
        if not dataset_bases(root, spec):
            report.problem(f"{name}: {spec.title} not found under {root}; published at "
                           f"{spec.url}; bring it in with: python -m ssot.data fetch {name} "
                           f"--data-root {root}")
            for folder in spec.domains.values():
                domains[(name, folder)] = DomainReport(blocker=f"{spec.title} not found")
            continue  # its tasks are blocked below with the reason "<title> not found"
        for folder in spec.domains.values():
            domains[(name, folder)] = check_domain(root, name, folder, report, sample)
    for task, spec_task in TASKS.items():
        if spec_task.dataset not in names:  # only the checked benchmarks' tasks
            continue
        reason = _task_blocker(task, domains)
        if reason is None:
            report.runnable.append(task)
        else:
            report.blocked[task] = reason
    checked = len(report.runnable) + len(report.blocked)
    report.lines.append(f"tasks: {len(report.runnable)} of {checked} can run"
                        + (f": {' '.join(report.runnable)}" if report.runnable else ""))
    by_reason: dict[str, list[str]] = {}
    for task, reason in report.blocked.items():
        by_reason.setdefault(reason, []).append(task)
    for reason, tasks in by_reason.items():
        report.lines.append(f"cannot run {' '.join(tasks)}: {reason}")
    return report
