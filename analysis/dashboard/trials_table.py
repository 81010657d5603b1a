"""The dashboard's table of every trial of an experiment: sortable, and linked to the plots.

One row per trial (its id, status, hyperparameters, epochs, final and best accuracy in percent,
the search's metric when it is not the accuracy, why it ended). Clicking a column header sorts
the rows by it (again: the other way); clicking a row selects the trial: the row is highlighted and
every figure of the experiment that can (the optimisation history, the learning curves, the
heatmaps and the parallel coordinates, :func:`analysis.charts.style.add_marks`) marks it; the
selection is kept in the URL (``&trial=ID``). Clicking a point of the optimisation history selects
its row. The script is the page's own (``templates/dashboard.js``), no external library.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import pandas as pd
from markupsafe import Markup

from analysis.dashboard.templates import param_label, render
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


class _Cell(NamedTuple):
    text: str
    sort: str | None = None  # data-sort: what the column sorts by
    css: str = ""


def trials_table_html(experiment: Experiment, table: pd.DataFrame, key: str, best_trial: str | None) -> Markup:
    """The table of ``experiment``'s trials (``table``: its trial table; ``key``: its section key;
    ``best_trial``: the search's best trial, starred)."""
    params = [p for p, spec in experiment.space.items() if spec.searched and p in table]
    metric = experiment.metric
    columns: list[tuple[str | Markup, str]] = [("trial", "text"), ("status", "text")]
    columns += [(param_label(p), "num") for p in params]
    columns += [("epochs", "num"), ("final acc (%)", "num"), ("best acc (%)", "num")]
    if metric != DEFAULT_METRIC and metric in table:
        columns.append((f"final {metric}", "num"))
    columns.append(("ended because", "text"))
    rows = []
    for row in table.sort_values("trial_id", kind="stable").to_dict("records"):
        trial = str(row["trial_id"])
        cells = [_Cell(f"{trial}{' ★' if trial == best_trial else ''}", trial),
                 _Cell(str(row["status"]), str(row["status"]), f"status {row['status']}")]
        cells += [_Cell(format_value(row[p]), _sort_key(row[p])) for p in params]
        cells.append(_Cell(str(int(row["n_epochs"])), _sort_key(row["n_epochs"])))
        for column in ("final_acc", "best_acc"):
            text = format_metric(DEFAULT_METRIC, row[column]).removesuffix(" %")
            cells.append(_Cell(text, _sort_key(100 * float(row[column])) if pd.notna(row[column]) else ""))
        if metric != DEFAULT_METRIC and metric in table:
            value = row[metric] if row["reached_final"] else math.nan
            cells.append(_Cell(format_metric(metric, value), _sort_key(value)))
        cells.append(_Cell(str(row.get("reason") or ""), str(row.get("reason") or "")))
        rows.append({"trial": trial, "cells": cells})
    caption = (f"Every trial ({len(rows)}). Click a column header to sort by it (again to reverse); click a row to mark "
               "the trial on the optimisation history, the learning curves, the heatmaps and the parallel coordinates "
               f"(a pink outline); ★: the search's best trial. Accuracies in percent; final: at epoch {experiment.max_epochs} "
               "(empty for a trial that stopped before).")
    return render("trials_table.html", caption=caption, key=key, columns=columns, rows=rows)
