"""The optimisation history of a search: every trial's value of the search's metric in trial order,
and the best value so far (as optuna-dashboard's "History" plot).

Trial order is the order of ``trial_id`` (the order in which the search created its trials; the
best-trial rule breaks ties the same way). The best so far follows the best-trial rule
(:func:`ssot.results.trials.best_trial`): after trial ``k`` it is the best final-epoch value among
the first ``k`` trials that reached the last epoch, so that its last value is the value of the
search's best trial; early-stopped, diverged and errored trials are drawn as points (their last
recorded value) but never count.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from analysis.data.experiments import Experiment
from analysis.data.frames import trial_table
from ssot.results import metrics
from ssot.results import trials as trial_model

__all__ = ["HistoryInfo", "history_info"]


@dataclass(frozen=True)
class HistoryInfo:
    """What an optimisation history shows.

    Attributes
    ----------
    frame : pandas.DataFrame
        One row per trial in trial order: ``order`` (1, 2, ...), ``trial_id``, ``status``,
        ``config``, ``value`` (the metric at the trial's last recorded epoch; NaN when it recorded
        none), ``counts`` (the best-trial rule counts it: it reached the last epoch) and
        ``best_so_far`` (NaN before the first trial that counts).
    metric : str
        The search's metric (``experiment.json``'s ``metric``).
    direction : {"max", "min"}
    fraction : bool
        The metric is a fraction in [0, 1] (figures show it in percent).
    best_trial : str or None
        The search's best trial (the one ``experiment.json`` records).
    """

    frame: pd.DataFrame
    metric: str
    direction: str
    fraction: bool
    best_trial: str | None


def history_info(experiment: Experiment, table: pd.DataFrame | None = None) -> HistoryInfo:
    """The optimisation history of ``experiment`` (``table``: its :func:`analysis.data.frames.trial_table`)."""
    table = trial_table(experiment) if table is None else table
    chosen = metrics.metric(experiment.metric)
    direction = chosen.direction or "max"
    rows = trial_model.without_placeholders(experiment.trials)
    if chosen.name in rows:
        values = rows.assign(value=pd.to_numeric(rows[chosen.name], errors="coerce")).dropna(subset=["value"])
        last = values.sort_values(["trial_id", "epoch"], kind="stable").groupby("trial_id")["value"].last()
    else:
        last = pd.Series(dtype=float)
    ordered = table.sort_values("trial_id", kind="stable").reset_index(drop=True)
    frame = pd.DataFrame({
        "order": range(1, len(ordered) + 1), "trial_id": ordered["trial_id"].astype(str),
        "status": ordered["status"], "config": ordered["config"],
        "value": ordered["trial_id"].map(last).astype(float).to_numpy(),
        "counts": ordered["reached_final"].astype(bool).to_numpy(),
    })
    final = pd.to_numeric(ordered[chosen.name], errors="coerce") if chosen.name in ordered else pd.Series(float("nan"), index=ordered.index)
    counted = final.where(frame["counts"]).astype(float)
    running = counted.cummax() if direction == "max" else counted.cummin()
    frame["best_so_far"] = running.ffill().to_numpy()
    best = experiment.best_trial(table)
    return HistoryInfo(frame, chosen.name, direction, chosen.fraction, None if best is None else str(best["trial_id"]))
