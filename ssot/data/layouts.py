"""Where a benchmark's images lie under the data root: our layout and the released archives'.

Two layouts are accepted for every dataset. **Ours** (``<root>/<dataset>/<domain folder>/...``,
see :mod:`ssot.data.benchmarks`) and the **released** one (the archive's top folder and renamed
domain folders are :attr:`~ssot.data.registry.DatasetSpec.released_top` and
:attr:`~ssot.data.registry.DatasetSpec.released_folders`): the official archive unpacked as it
is, either inside ``<root>/<dataset>/`` (where ``python -m ssot.data fetch`` puts it) or directly
in ``<root>/``::

    office31/domain_adaptation_images/{amazon,dslr,webcam}/images/<class>/*.jpg
    officehome/OfficeHomeDataset_10072016/{Art,Clipart,Product,Real World}/<class>/*.jpg
    imageclef/image_CLEF/{b,c,i,p}/*.jpg  with  image_CLEF/list/{b,c,i,p}List.txt
    visda2017/{train,validation}/<class>/*  with  {train,validation}/image_list.txt

Sources for the released layouts: Office-31, the archive ``domain_adaptation_images.tar.gz`` of
Saenko et al. (ECCV 2010), https://faculty.cc.gatech.edu/~judy/domainadapt/ (per-domain
``<domain>/images/<class>/`` folders, as also listed by jihanyang/AFN ``data/README.md``);
Office-Home, ``OfficeHomeDataset_10072016.zip`` of Venkateswara et al. (CVPR 2017),
https://www.hemanthdv.org/officeHomeDataset.html (domains "Art", "Clipart", "Product",
"Real World"; Transfer-Learning-Library renames the last to ``Real_World``); ImageCLEF-DA,
``image_CLEF.zip`` of Long et al. (JAN, ICML 2017) with ``b c i p`` folders and
``list/{b,c,i,p}List.txt`` (AFN ``data/README.md`` shows the same files; their labels index the
alphabetical class order, as Transfer-Learning-Library's ``ImageCLEF.CLASSES`` lists it); VisDA-2017,
``train.tar`` and ``validation.tar`` of Peng et al. (arXiv:1710.06924),
VisionLearningGroup/taskcv-2017-public ``classification_track/README.md``: "a single .txt file
in the root of each dataset that lists all images and corresponding labels" (``image_list.txt``).

Image-list files are used instead of a folder scan when one exists (searched in this order):
``<base>/list/<domain>.txt``, ``<base>/list/<domain>List.txt``, where ``<base>`` is the dataset
folder of either layout. VisDA-2017's ``<split>/image_list.txt`` is *not* used for loading (the
class folders name the labels unambiguously); ``python -m ssot.data check`` compares its length
with the images found.

Nothing here loads torch: a task's samples (:func:`task_samples`), the checks of its folders and
the opening of one image (:func:`load_rgb`, PIL) serve the data check, ``prepare`` and every
command's refusal of missing data before torch is imported; the torch datasets over the samples
are :mod:`ssot.data.benchmarks`'.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ssot.data.registry import BENCHMARKS, DATASETS, DatasetSpec, TaskSpec, task
from ssot.errors import ConfigError, DataError

if TYPE_CHECKING:
    import PIL.Image

#: The environment variable of the data root (``--data-root`` overrides it).
DATA_ROOT_ENV = "SSOT_DATA_ROOT"
IMAGE_EXTENSIONS = frozenset({".jpg", ".jpeg", ".png", ".bmp"})

Sample = tuple[Path, int]


@dataclass(frozen=True)
class DomainLocation:
    """Where one domain was found: a list file, or a folder of class folders (one is set)."""

    base: Path
    list_file: Path | None
    class_root: Path | None


def resolve_data_root(data_root: str | Path | None) -> Path:
    """The data root: ``data_root`` if given, else ``$SSOT_DATA_ROOT``; it must exist."""
    if data_root is None or str(data_root) == "":
        data_root = os.environ.get(DATA_ROOT_ENV) or None
    if data_root is None:
        raise DataError(f"no data root: pass --data-root DIR or set {DATA_ROOT_ENV}")
    root = Path(data_root).expanduser()
    if not root.is_dir():
        raise DataError(f"data root {root} does not exist or is not a folder "
                        f"(from --data-root or {DATA_ROOT_ENV}); point it at the folder that "
                        "holds office31/, imageclef/, officehome/ or visda2017/")
    return root


def dataset_bases(root: Path, spec: DatasetSpec) -> list[Path]:
    """Candidate dataset folders, in order: ours, the archive inside it, the archive in root."""
    top = spec.released_top
    candidates = [root / spec.name]
    if top:
        candidates += [root / spec.name / top, root / top]
    return [c for c in candidates if c.is_dir()]


def folder_names(spec: DatasetSpec, folder: str) -> list[str]:
    """Our name of a domain folder, then its released name if different."""
    released = spec.released_folders.get(folder)
    return [folder] if released is None else [folder, released]


def find_list_file(base: Path, folder: str) -> Path | None:
    """The image-list file of one domain under ``base``, if any (see the module docstring)."""
    for candidate in (base / "list" / f"{folder}.txt", base / "list" / f"{folder}List.txt"):
        if candidate.is_file():
            return candidate
    return None


def locate_domain(root: Path, spec: DatasetSpec, folder: str) -> DomainLocation | None:
    """Where domain ``folder`` of ``spec`` is, in either layout; ``None`` if nowhere."""
    for base in dataset_bases(root, spec):
        for name in folder_names(spec, folder):
            list_file = find_list_file(base, name)
            if list_file is not None:
                return DomainLocation(base, list_file, None)
            class_root = base / name / spec.image_subdir
            if not spec.list_required and class_root.is_dir():
                return DomainLocation(base, None, class_root)
    return None


def missing_error(spec: DatasetSpec, path: Path, root: Path, folder: str) -> DataError:
    """The one-line error for a missing dataset/domain folder or list file."""
    top = spec.released_top
    released = f"{spec.name}/{top}/..." if top else "the same folders"
    return DataError(f"{spec.title} not found: expected {path} (layout "
                     f"{root}/{spec.describe_layout(folder)}, or the official archive unpacked as "
                     f"{root}/{released}); {spec.title} is published at {spec.url}; bring it in "
                     f"with: python -m ssot.data fetch {spec.name} --data-root {root}")


def _resolve_listed_path(raw: str, base_dir: Path, list_dir: Path) -> Path | None:
    rel = Path(raw.replace("\\", "/"))
    last_two = Path(*rel.parts[-2:]) if len(rel.parts) >= 2 else rel
    for candidate in (base_dir / rel, list_dir / rel, base_dir / last_two):
        if candidate.is_file():
            return candidate
    return None


def load_image_list(list_file: str | Path, base_dir: str | Path,
                    num_classes: int) -> list[Sample]:
    """Parse an image-list file of ``relative/path.jpg <label>`` lines.

    Parameters
    ----------
    list_file : the list file.
    base_dir : folder the listed paths are relative to; a path is tried relative to
        ``base_dir``, then to the list file's folder, then by its last two components relative to
        ``base_dir`` (released lists often carry foreign prefixes).
    num_classes : K; every label must lie in ``0 .. K-1``.

    Returns
    -------
    list of (path, label), in file order.
    """
    list_file, base_dir = Path(list_file), Path(base_dir)
    samples: list[Sample] = []
    for lineno, line in enumerate(list_file.read_text().splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.rsplit(maxsplit=1)
        if len(parts) != 2 or not parts[1].lstrip("-").isdigit():
            raise DataError(f"{list_file}, line {lineno}: expected 'relative/path.jpg <label>', "
                            f"got {line!r}")
        raw, label = parts[0], int(parts[1])
        if not 0 <= label < num_classes:
            raise DataError(f"{list_file}, line {lineno}: label {label} is outside 0..."
                            f"{num_classes - 1}")
        path = _resolve_listed_path(raw, base_dir, list_file.parent)
        if path is None:
            raise DataError(f"{list_file}, line {lineno}: image {raw} not found (tried relative "
                            f"to {base_dir}, to {list_file.parent}, and by its last two "
                            "components)")
        samples.append((path, label))
    return samples


def scan_class_folders(domain_dir: Path, spec: DatasetSpec) -> list[Sample]:
    """All images of ``domain_dir/<class>/``, sorted by path; labels from ``spec.classes``."""
    samples: list[Sample] = []
    for class_dir in sorted(p for p in domain_dir.iterdir() if p.is_dir()):
        if class_dir.name.startswith("."):
            continue
        if class_dir.name not in spec.classes:
            raise DataError(f"unknown class folder {class_dir}: class folder names must be one "
                            f"of the {spec.num_classes} {spec.title} classes listed in "
                            f"ssot.data.registry.DATASETS[{spec.name!r}].classes "
                            f"(e.g. {', '.join(spec.classes[:3])}, ...)")
        label = spec.classes.index(class_dir.name)
        samples += [(p, label) for p in sorted(class_dir.iterdir())
                    if p.is_file() and p.suffix.lower() in IMAGE_EXTENSIONS]
    return samples


def domain_location(root: Path, spec: DatasetSpec, folder: str) -> DomainLocation:
    """Where domain ``folder`` of ``spec`` is (:func:`locate_domain`); a missing dataset, domain
    folder or required list file is refused (:func:`missing_error`)."""
    if not dataset_bases(root, spec):
        raise missing_error(spec, root / spec.name, root, folder)
    where = locate_domain(root, spec, folder)
    if where is None:
        expected = (root / spec.name / "list" / f"{folder}List.txt" if spec.list_required
                    else root / spec.name / folder / spec.image_subdir)
        raise missing_error(spec, expected, root, folder)
    return where


def check_benchmark(spec_task: TaskSpec, config: Any) -> None:
    """The registry's check of a benchmark task (no torch, no image opened): the data root and the
    source and target domains exist, in either layout; what only reading them finds (a missing
    class, an unreadable image) is refused when the task is built."""
    root = resolve_data_root(config.data_root)
    for folder in (spec_task.source, spec_task.target):
        domain_location(root, DATASETS[spec_task.dataset], folder)


def custom_folder(path: str | None, flag: str) -> Path:
    """The folder of a ``custom`` task's side (``flag``: ``--source`` or ``--target``), refused when
    not given or not a folder."""
    if not path:
        raise ConfigError(f"The task 'custom' needs {flag} DIR (a folder of images). Pass {flag}.")
    folder = Path(path).expanduser()
    if not folder.is_dir():
        raise DataError(f"{flag} {folder} is not a folder; pass a folder of class sub-folders" +
                        (" or of unlabeled images." if flag == "--target" else "."))
    return folder


def check_folders(spec_task: TaskSpec, config: Any) -> None:
    """The registry's check of the ``custom`` task (no torch): both folders are given and exist."""
    custom_folder(config.source_dir, "--source")
    custom_folder(config.target_dir, "--target")


