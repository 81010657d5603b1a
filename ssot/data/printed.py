"""The embedded printed <-> handwritten digits benchmark: a real domain shift, no download.

Two domains of the digits 0-9, both at the scans' resolution (8x8 pixels, 17 grey levels 0..16,
upsampled to 16x16 like the ``digits`` task):

**printed** (``P``, synthetic, like VisDA's synthetic domain)
    Rendered with matplotlib's own FreeType (:class:`matplotlib.ft2font.FT2Font`) from the
    TrueType files that ship *inside* matplotlib (``matplotlib.get_data_path()/fonts/ttf``), never
    from system fonts, so a machine without any system font builds the same arrays. 15 faces
    (:data:`FONTS`: DejaVu Sans/Serif/Mono with bold and slanted faces, STIX, Computer Modern).
    Each image, with a seeded :class:`numpy.random.Generator` (PCG64):

    1. a font uniformly among :data:`FONTS`, a size of 36..60 px and a rotation in
       ``[-ROTATION_DEG, ROTATION_DEG]`` (FreeType renders the rotated, antialiased glyph);
    2. a stroke weight: ``k`` in {-1, 0, 1, 2} passes of a 3x3 grey erosion (-1) or dilation;
    3. cropped to the ink (pixels > 32), scaled (PIL box filter, aspect kept) so that its longer
       side is 24..32 px, pasted at a random offset into a 32x32 canvas (size and shift);
    4. box-pooled to 8x8 (4x4 means), quantised to 0..16 like the scans, and 4 random pixels
       get +-1 level of noise.

    Every step after the float rotation inside FreeType is integer arithmetic, so the uint8
    arrays (and :func:`checksum`) are the same on every machine with the same matplotlib, PIL and
    numpy. ``PER_CLASS`` images per class in each of two independent halves (A and B, two seeds).

**handwritten** (``H``)
    scikit-learn's bundled digits (the real scans), split in halves by sample order as in
    :mod:`ssot.data.digits` (even positions: half A, odd positions: half B). No synthetic shift.

Tasks (target = half B restricted to :data:`TARGET_CLASSES`, 5 of 10: a partial label space)

======  ================================  ==========================================
name    source (10 classes)               target (classes 0-4)
======  ================================  ==========================================
``P2H`` printed, half A (1800 images)     handwritten, half B (449 images)
``H2P`` handwritten, half A (901 images)  printed, half B (900 images)
======  ================================  ==========================================

The letters do not clash with the paper's task names (``P`` is ImageCLEF's Pascal there, but no
paper task involves ``H``). Target-supervised references (the ceilings), trained on the *target*
domain's labels and evaluated on the same held-out target: ``H2H`` (handwritten half A, classes
0-4 -> handwritten half B; the ceiling of ``P2H``) and ``P2P`` (printed half A, classes 0-4 ->
printed half B; the ceiling of ``H2P``). Run them with ``--epochs 0``: the source-only model
*is* the reference. The registry's dataset ``embedded`` (:mod:`ssot.data.registry`) holds these
tasks, and ``python tune/search.py --task embedded`` searches ``digits``, ``P2H`` and ``H2P``.

A third domain of the same digits, **shifted** (``S``, :mod:`ssot.data.shifted`), makes the
dataset ``embedded3``: ``P2H``, ``H2P``, ``P2S``, ``S2P``, ``H2S``, ``S2H`` (references ``H2H``,
``P2P``, ``S2S``: the reference of ``X2Y`` is ``Y2Y``), built here by the same function, with the
same halves (source: half A; target: half B, classes 0-4).
"""
from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.utils.data import TensorDataset

from ssot.data.base import TaskData
from ssot.data.digits import SIZE, checksum, split_digits, upsample
from ssot.data.registry import DATASETS, TaskSpec, task

