"""Tidy frames computed from experiments: the data behind every figure, without any drawing.

The pipeline is ``load_experiments`` -> :func:`trial_table` (one row per trial) ->
:func:`final_results` (one accuracy per trial, under an explicit ``mode``) ->
:func:`analysis.data.bins.heatmap_info` (cells of a pair of hyperparameters). The figure builders
(:mod:`analysis.charts`, :mod:`analysis.mpl`) only draw these.

Early-stopped and diverged trials are never mixed silently with completed ones: ``mode="final"``
(the default) keeps the trials that reached the last epoch and scores them by their final-epoch
accuracy; ``mode="best"`` also keeps early-stopped (and still running) trials and scores every
trial by the best accuracy it reached. Diverged and errored trials are in neither.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np
import pandas as pd

from analysis.data.experiments import Experiment, ParamSpec
from ssot.results import numbers
from ssot.results import trials as trial_model
from ssot.results.paper import paper_row

__all__ = [
    "Mode",
    "MODES",
    "MODE_LABELS",
    "trial_table",
    "final_results",
    "best_trial",
    "learning_curves",
    "source_only_accuracy",
    "param_pairs",
    "format_value",
    "format_percent",
    "format_metric",
    "format_config",
    "curves_subtitle",
    "cross_task_table",
]

Mode = Literal["final", "best"]
MODES: tuple[Mode, ...] = ("final", "best")

#: How each mode is named on figures and in the dashboard.
MODE_LABELS: dict[Mode, str] = {
    "final": "final-epoch accuracy (trials that reached the last epoch)",
    "best": "best accuracy reached (includes early-stopped trials)",
}


def format_value(value: Any) -> str:
    """Format a hyperparameter value compactly: ``0.001``, ``1``, ``10``, ``0.316``, ``256``."""
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        number = float(value)
        if not math.isfinite(number):
            return str(number)
        if number.is_integer() and abs(number) < 1e6:
            return str(int(number))
        return f"{number:.3g}"
    return str(value)


def format_percent(fraction: Any, digits: int = 1) -> str:
    """A fraction in [0, 1] as a percentage, ``"98.4 %"``; ``"—"`` for a missing value. The
    dashboard writes every accuracy so (or as a bare number under a heading ending in "(%)")."""
    return numbers.percent(fraction, digits, missing=numbers.DASH, unit=" %")


def format_metric(name: str, value: Any, digits: int = 1) -> str:
    """A value of the metric ``name`` as the dashboard writes it: a fraction metric of the registry
    (:func:`ssot.results.metrics.is_fraction`: accuracies, MixVal) in percent
    (:func:`ssot.results.numbers.metric_value`), any other to 4 significant digits; ``"—"`` for a missing value."""
    return numbers.metric_value(name, value, digits, missing=numbers.DASH, unit=True)


def format_config(row: Mapping[str, Any], params: Sequence[str]) -> str:
    """Return ``"lambda_ot=1, lambda_ent=0.1, ..."`` for the given parameters of ``row``."""
    return ", ".join(f"{p}={format_value(row[p])}" for p in params if p in row)


# --------------------------------------------------------------------------------------------
# Trials
# --------------------------------------------------------------------------------------------


def trial_table(experiment: Experiment) -> pd.DataFrame:
    """One row per trial of an experiment: :func:`ssot.results.trials.trial_table`, plus labels.

    Returns
    -------
    pandas.DataFrame
        Columns: ``experiment`` (its key), ``task``, then those of
        :func:`ssot.results.trials.trial_table` (``trial_id``, the hyperparameters, ``status``,
        ``reason``, ``n_epochs``, final metrics, ``best_acc``, ``best_epoch``,
        ``reached_final``, ``final_acc``), then ``config`` (the hyperparameters as text). A trial
        that recorded no epoch has ``n_epochs`` 0 and NaN accuracies.
    """
    params = list(experiment.space)
    rows = experiment.trials
    if len(experiment.unstarted):
        rows = pd.concat([rows, experiment.unstarted], ignore_index=True) if len(rows) else experiment.unstarted
    table = trial_model.trial_table(rows, experiment.max_epochs, params)
    table["reason"] = table["reason"].fillna("").astype(str)
    table["config"] = [format_config(row, params) for row in table[params].to_dict("records")]
    table.insert(0, "task", experiment.task)
    table.insert(0, "experiment", experiment.key)
    return table


def final_results(table: pd.DataFrame, mode: Mode = "final") -> pd.DataFrame:
    """Select the trials that count under ``mode`` and give each one accuracy, ``acc``.

    Parameters
    ----------
    table : pandas.DataFrame
        The output of :func:`trial_table`.
    mode : {"final", "best"}
        ``"final"``: trials that reached the last epoch, scored by their final-epoch accuracy.
        ``"best"``: every completed, early-stopped or still running trial, scored by the best
        accuracy it reached. Diverged and errored trials are left out in both.

    Returns
    -------
    pandas.DataFrame
        The selected rows of ``table`` with an added column ``acc``, highest first; ties go to
        the lowest ``trial_id`` (:func:`ssot.results.trials.rank`).

    Raises
    ------
    ValueError
        If ``mode`` is not ``"final"`` or ``"best"``.
    """
    if mode == "final":
        selected = table[table["reached_final"]].assign(acc=lambda t: t["final_acc"])
    elif mode == "best":
        selected = table[table["status"].isin(trial_model.USABLE)].assign(acc=lambda t: t["best_acc"])
    else:
        raise ValueError(
            f"The 'mode' parameter must be one of {list(MODES)}. Got {mode!r} instead."
        )
    return trial_model.rank(selected, "acc")


def best_trial(experiment: Experiment, table: pd.DataFrame | None = None) -> pd.Series | None:
    """The trial of ``best_config.json`` (:meth:`ssot.results.experiment.Experiment.best_trial`: the
    one ``experiment.json`` records), its row of ``table`` when given."""
    return experiment.best_trial(trial_table(experiment) if table is None else table)


def learning_curves(experiment: Experiment) -> pd.DataFrame:
    """Target accuracy per epoch for every trial, ready to draw.

    Returns
    -------
    pandas.DataFrame
        Columns ``trial_id``, ``epoch``, ``target_acc``, ``status``, ``config`` and ``is_last``
        (the trial's last real epoch, where an ASHA stop or a divergence is marked). The
        placeholder row of a diverged trial is dropped.
    """
    params = list(experiment.space)
    curves = trial_model.without_placeholders(experiment.trials).dropna(subset=["target_acc"])
    curves = curves.sort_values(["trial_id", "epoch"])
    configs = {
        row["trial_id"]: format_config(row, params)
        for row in curves.groupby("trial_id")[params].first().reset_index().to_dict("records")
    }
    out = curves[["trial_id", "epoch", "target_acc", "status"]].copy()
    out["config"] = out["trial_id"].map(configs)
    out["is_last"] = ~out["trial_id"].duplicated(keep="last")
    return out.reset_index(drop=True)


def curves_subtitle(curves: pd.DataFrame) -> str:
    """The learning curves' subtitle, with their number of trials (both backends draw it)."""
    n_trials = curves["trial_id"].nunique() if len(curves) else 0
    return f"target accuracy per epoch of every trial ({n_trials}); markers: where a trial stopped"


def source_only_accuracy(experiment: Experiment) -> float | None:
    """Target accuracy before adaptation (the median of ``source_only_target_acc``), if recorded.

    ``tune/`` may add this optional column to ``trials.csv``: the accuracy of the
    source-pretrained model on the target, the baseline that adaptation must beat.
    """
    if "source_only_target_acc" not in experiment.trials:
        return None
    values = pd.to_numeric(experiment.trials["source_only_target_acc"], errors="coerce").dropna()
    return float(values.median()) if len(values) else None


def param_pairs(space: Mapping[str, ParamSpec]) -> list[tuple[str, str]]:
    """Every pair of searched parameters, the paper's ``(lambda_ot, lambda_ent)`` first."""
    searched = [p for p, s in space.items() if s.searched]
    pairs = [(a, b) for i, a in enumerate(searched) for b in searched[i + 1 :]]
    paper = ("lambda_ot", "lambda_ent")
    return sorted(pairs, key=lambda pair: pair != paper)



def cross_task_table(
    experiments: Sequence[Experiment], paper: pd.DataFrame | None = None
) -> pd.DataFrame:
    """The best accuracy of each experiment beside the paper's (all accuracies in percent).

    Returns
    -------
    pandas.DataFrame
        One row per experiment: ``experiment``, ``task``, ``dataset``, ``name``, ``search``,
        ``status``, the number of trials per status (``n_completed``, ``n_early-stopped``, ...),
        ``best_final`` and ``best_reached`` (%, NaN when no trial qualifies), ``best_trial``
        (of ``best_final``), ``source_only`` (our accuracy before adaptation, % or NaN),
        ``paper_ssot``, ``delta`` (``best_final - paper_ssot``),
        ``paper_source_only``, ``best_other_method``, ``best_other``.
    """
    paper = paper if paper is not None else pd.DataFrame()
    rows = []
    for experiment in experiments:
        table = trial_table(experiment)
        best = final_results(table, "best")
        counts = table["status"].value_counts()
        reported = paper_row(paper, experiment.task)
        row: dict[str, Any] = {
            "experiment": experiment.key, "task": experiment.task,
            "dataset": experiment.dataset or reported["dataset"], "name": experiment.name,
            "search": experiment.search, "status": experiment.status, "n_trials": len(table),
        }
        row.update({f"n_{status}": int(counts.get(status, 0)) for status in trial_model.STATUSES})
        chosen = best_trial(experiment, table)
        row["best_final"] = 100 * chosen["target_acc"] if chosen is not None else np.nan
        row["best_reached"] = 100 * best["acc"].iloc[0] if len(best) else np.nan
        row["best_trial"] = str(chosen["trial_id"]) if chosen is not None else ""
        source_only = source_only_accuracy(experiment)
        row["source_only"] = 100 * source_only if source_only is not None else np.nan
        row["paper_ssot"] = reported["ssot_acc"]
        row["delta"] = row["best_final"] - row["paper_ssot"]
        row["paper_source_only"] = reported["source_only_acc"]
        row["best_other_method"] = reported["best_other_method"]
        row["best_other"] = reported["best_other_acc"]
        rows.append(row)
    return pd.DataFrame(rows)

