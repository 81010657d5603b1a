"""The dashboard's "label-free selection" block of one experiment: the regret of each validator's
pick against the oracle (:mod:`analysis.data.selection`), as explained HTML tables."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd
from markupsafe import Markup

from analysis.dashboard.templates import render
from analysis.data.selection import RECIPE, epoch_selection, hyperparameter_selection

__all__ = ["regret_html"]

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


def _table(label: str, table: pd.DataFrame) -> dict[str, Any]:
    """One table of ``templates/regret.html``: rows sorted by regret, the best marked."""
    n = int(table["n"].max()) if label == "hyperparameter" and len(table) else 0
    return {"label": label, "explain": _EXPLAIN[label].format(n=n), "best": float(table["regret"].min()),
            "rows": list(table.sort_values("regret", kind="stable").itertuples())}


def regret_html(meta: Mapping[str, Any], trials: pd.DataFrame) -> Markup | str:
    """The dashboard's "label-free selection" block of one experiment: what each validator's pick
    costs against the oracle (hyperparameter and epoch selection), with the recommended label-free
    recipe (:data:`analysis.data.selection.RECIPE`), or "" when the experiment recorded no validator
    or has no completed trial."""
    dirs = meta.get("validator_directions") or {}
    tables = [_table(label, table) for label, table in (("hyperparameter", hyperparameter_selection(trials, dirs)),
                                                         ("epoch", epoch_selection(trials, dirs))) if not table.empty]
    if not dirs or not tables:
        return ""
    return render("regret.html", what=_WHAT, recipe=RECIPE.lines, tables=tables)