#: The faces used, file names inside ``matplotlib.get_data_path()/fonts/ttf``.
FONTS: tuple[str, ...] = (
    "DejaVuSans.ttf", "DejaVuSans-Bold.ttf", "DejaVuSans-Oblique.ttf", "DejaVuSans-BoldOblique.ttf",
    "DejaVuSerif.ttf", "DejaVuSerif-Bold.ttf", "DejaVuSerif-Italic.ttf",
    "DejaVuSansMono.ttf", "DejaVuSansMono-Bold.ttf",
    "STIXGeneral.ttf", "STIXGeneralBol.ttf", "STIXGeneralItalic.ttf",
    "cmr10.ttf", "cmss10.ttf", "cmtt10.ttf",
)
PER_CLASS = 180
ROTATION_DEG = 12.0
SEEDS = {"A": 0, "B": 1}
#: The target's classes (the registry's ``embedded`` spec): 0..4.
TARGET_CLASSES: list[int] = DATASETS["embedded"].target_classes
#: sha256 of the uint8 arrays (images then labels, half A then half B), see :func:`checksum`.
EXPECTED_SHA256 = "d197a99d2f94f32ad79fa9c50eac85eea5474729ed1f30ef8e13f19b9bdfda1a"
CACHE_ENV = "SSOT_CACHE_DIR"


def font_dir() -> Path:
    """The folder of matplotlib's bundled TrueType fonts (the only fonts this module reads)."""
    import matplotlib

    return Path(matplotlib.get_data_path()) / "fonts" / "ttf"


def font_paths() -> list[Path]:
    """Absolute paths of :data:`FONTS`, all inside :func:`font_dir`."""
    return [font_dir() / name for name in FONTS]


def _stroke(img: np.ndarray, k: int) -> np.ndarray:
    """``|k|`` passes of a 3x3 grey dilation (``k > 0``) or erosion (``k < 0``), integer-exact."""
    for _ in range(abs(k)):
        p = np.pad(img, 1)
        views = [p[i:i + img.shape[0], j:j + img.shape[1]] for i in range(3) for j in range(3)]
        img = np.max(views, axis=0) if k > 0 else np.min(views, axis=0)
    return img


def _render_one(font, digit: int, rng: np.random.Generator) -> np.ndarray:
    """One printed digit as an 8x8 uint8 array of levels 0..16 (steps 1-4 of the module doc)."""
    from PIL import Image

    font.set_size(float(rng.integers(36, 61)), 72.0)
    font.set_text(str(digit), float(rng.uniform(-ROTATION_DEG, ROTATION_DEG)))
    font.draw_glyphs_to_bitmap(antialiased=True)
    img = np.pad(np.asarray(font.get_image(), dtype=np.uint8), 3)
    img = _stroke(img, int(rng.integers(-1, 3)))
    rows, cols = np.nonzero(img > 32)
    img = img[rows.min():rows.max() + 1, cols.min():cols.max() + 1]
    side = int(rng.integers(24, 33))
    h, w = img.shape
    scale = side / max(h, w)
    nh, nw = max(1, round(h * scale)), max(1, round(w * scale))
    small = np.asarray(Image.fromarray(img).resize((nw, nh), Image.Resampling.BOX), dtype=np.uint8)
    canvas = np.zeros((32, 32), dtype=np.uint8)
    top, left = int(rng.integers(0, 33 - nh)), int(rng.integers(0, 33 - nw))
    canvas[top:top + nh, left:left + nw] = small
    pooled = canvas.reshape(8, 4, 8, 4).astype(np.int64).sum(axis=(1, 3))  # 16 pixels of 0..255
    levels = (pooled * 16 + 8 * 255) // (16 * 255)  # round(mean / 255 * 16)
    flat = levels.reshape(-1)
    idx = rng.choice(64, size=4, replace=False)
    flat[idx] += rng.choice(np.array([-1, 1]), size=4)
    return np.clip(levels, 0, 16).astype(np.uint8)


