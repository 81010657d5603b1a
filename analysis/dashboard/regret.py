"""The dashboard's "label-free selection" block of one experiment: the regret of each validator's
pick against the oracle (:mod:`analysis.data.selection`), as an HTML table."""
from __future__ import annotations

import html
from collections.abc import Mapping
from typing import Any

import pandas as pd

from analysis.data.selection import RECIPE, epoch_selection, hyperparameter_selection

__all__ = ["regret_html", "recipe_html"]


def regret_html(meta: Mapping[str, Any], trials: pd.DataFrame) -> str:
    """The dashboard's "label-free selection" block of one experiment: what each validator's pick
    costs against the oracle (hyperparameter and epoch selection), or "" when the experiment
    recorded no validator or has no completed trial."""
    dirs = meta.get("validator_directions") or {}
    parts = []
    for label, table in (("hyperparameter", hyperparameter_selection(trials, dirs)),
                         ("epoch", epoch_selection(trials, dirs))):
        if table.empty:
            continue
        rows = "".join(
            f"<tr><td>{html.escape(str(r.validator))}</td><td>{html.escape(str(r.direction))}</td><td>{r.n}</td>"
            f"<td>{100 * r.picked_acc:.1f}</td><td>{100 * r.oracle_acc:.1f}</td><td>{r.regret:.1f}</td>"
            f"<td>{'' if r.spearman != r.spearman else f'{r.spearman:.2f}'}</td></tr>"
            for r in table.sort_values("regret").itertuples())
        parts.append(f"<h4>{label} selection</h4><table class=\"regret\"><tr><th>validator</th><th>better</th>"
                     f"<th>n</th><th>picked acc. (%)</th><th>oracle (%)</th><th>regret (points)</th>"
                     f"<th>Spearman</th></tr>{rows}</table>")
    if not dirs or not parts:
        return ""
    return ("<h3>Label-free selection: regret against the oracle</h3><p class=\"note\">What each validator's "
            "choice would cost in target accuracy against picking by target labels (completed trials only; "
            "python analysis/selection.py writes the same as CSV and Markdown).</p>" + recipe_html() + "".join(parts))


def recipe_html() -> str:
    """The recommended label-free recipe (:data:`analysis.data.selection.RECIPE`) as a short list."""
    items = "".join(f"<li>{html.escape(line)}</li>" for line in RECIPE.lines)
    return (f"<div class=\"recipe\"><b>Recommended label-free recipe for a new task</b> (its measured regret: "
            f"docs/selection.md)<ol>{items}</ol></div>")

