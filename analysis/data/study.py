r"""A study's tables for its index page: how far each screen can be trusted, and what the study cost.

**Agreement of the screen with confirmation** (:func:`agreement_table`). A screen ranks configs on
a frozen backbone (a feature cache), one seed each; confirmation trains its top :math:`K` on images
over several seeds. Per task, from the study's record (:attr:`ssot.results.study.StudyRecord.confirmations`):

- **Spearman** :math:`\rho` and **Kendall** :math:`\tau_b` between the screen's order (its rank,
  1 = best) and the confirmed means (:func:`analysis.data.proxy.spearman`,
  :func:`analysis.data.proxy.kendall_tau_b`; NaN with fewer than two configs);
- **where the screen's best landed**: its position among the confirmed means (1 = still the best);
- **regret of the screen's pick**: the confirmed mean of the confirmed pick minus that of the screen's
  best (accuracy points for an accuracy metric): what trusting the screen alone would have cost;
- the **verdict**: ``agree`` when confirmation picked the screen's best; ``disagree`` when it
  picked another config and the regret exceeds the seeds' noise (the standard error of the screen's
  best over its confirmation seeds, :math:`s/\sqrt n`), or when :math:`\tau_b < 0` (the screen's
  order is reversed more than kept); ``within noise`` otherwise; ``one config`` when only one was
  confirmed. A frozen-feature screen can under-rate configs that fine-tuning favours: a
  ``disagree`` says so for that task.

**Cost** (:func:`cost_table`): per stage, the plan's predicted seconds beside the measured wall
seconds of the steps the record holds, and their ratio.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from analysis.data.proxy import kendall_tau_b, spearman
from ssot.results.metrics import DEFAULT_METRIC, metric
from ssot.results.study import STAGES, StudyRecord

__all__ = ["AGREEMENT_COLUMNS", "AGREE", "DISAGREE", "NOISE", "ONE", "agreement_row", "agreement_table", "cost_table"]

AGREE, DISAGREE, NOISE, ONE = "agree", "disagree", "within noise", "one config"
#: Columns of ``agreement.csv``.
AGREEMENT_COLUMNS: tuple[str, ...] = ("task", "n", "spearman", "kendall", "screen_best", "screen_best_position", "pick",
                                      "pick_screen_rank", "regret", "noise", "verdict")


def _number(value: Any) -> float:
    return math.nan if value is None else float(value)


def agreement_row(task: str, candidates: Sequence[Mapping[str, Any]], scale: float = 100.0, mode: str = "max") -> dict[str, Any]:
    """The agreement of one task (module docstring) from its confirmation summary: rows with
    ``trial_id``, ``search_rank``, ``mean``, ``std``, ``seeds`` and ``confirmed``. ``scale`` turns
    the metric's units into the regret's (100: accuracy points); ``mode`` is its direction (a ``min``
    metric's means are negated: higher is better below)."""
    rows = sorted(candidates, key=lambda r: int(r["search_rank"]))
    sign = -1.0 if mode == "min" else 1.0
    means = sign * np.array([_number(r.get("mean")) for r in rows])
    ranks = np.array([int(r["search_rank"]) for r in rows], dtype=float)
    usable = ~np.isnan(means)
    best, pick = rows[0], next((r for r in rows if r.get("confirmed")), rows[0])
    order = sorted(range(len(rows)), key=lambda i: (-means[i] if usable[i] else math.inf, ranks[i]))
    position = order.index(0) + 1
    regret = sign * scale * (_number(pick.get("mean")) - _number(best.get("mean")))
    n_seeds = max(1, len(str(best.get("seeds") or "").split()))
    noise = scale * _number(best.get("std")) / math.sqrt(n_seeds)
    order_score, confirmed = (-ranks[usable]).tolist(), means[usable].tolist()  # the screen's order: its best scores highest
    rho = spearman(order_score, confirmed) if len(confirmed) >= 2 else math.nan
    tau = kendall_tau_b(order_score, confirmed) if len(confirmed) >= 2 else math.nan
    if len(rows) == 1:
        verdict = ONE
    elif pick is best:
        verdict = AGREE
    elif (not math.isnan(regret) and regret > (0.0 if math.isnan(noise) else noise)) or (not math.isnan(tau) and tau < 0):
        verdict = DISAGREE
    else:
        verdict = NOISE
    return {"task": task, "n": len(rows), "spearman": rho, "kendall": tau, "screen_best": str(best["trial_id"]),
            "screen_best_position": position, "pick": str(pick["trial_id"]), "pick_screen_rank": int(pick["search_rank"]),
            "regret": regret, "noise": noise, "verdict": verdict}


def agreement_table(record: StudyRecord) -> pd.DataFrame:
    """:func:`agreement_row` of every task of the study with a confirmation, in the study's order,
    in the units and direction of the study's metric (:mod:`ssot.results.metrics`; accuracies in points)."""
    chosen = metric(str(record.settings.get("metric") or DEFAULT_METRIC))
    scale = 100.0 if chosen.name.endswith("_acc") else 1.0
    rows = [agreement_row(task, record.confirmations[task], scale, chosen.direction or "max")
            for task in record.tasks if record.confirmations.get(task)]
    return pd.DataFrame(rows, columns=list(AGREEMENT_COLUMNS))


def cost_table(record: StudyRecord) -> pd.DataFrame:
    """Per stage (:data:`ssot.results.study.STAGES`) and in all: predicted and measured seconds and
    measured / predicted. A stage not finished yet has no measured value; a stage finished by a
    resumed study counts the time of the run that finished each step (a killed attempt's time is lost)."""
    predicted, measured = record.predicted(), record.measured()
    rows = []
    for stage in STAGES:
        p = sum(v for (_, s), v in predicted.items() if s == stage)
        m = sum(v for (_, s), v in measured.items() if s == stage)
        steps = sum(1 for (_, s) in measured if s == stage)
        rows.append({"stage": stage, "predicted_s": p if predicted else math.nan, "measured_s": m if steps else math.nan})
    table = pd.DataFrame(rows)
    total = {"stage": "total", "predicted_s": table["predicted_s"].sum(min_count=1), "measured_s": table["measured_s"].sum(min_count=1)}
    table = pd.concat([table, pd.DataFrame([total])], ignore_index=True)
    table["ratio"] = table["measured_s"] / table["predicted_s"]
    return table