def render_printed(seed: int, per_class: int = PER_CLASS) -> tuple[np.ndarray, np.ndarray]:
    """``(images, labels)``: ``(10 * per_class, 8, 8)`` uint8 levels 0..16 and uint8 labels.

    Deterministic in ``seed``; classes in blocks of ``per_class`` (0..0, 1..1, ...).
    """
    from matplotlib.ft2font import FT2Font

    rng = np.random.default_rng(seed)
    fonts = [FT2Font(str(p)) for p in font_paths()]
    images = np.empty((10 * per_class, 8, 8), dtype=np.uint8)
    for d in range(10):
        for i in range(per_class):
            images[d * per_class + i] = _render_one(fonts[int(rng.integers(len(fonts)))], d, rng)
    labels = np.repeat(np.arange(10, dtype=np.uint8), per_class)
    return images, labels


def _cache_file() -> Path | None:
    root = os.environ.get(CACHE_ENV)
    return Path(root).expanduser() / f"printed_digits_{PER_CLASS}.npz" if root else None


@functools.lru_cache(maxsize=1)
def printed_digits() -> dict[str, np.ndarray]:
    """Both printed halves, ``{"xA", "yA", "xB", "yB"}`` (uint8), cached in memory.

    With ``$SSOT_CACHE_DIR`` set, they are also read from / written to
    ``$SSOT_CACHE_DIR/printed_digits_180.npz``; a cached file whose :func:`checksum` differs
    from the stored one is ignored and rewritten (about 1 s to regenerate).
    """
    path = _cache_file()
    if path is not None and path.is_file():
        try:
            with np.load(path) as z:
                arrays = {k: z[k] for k in ("xA", "yA", "xB", "yB")}
                stored = str(z["sha256"])
            if checksum(arrays) == stored:
                return arrays
        except (OSError, KeyError, ValueError):
            pass
    arrays = {}
    for half, seed in SEEDS.items():
        arrays[f"x{half}"], arrays[f"y{half}"] = render_printed(seed, PER_CLASS)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp.npz")
        np.savez_compressed(tmp, sha256=np.array(checksum(arrays)), **arrays)
        os.replace(tmp, path)
    return arrays


def _printed_half(half: str) -> tuple[torch.Tensor, torch.Tensor]:
    arrays = printed_digits()
    x = torch.from_numpy(arrays[f"x{half}"].astype(np.float32) / 16.0).unsqueeze(1)
    return upsample(x), torch.from_numpy(arrays[f"y{half}"].astype(np.int64))


def _handwritten_half(half: str) -> tuple[torch.Tensor, torch.Tensor]:
    xa, ya, xb, yb = split_digits()
    return (xa, ya) if half == "A" else (xb, yb)


def _only(x: torch.Tensor, y: torch.Tensor, classes: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
    keep = torch.isin(y, torch.tensor(classes))
    return x[keep], y[keep]


def build_printed_task(name: str) -> TaskData:
    """A task of the registry's ``embedded`` dataset (``P2H``, ``H2P``, or a reference ``H2H``/``P2P``)
    or of ``embedded3`` (a task with the shifted domain ``S``, :mod:`ssot.data.shifted`, or ``S2S``)."""
    from ssot.data.shifted import shifted_half

    spec_task = task(name)
    # the domains of the embedded and embedded3 specs
    halves = {"printed": _printed_half, "handwritten": _handwritten_half, "shifted": shifted_half}
    if {spec_task.source, spec_task.target} - set(halves):
        raise ValueError(f"Unknown printed-digits task {name!r}. Valid tasks: "
                         f"{', '.join(DATASETS['embedded'].tasks + DATASETS['embedded3'].tasks)}.")
    xs, ys = halves[spec_task.source]("A")
    if spec_task.reference_of is not None:  # target-supervised: the source holds the target's classes only
        xs, ys = _only(xs, ys, TARGET_CLASSES)
    xt, yt = _only(*halves[spec_task.target]("B"), TARGET_CLASSES)
    source, target = TensorDataset(xs, ys), TensorDataset(xt, yt)
    return TaskData(name=spec_task.name, source=source, source_eval=source, target=target, target_eval=target,
                    class_names=list(spec_task.spec.classes), target_classes=list(TARGET_CLASSES),
                    input_shape=(1, SIZE, SIZE))


def from_config(spec_task: TaskSpec, config: Any) -> TaskData:
    """The registry's builder of the ``embedded`` and ``embedded3`` datasets."""
    return build_printed_task(spec_task.name)
