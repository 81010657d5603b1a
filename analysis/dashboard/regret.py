"""The dashboard's "label-free selection" block of one experiment: the regret of each validator's
pick against the oracle (:mod:`analysis.data.selection`), as explained HTML tables."""
from __future__ import annotations

import html
from collections.abc import Mapping
from typing import Any

import pandas as pd

from analysis.data.selection import RECIPE, epoch_selection, hyperparameter_selection

__all__ = ["regret_html", "recipe_html"]

#: What a validator is, said once above the tables.
_WHAT = ("A validator is a score computed without target labels, from the model's predictions on the unlabelled "
         "target data (and held-out source data), so that a real partial-DA task, whose target has no labels, can "
         "still pick a config with it. Each has a direction: higher or lower is better (column \"better\"). The "
         "oracle picks by target accuracy, which needs the labels; the regret is what a validator's pick costs "
         "against it, in points of target accuracy: 0 is the best a validator can do. Rows are sorted by regret, "
         "best first; the best is highlighted.")

#: One sentence per table.
_EXPLAIN = {
    "hyperparameter": ("Hyperparameter selection: among the {n} completed trials, each validator picks the trial with "
                       "its best value at the final epoch; picked: that trial's target accuracy; oracle: the highest "
                       "final-epoch accuracy; Spearman: rank correlation of the validator (turned so that higher is "
                       "better) with the accuracy over the trials (1: it orders the trials as the accuracy does)."),
    "epoch": ("Epoch selection: within each completed trial, each validator picks one of its epochs; picked and oracle "
              "(the trial's best epoch) are means over the trials; last_epoch is the paper's protocol, the last epoch "
              "whatever it scored; Spearman: the mean rank correlation over a trial's epochs."),
}


def _table(label: str, table: pd.DataFrame) -> str:
    ordered = table.sort_values("regret", kind="stable")
    best = float(ordered["regret"].min())
    marked = ' class="best-row"'
    rows = "".join(
        f"<tr{marked if r.regret == best else ''}><td>{html.escape(str(r.validator))}</td>"
        f"<td>{'higher' if r.direction == 'max' else 'lower'}</td><td>{r.n}</td>"
        f"<td>{100 * r.picked_acc:.1f}</td><td>{100 * r.oracle_acc:.1f}</td><td>{r.regret:.1f}</td>"
        f"<td>{'' if r.spearman != r.spearman else f'{r.spearman:.2f}'}</td></tr>"
        for r in ordered.itertuples())
    n = int(table["n"].max()) if label == "hyperparameter" and len(table) else 0
    return (f"<h4>{label.capitalize()} selection</h4><p class=\"note\">{html.escape(_EXPLAIN[label].format(n=n))}</p>"
            "<table class=\"regret\"><thead><tr><th>validator</th><th>better</th><th>n</th><th>picked acc (%)</th>"
            f"<th>oracle acc (%)</th><th>regret (points)</th><th>Spearman</th></tr></thead><tbody>{rows}</tbody></table>")


def regret_html(meta: Mapping[str, Any], trials: pd.DataFrame) -> str:
    """The dashboard's "label-free selection" block of one experiment: what each validator's pick
    costs against the oracle (hyperparameter and epoch selection), or "" when the experiment
    recorded no validator or has no completed trial."""
    dirs = meta.get("validator_directions") or {}
    parts = [_table(label, table) for label, table in (("hyperparameter", hyperparameter_selection(trials, dirs)),
                                                        ("epoch", epoch_selection(trials, dirs))) if not table.empty]
    if not dirs or not parts:
        return ""
    return ("<h3>Label-free selection: regret against the oracle</h3><p class=\"note\">" + html.escape(_WHAT)
            + " Completed trials only; python analysis/selection.py writes the same as CSV and Markdown.</p>"
            + recipe_html() + "".join(parts))


def recipe_html() -> str:
    """The recommended label-free recipe (:data:`analysis.data.selection.RECIPE`) as a short list."""
    items = "".join(f"<li>{html.escape(line)}</li>" for line in RECIPE.lines)
    return (f"<div class=\"recipe\"><b>Recommended label-free recipe for a new task</b> (its measured regret: "
            f"docs/selection.md)<ol>{items}</ol></div>")