def find_domain_samples(root: Path, spec: DatasetSpec, folder: str) -> list[Sample]:
    """Every sample of one domain (all classes), from its list file or its class folders.

    Raises
    ------
    DataError : the dataset folder, domain folder or required list file is missing, or the
        domain holds no image.
    """
    where = domain_location(root, spec, folder)
    if where.list_file is not None:
        samples = load_image_list(where.list_file, where.base, spec.num_classes)
        origin = where.list_file
    else:
        assert where.class_root is not None, "a domain is located by its list file or its class folders"
        samples, origin = scan_class_folders(where.class_root, spec), where.class_root
    if not samples:
        raise DataError(f"no images in {origin}; expected layout "
                        f"{root}/{spec.describe_layout(folder)}")
    return samples


def _check_all_classes(samples: list[Sample], spec: DatasetSpec, where: Path) -> None:
    present = {label for _, label in samples}
    missing = [c for k, c in enumerate(spec.classes) if k not in present]
    if missing:
        shown = ", ".join(missing[:5]) + (", ..." if len(missing) > 5 else "")
        raise DataError(f"source domain {where} has no images for {len(missing)} of the "
                        f"{spec.num_classes} classes ({shown}); the source needs every class")


def benchmark_task(name: str) -> TaskSpec:
    """The task called ``name``, refused (:class:`ConfigError`) unless it is a task of the image benchmarks."""
    spec_task = task(name)
    if not spec_task.spec.on_disk:
        raise ConfigError(f"Task {spec_task.name!r} is not a task of the paper's image benchmarks "
                          f"({', '.join(BENCHMARKS)}): its images are built in memory, so it needs no data root and no "
                          f"decoded-image cache. Train on it as it is: `python -m ssot.train --task {spec_task.name}`.")
    return spec_task


