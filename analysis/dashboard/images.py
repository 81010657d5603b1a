"""Static images of figures (PNG or SVG) through kaleido, for papers."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Literal

import plotly.graph_objects as go
import plotly.io as pio

from ssot.results.experiment import Problem

__all__ = ["ImageFormat", "export_images"]

ImageFormat = Literal["png", "svg", "pdf"]
_STATIC_SIZE = {"width": 680, "height": 520}




def export_images(
    figures: Mapping[Path, go.Figure], image_format: ImageFormat = "png"
) -> tuple[list[Path], list[Problem]]:
    """Write figures as static images with kaleido, in one batch.

    Parameters
    ----------
    figures : Mapping of Path to Figure
        Target file (its suffix is replaced by ``image_format``) to figure.
    image_format : {"png", "svg", "pdf"}

    Returns
    -------
    written : list of Path
    problems : list of Problem
        One problem (naming the folder) if kaleido is missing or cannot start its browser; the
        images are then skipped, nothing else is affected.
    """
    if image_format not in ("png", "svg", "pdf"):
        raise ValueError(
            f"The 'image_format' parameter must be 'png', 'svg' or 'pdf'. Got {image_format!r} instead."
        )
    if not figures:
        return [], []
    paths = [path.with_suffix(f".{image_format}") for path in figures]
    folder = paths[0].parent
    try:
        import kaleido  # noqa: F401  (only to tell "not installed" from "cannot run")
    except ImportError:
        return [], [Problem(folder, "static images skipped: kaleido is not installed "
                                    "(pip install kaleido); the HTML dashboard is complete")]
    created = not folder.exists()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        pio.write_images(
            [_static_version(f) for f in figures.values()], paths, format=image_format,
            scale=2 if image_format == "png" else 1,
        )
    except Exception as exc:  # kaleido raises many kinds (browser missing, timeouts, ...)
        first_line = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        if created and folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()  # leave no empty folder behind
        return [], [
            Problem(
                folder,
                f"static images skipped: kaleido failed ({type(exc).__name__}: {first_line}); it "
                "needs Chrome or Chromium (apt-get install chromium, or set BROWSER_PATH); the "
                "HTML dashboard is complete",
            )
        ]
    return paths, []


def _static_version(figure: go.Figure) -> go.Figure:
    """A copy of the figure at a fixed size, fit for a page."""
    copy = go.Figure(figure)
    copy.update_layout(height=_STATIC_SIZE["height"], width=_STATIC_SIZE["width"])
    return copy
