"""The dashboard's table of every trial of an experiment: sortable, and linked to the plots.

One row per trial (its id, status, hyperparameters, epochs, final and best accuracy in percent,
the search's metric when it is not the accuracy, why it ended). Clicking a column header sorts
the rows by it (again: the other way); clicking a row selects the trial: the row is highlighted and
every figure of the experiment that can (the optimisation history, the learning curves, the
heatmaps and the parallel coordinates, :func:`analysis.charts.style.add_marks`) marks it; the
selection is kept in the URL (``&trial=ID``). Clicking a point of the optimisation history selects
its row. The script is the page's own (:mod:`analysis.dashboard.template`), no external library.
"""

from __future__ import annotations

import html
import math
from typing import Any

import pandas as pd

from analysis.charts.style import param_label
from analysis.data.experiments import Experiment
from analysis.data.frames import format_metric, format_value
from ssot.results.metrics import DEFAULT_METRIC

__all__ = ["trials_table_html"]


def _sort_key(value: Any) -> str:
    """A cell's ``data-sort``: a number as text (sorted numerically), ``""`` for a missing one."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return ""
    return repr(number) if math.isfinite(number) else ""


def _cell(text: str, sort: str | None = None, css: str = "") -> str:
    attributes = (f' data-sort="{html.escape(sort)}"' if sort is not None else "") + (f' class="{css}"' if css else "")
    return f"<td{attributes}>{text}</td>"


def trials_table_html(experiment: Experiment, table: pd.DataFrame, key: str, best_trial: str | None) -> str:
    """The table of ``experiment``'s trials (``table``: its trial table; ``key``: its section key;
    ``best_trial``: the search's best trial, starred)."""
    params = [p for p, spec in experiment.space.items() if spec.searched and p in table]
    metric = experiment.metric
    columns: list[tuple[str, str]] = [("trial", "text"), ("status", "text")]
    columns += [(param_label(p), "num") for p in params]
    columns += [("epochs", "num"), ("final acc (%)", "num"), ("best acc (%)", "num")]
    if metric != DEFAULT_METRIC and metric in table:
        columns.append((f"final {metric}", "num"))
    columns.append(("ended because", "text"))
    head = "".join(f'<th data-type="{kind}" title="click to sort">{label}</th>' for label, kind in columns)
    rows = []
    for row in table.sort_values("trial_id", kind="stable").to_dict("records"):
        trial = str(row["trial_id"])
        star = " ★" if trial == best_trial else ""
        cells = [_cell(f"{html.escape(trial)}{star}", trial), _cell(html.escape(str(row["status"])), str(row["status"]),
                                                                  f"status {row['status']}")]
        cells += [_cell(html.escape(format_value(row[p])), _sort_key(row[p])) for p in params]
        cells.append(_cell(str(int(row["n_epochs"])), _sort_key(row["n_epochs"])))
        for column in ("final_acc", "best_acc"):
            text = format_metric(DEFAULT_METRIC, row[column]).removesuffix(" %")
            cells.append(_cell(text, _sort_key(100 * float(row[column])) if pd.notna(row[column]) else ""))
        if metric != DEFAULT_METRIC and metric in table:
            value = row[metric] if row["reached_final"] else math.nan
            cells.append(_cell(format_metric(metric, value), _sort_key(value)))
        cells.append(_cell(html.escape(str(row.get("reason") or "")), str(row.get("reason") or "")))
        rows.append(f'<tr class="trial-row" data-trial="{html.escape(trial)}">{"".join(cells)}</tr>')
    caption = (f"Every trial ({len(rows)}). Click a column header to sort by it (again to reverse); click a row to mark "
               "the trial on the optimisation history, the learning curves, the heatmaps and the parallel coordinates "
               f"(a pink outline); ★: the search's best trial. Accuracies in percent; final: at epoch {experiment.max_epochs} "
               "(empty for a trial that stopped before).")
    return (f'<p class="note">{html.escape(caption)}</p><div class="table-wrap"><table class="trials sortable" '
            f'data-key="{key}"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table></div>')
