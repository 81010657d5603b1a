"""The trial model: the rows of ``trials.csv``, the per-trial table and the best-trial rule.

``trials.csv`` holds one row per (trial, epoch): ``task, trial_id, search``, the hyperparameters,
``epoch``, every metric column of :mod:`ssot.results.metrics`, the trial's final predictions
(:data:`PREDICTIONS_COLUMN`, last epoch only) and the trial's final ``status``
(:data:`STATUSES`) and ``reason``; a trial that recorded no epoch has one row with an empty
``epoch``.

The best-trial rule
-------------------
Among the trials that reached the last epoch (``reached_final``: status ``completed``, or
``running`` at the last epoch), the best is the one with the best *final-epoch* value of the
experiment's selection metric (``metric`` in ``experiment.json``, default ``target_acc``; highest
for a ``max`` metric, lowest for a ``min`` one). Ties (equal values) go to the lowest
``trial_id`` in text order, i.e. the trial created first. Early-stopped trials are left out
(their value is truncated), as are diverged and errored ones. Every consumer (the search's
``best_config.json``, export, confirmation, the summary, the dashboard, the selection report)
applies :func:`best_trial` / :func:`ranked_trials`.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import pandas as pd

from ssot.config import SEARCHED_FIELDS
from ssot.results.metrics import DEFAULT_METRIC, METRIC_COLUMNS, metric

COMPLETED, EARLY_STOPPED, DIVERGED, ERRORED, RUNNING = "completed", "early-stopped", "diverged", "errored", "running"
#: Every status a trial may end with (``trials.csv`` repeats it on each of its rows).
STATUSES: tuple[str, ...] = (COMPLETED, EARLY_STOPPED, DIVERGED, ERRORED, RUNNING)
#: Statuses of trials whose accuracies are real results (diverged and errored ones are not).
USABLE: tuple[str, ...] = (COMPLETED, EARLY_STOPPED, RUNNING)

#: The paper's searched hyperparameters, in display order (a space may add others): the
#: ``searched`` group of :class:`ssot.config.SSOTConfig`.
PARAMS: tuple[str, ...] = SEARCHED_FIELDS
#: A trial's final target predictions (class indices, last epoch only), for the EnsV selector.
PREDICTIONS_COLUMN = "target_pred"
ID_COLUMNS: tuple[str, ...] = ("task", "trial_id", "search")
#: Columns without which the rows of ``trials.csv`` cannot be used.
REQUIRED_COLUMNS: tuple[str, ...] = ("trial_id", "epoch", "target_acc", "status")


def asha_rungs(grace_period: int, reduction_factor: int, max_epochs: int) -> tuple[int, ...]:
    """ASHA's rungs: the epochs ``grace_period * reduction_factor**k`` at which a trial is
    compared with the others (Li et al. 2020; Ray's ``ASHAScheduler`` with ``max_t = max_epochs``,
    ``MAX_RUNGS`` of its bracket ``s = 0``), in increasing order; the last may equal
    ``max_epochs``. ``()`` when ``max_epochs <= grace_period`` (a search then runs no scheduler)
    or the settings are not valid. A search's scheduler, the population trainer's rungs and the
    analysis's rung views all use these epochs."""
    if grace_period < 1 or reduction_factor < 2 or max_epochs <= grace_period:
        return ()
    count = int(math.log(max_epochs / grace_period) / math.log(reduction_factor) + 1)  # Ray's MAX_RUNGS, s = 0
    return tuple(grace_period * reduction_factor**k for k in range(count))


def rung_survivors(count: int, reduction_factor: int) -> int:
    """How many of ``count`` results at a rung go on: the top ``ceil(count / reduction_factor)``,
    at least one (ASHA's rule, Li et al. 2020; a population's rungs keep as many of its members)."""
    return max(1, math.ceil(count / reduction_factor))


def asha_continues(value: float, values: Sequence[float], reduction_factor: int, direction: str) -> bool:
    """Whether a trial whose value at a rung is ``value`` goes on (asynchronous ASHA): it is among
    the top :func:`rung_survivors` of ``values``, every value recorded at that rung so far (its
    own included), ties going on; a value that is not finite never does."""
    if not math.isfinite(value):
        return False
    sign = 1.0 if direction == "max" else -1.0
    ranked = sorted((sign * v for v in values if math.isfinite(v)), reverse=True)
    return sign * value >= ranked[min(rung_survivors(len(values), reduction_factor), len(ranked)) - 1]