def task_samples(spec_task: TaskSpec, data_root: str | Path | None) -> tuple[DatasetSpec, list[Sample], list[Sample]]:
    """The dataset's spec, and the task's source samples (all classes) and target samples (the
    partial target classes only), read from the data root.

    Raises
    ------
    DataError : missing data root, dataset, domain, list file, class or unknown class folder.
    """
    root = resolve_data_root(data_root)
    spec = DATASETS[spec_task.dataset]
    source = find_domain_samples(root, spec, spec_task.source)
    _check_all_classes(source, spec, root / spec.name / spec_task.source)
    keep = set(spec.target_classes)
    target = [s for s in find_domain_samples(root, spec, spec_task.target) if s[1] in keep]
    if not target:
        raise DataError(f"target domain {root / spec.name / spec_task.target} has no images of "
                        f"the target classes ({', '.join(spec.target_class_names)})")
    return spec, source, target


def load_rgb(path: Path) -> PIL.Image.Image:
    """Open an image as RGB; an unreadable file raises a one-line :class:`DataError`. (PIL is
    imported here: finding a task's images needs no image library.)"""
    from PIL import Image

    try:
        with Image.open(path) as image:
            return image.convert("RGB")
    except (OSError, ValueError, Image.DecompressionBombError) as exc:
        reason = " ".join(str(exc).split()) or type(exc).__name__
        raise DataError(f"cannot read image {path}: {reason}; remove or replace the file") from exc
