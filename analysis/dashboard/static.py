"""Static figures for papers: matplotlib PDF/PNG by default, Plotly through kaleido on request.

Each static figure is kept as its info object's two renderings (:class:`StaticFigure`): the
Plotly figure of the dashboard and a matplotlib drawing of the same info, made only when asked.
:func:`write_static` writes one file per figure and format into a folder; the matplotlib backend
needs no browser, the ``"plotly"`` backend needs kaleido and Chrome/Chromium
(:func:`analysis.dashboard.images.export_images`).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import plotly.graph_objects as go

from analysis.dashboard.images import export_images
from ssot import cli
from ssot.results.experiment import Problem

__all__ = ["Backend", "FORMATS", "BACKENDS", "StaticFigure", "write_static", "add_figure_flags"]

Backend = Literal["matplotlib", "plotly"]
BACKENDS: tuple[str, ...] = ("matplotlib", "plotly")
#: Formats of static figures; the default is PDF (for the paper) and PNG (for slides and READMEs).
FORMATS: tuple[str, ...] = ("pdf", "png", "svg")
DEFAULT_FORMATS: tuple[str, ...] = ("pdf", "png")


def add_figure_flags(parser: argparse.ArgumentParser | Any) -> None:
    """The flags of every command that writes static figures (the dashboard, the atlas):
    ``--format`` (among :data:`FORMATS`, default :data:`DEFAULT_FORMATS`) and ``--no-images``
    (the HTML page only)."""
    parser.add_argument("--format", choices=list(FORMATS), nargs="+", default=list(DEFAULT_FORMATS), help="static figure formats")
    cli.add_no_images(parser)


@dataclass(frozen=True)
class StaticFigure:
    """One figure, renderable by either backend.

    Attributes
    ----------
    plotly : plotly.graph_objects.Figure
        The dashboard's figure.
    draw : callable
        ``draw() -> matplotlib.figure.Figure``: the matplotlib rendering of the same info object.
    """

    plotly: go.Figure
    draw: Callable[[], Any]


def _check(formats: Sequence[str], backend: str) -> None:
    if backend not in BACKENDS:
        raise ValueError(f"The 'backend' parameter must be one of {list(BACKENDS)}. Got {backend!r} instead.")
    bad = [f for f in formats if f not in FORMATS]
    if bad or not formats:
        raise ValueError(
            f"The 'formats' parameter must be a non-empty list of {list(FORMATS)}. Got {list(formats)!r} instead."
        )


def write_static(
    figures: Mapping[Path, StaticFigure],
    formats: Sequence[str] = DEFAULT_FORMATS,
    backend: Backend = "matplotlib",
) -> tuple[list[Path], list[Problem]]:
    """Write every figure as ``<stem>.<format>`` for each format.

    Parameters
    ----------
    figures : Mapping of Path to StaticFigure
        File stem (no suffix) to figure.
    formats : sequence of {"pdf", "png", "svg"}
    backend : {"matplotlib", "plotly"}
        ``"matplotlib"`` (default) needs no browser; ``"plotly"`` writes the dashboard's figures
        through kaleido, which needs Chrome or Chromium.

    Returns
    -------
    written : list of Path
    problems : list of Problem
        One problem naming the folder when the backend cannot run (matplotlib or kaleido
        missing, no browser); the figures are then skipped and nothing else is affected.

    Raises
    ------
    ValueError
        If ``backend`` or ``formats`` is invalid (checked before anything is written).
    """
    _check(formats, backend)
    if not figures:
        return [], []
    folder = next(iter(figures)).parent
    if backend == "plotly":
        written: list[Path] = []
        for image_format in formats:
            paths, problems = export_images(
                {stem.with_name(f"{stem.name}.x"): f.plotly for stem, f in figures.items()},
                image_format,  # type: ignore[arg-type]
            )
            if problems:
                return written, problems
            written += paths
        return written, []
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return [], [Problem(folder, "static figures skipped: matplotlib is not installed "
                                    "(pip install matplotlib); the HTML dashboard is complete")]
    from analysis.mpl.figures import save_figure

    written = []
    for stem, figure in figures.items():
        written += save_figure(figure.draw(), stem, formats)
    return written, []
