"""The style both figure backends share: the colour, marker and end label of each trial status,
and the colour of each task of the atlas.

:mod:`analysis.charts` uses the Plotly marker symbols as they are, :mod:`analysis.mpl` maps them
to matplotlib markers; so a trial looks the same in the dashboard and in a paper's PDF.
"""

from __future__ import annotations

from collections.abc import Iterator

import pandas as pd

from ssot.results.trials import COMPLETED, DIVERGED, EARLY_STOPPED, ERRORED, RUNNING, STATUSES

__all__ = ["STATUS_STYLE", "TASK_COLORS", "status_groups", "task_color"]

#: Line colour, marker (Plotly's symbol name) and end label of each trial status in the learning curves.
STATUS_STYLE: dict[str, dict[str, str]] = {
    COMPLETED: {"color": "#1f77b4", "symbol": "circle", "end": ""},
    EARLY_STOPPED: {"color": "#ff7f0e", "symbol": "x", "end": "stopped by ASHA"},
    DIVERGED: {"color": "#d62728", "symbol": "diamond-x", "end": "diverged"},
    ERRORED: {"color": "#7f7f7f", "symbol": "square-x", "end": "errored"},
    RUNNING: {"color": "#2ca02c", "symbol": "triangle-right", "end": "still running"},
}
assert set(STATUS_STYLE) == set(STATUSES)


def status_groups(curves: pd.DataFrame) -> Iterator[tuple[str, dict[str, str], pd.DataFrame, int]]:
    """``(status, style, rows, number of trials)`` of each status present in learning curves
    (:func:`analysis.data.frames.learning_curves`), in the order of :data:`STATUS_STYLE`."""
    for status, style in STATUS_STYLE.items():
        group = curves[curves["status"] == status]
        if len(group):
            yield status, style, group, group["trial_id"].nunique()


#: Colours of the tasks of the atlas, in task order (Plotly's D3 palette, then Tableau's).
TASK_COLORS: tuple[str, ...] = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
                                "#bcbd22", "#17becf", "#4e79a7", "#f28e2b")


def task_color(index: int) -> str:
    """The colour of the ``index``-th task of the atlas."""
    return TASK_COLORS[index % len(TASK_COLORS)]