def trial_columns(params: list[str] | tuple[str, ...]) -> list[str]:
    """The columns of ``trials.csv`` for an experiment whose trials record ``params``."""
    return [*ID_COLUMNS, *params, "epoch", *METRIC_COLUMNS, PREDICTIONS_COLUMN, "status", "reason"]


def _last_reason(reasons: pd.Series) -> str:
    present = reasons.dropna().astype(str).str.strip()
    present = present[present != ""]
    return str(present.iloc[-1]) if len(present) else ""


def without_placeholders(trials: pd.DataFrame) -> pd.DataFrame:
    """The rows of real epochs: a diverged trial's last row holds a placeholder accuracy (0)."""
    diverged = trials["status"] == DIVERGED
    if not diverged.any():
        return trials
    last = trials.groupby("trial_id", sort=False)["epoch"].transform("max") == trials["epoch"]
    return trials[~(diverged & last)]


def trial_table(trials: pd.DataFrame, max_epochs: int, params: list[str] | tuple[str, ...] = PARAMS) -> pd.DataFrame:
    """One row per trial, built from the per-(trial, epoch) rows of ``trials.csv``.

    Returns
    -------
    pandas.DataFrame
        Sorted by ``trial_id``; columns ``trial_id``, ``params`` (those present), ``status``,
        every metric column at the trial's last recorded epoch, ``reason``, ``n_epochs`` (last
        epoch recorded, 0 for none), ``best_acc`` and ``best_epoch`` (best ``target_acc`` over
        its real epochs), ``reached_final`` (a usable status and ``n_epochs >= max_epochs``)
        and ``final_acc`` (``target_acc`` at the last epoch of a trial that reached it, else NaN).
    """
    params = [p for p in params if p in trials.columns]
    metrics = [m for m in METRIC_COLUMNS if m in trials.columns]
    ordered = trials.sort_values(["trial_id", "epoch"], kind="stable", na_position="first")
    grouped = ordered.groupby("trial_id", sort=True)
    table = ordered.drop_duplicates("trial_id", keep="last").set_index("trial_id").sort_index()[[*params, "status", *metrics]]
    table["reason"] = grouped["reason"].agg(_last_reason) if "reason" in trials else ""
    table["n_epochs"] = grouped["epoch"].max().fillna(0).astype(int)
    valid = without_placeholders(trials).dropna(subset=["epoch", "target_acc"])
    best_rows = valid.loc[valid.groupby("trial_id")["target_acc"].idxmax()].set_index("trial_id")
    table["best_acc"] = best_rows["target_acc"]
    table["best_epoch"] = best_rows["epoch"]
    table["reached_final"] = (table["status"].isin(USABLE) & (table["n_epochs"] >= max(max_epochs, 1))).astype(bool)
    table["final_acc"] = table["target_acc"].where(table["reached_final"])
    return table.reset_index()


def rank(table: pd.DataFrame, column: str, direction: str = "max") -> pd.DataFrame:
    """Rows of ``table`` with a finite ``column``, best first; ties go to the lowest ``trial_id``."""
    values = pd.to_numeric(table[column], errors="coerce")
    keep = table[(values.abs() < math.inf).astype(bool)]  # NaN and infinities compare False
    return keep.sort_values([column, "trial_id"], ascending=[direction == "min", True], kind="stable").reset_index(drop=True)


def ranked_trials(table: pd.DataFrame, metric_name: str = DEFAULT_METRIC) -> pd.DataFrame:
    """The trials that count for the best-trial rule (module docstring), best first."""
    return rank(table[table["reached_final"]], metric_name, metric(metric_name).direction or "max")


def best_trial(table: pd.DataFrame, metric_name: str = DEFAULT_METRIC) -> pd.Series | None:
    """The row of :func:`trial_table` that the best-trial rule picks, or None when no trial counts."""
    ranked = ranked_trials(table, metric_name)
    return ranked.iloc[0] if len(ranked) else None
