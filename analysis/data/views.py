"""The views of an experiment: which trials a figure uses, and which accuracy of each.

Every figure of the dashboard is drawn under one *view* (a key of this module's vocabulary):

``"final"``
    the trials that reached the last epoch, scored by their final-epoch accuracy
    (:func:`analysis.data.frames.final_results`);
``"best"``
    every completed, early-stopped or running trial, scored by the best accuracy it reached;
``"epoch<R>"`` (e.g. ``"epoch5"``), one per ASHA rung ``R`` below the last epoch
    every trial that recorded epoch ``R``, scored by its accuracy *at epoch R*, whatever happened
    to it later (ASHA compared exactly these values at that rung). This compares trials at one
    common budget instead of mixing 5-epoch and 15-epoch values.

ASHA's rungs (Li et al. 2020) are the epochs ``r = grace_period * reduction_factor**k``,
``k = 0, 1, ..., K - 1`` with ``K = int(log(max_t / grace_period) / log(reduction_factor) + 1)``,
as Ray's ``ASHAScheduler`` (one bracket) computes them; ``tune/`` records ``early_stop``,
``grace_period``, ``reduction_factor`` and ``max_epochs`` (= ``max_t``) in ``experiment.json``.
For older folders that do not record them, the rungs are the epochs at which early-stopped trials
stopped.

The default view (:func:`default_view`) is ``"final"``, the view of the tables (the cross-task
table, ``best_config.json`` and the best-trial rule all use the final epoch); only a search whose
trials have not reached the last epoch yet (still running) opens on its highest rung that has
trials. The rung views stay one click away.

Trust in early stopping: :func:`rung_correlations` gives, per rung, the Spearman rank correlation
between the trials' value at that rung and at the final epoch, among the trials that reached both
(DeepCAVE's budget correlation; :func:`correlation_strength` names it in DeepCAVE's words).

References
----------
L. Li, K. Jamieson, A. Rostamizadeh, E. Gonina, J. Ben-tzur, M. Hardt, B. Recht, A. Talwalkar.
"A System for Massively Parallel Hyperparameter Tuning". MLSys 2020.
R. Sass, E. Bergman, A. Biedenkapp, F. Hutter, M. Lindauer. "DeepCAVE: An Interactive Analysis
Tool for Automated Machine Learning". ReALML workshop at ICML 2022 (its budget-correlation plugin).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import pandas as pd

from analysis.data.experiments import Experiment
from analysis.data.frames import MODE_LABELS, final_results
from ssot.results import trials as trial_model

__all__ = [
    "View",
    "asha_rungs",
    "rung_epochs",
    "epoch_results",
    "view_results",
    "view_label",
    "view_subtitle",
    "experiment_views",
    "default_view",
    "half_view",
]

_EPOCH_VIEW = re.compile(r"^epoch(\d+)$")


@dataclass(frozen=True)
class View:
    """One view of an experiment.

    Attributes
    ----------
    key : str
        ``"final"``, ``"best"`` or ``"epoch<R>"``.
    label : str
        How figures name it (:func:`view_label`).
    n_trials : int
        Trials in the view.
    epoch : int or None
        The epoch whose accuracy the view uses (None for ``"best"``).
    """

    key: str
    label: str
    n_trials: int
    epoch: int | None = None

    @property
    def short(self) -> str:
        """The selector's text, e.g. ``"epoch 5 (20 trials)"``."""
        names = {"final": f"final epoch {self.epoch}", "best": "best reached"}
        return f"{names.get(self.key, f'epoch {self.epoch}')} ({self.n_trials} trials)"


def view_label(key: str) -> str:
    """How figures name the view ``key``.

    Raises
    ------
    ValueError
        If ``key`` is not ``"final"``, ``"best"`` or ``"epoch<R>"``.
    """
    if key in MODE_LABELS:
        return MODE_LABELS[key]
    match = _EPOCH_VIEW.match(str(key))
    if match is None:
        raise ValueError(
            f"The 'view' parameter must be 'final', 'best' or 'epoch<R>'. Got {key!r} instead."
        )
    return f"accuracy at epoch {int(match.group(1))} (every trial that reached it, an ASHA rung)"


def view_subtitle(key: str, n_trials: int) -> str:
    """The subtitle every figure of a view carries: the view and its number of trials."""
    return f"{view_label(key)}; {n_trials} trials"


def asha_rungs(meta: dict[str, Any]) -> tuple[int, ...] | None:
    """ASHA's rungs recorded by a search's settings, or None when they are not recorded.

    Returns
    -------
    tuple of int or None
        The rungs in increasing order (the last one may equal ``max_epochs``); ``()`` when the
        search ran without ASHA (``early_stop`` false, or ``max_epochs <= grace_period``, where
        ``tune/`` uses no scheduler); None when ``experiment.json`` lacks the settings.
    """
    if "early_stop" not in meta:
        return None
    if not meta.get("early_stop"):
        return ()
    try:
        grace, factor, max_t = int(meta["grace_period"]), int(meta["reduction_factor"]), int(meta["max_epochs"])
    except (KeyError, TypeError, ValueError):
        return None
    return trial_model.asha_rungs(grace, factor, max_t)


def rung_epochs(experiment: Experiment, table: pd.DataFrame) -> tuple[int, ...]:
    """The rungs below the last epoch (the last epoch itself is the final-epoch view).

    From the recorded scheduler settings (:func:`asha_rungs`); for folders that do not record
    them, the epochs at which early-stopped trials stopped.
    """
    rungs = asha_rungs(experiment.meta)
    if rungs is None:
        stopped = table.loc[table["status"] == trial_model.EARLY_STOPPED, "n_epochs"]
        rungs = tuple(sorted({int(e) for e in stopped if e > 0}))
    return tuple(r for r in rungs if r < experiment.max_epochs)


def epoch_results(experiment: Experiment, table: pd.DataFrame, epoch: int) -> pd.DataFrame:
    """Every trial that recorded ``epoch``, with its accuracy at that epoch as ``acc``.

    Parameters
    ----------
    experiment : Experiment
        Its per-(trial, epoch) rows give the accuracies.
    table : pandas.DataFrame
        :func:`analysis.data.frames.trial_table` of the experiment.
    epoch : int

    Returns
    -------
    pandas.DataFrame
        The rows of ``table`` of those trials, with ``acc``, highest first, ties to the lowest
        ``trial_id`` (:func:`ssot.results.trials.rank`). A diverged trial's placeholder epoch does not
        count as reached.
    """
    rows = trial_model.without_placeholders(experiment.trials)
    at = rows[(rows["epoch"] == epoch)].dropna(subset=["target_acc"])
    values = at.drop_duplicates("trial_id", keep="last").set_index("trial_id")["target_acc"]
    selected = table[table["trial_id"].isin(values.index)]
    return trial_model.rank(selected.assign(acc=selected["trial_id"].map(values).to_numpy()), "acc")


def view_results(experiment: Experiment, table: pd.DataFrame, key: str) -> pd.DataFrame:
    """The trials of view ``key`` with their accuracy ``acc`` (see the module docstring)."""
    if key in MODE_LABELS:
        return final_results(table, key)
    view_label(key)  # validates the key
    return epoch_results(experiment, table, int(key.removeprefix("epoch")))


def experiment_views(
    experiment: Experiment, table: pd.DataFrame
) -> tuple[list[View], dict[str, pd.DataFrame]]:
    """The views of an experiment (rungs in increasing epoch, then final, then best) and the
    trials of each (:func:`view_results`)."""
    keys = [f"epoch{r}" for r in rung_epochs(experiment, table)] + ["final", "best"]
    results = {key: view_results(experiment, table, key) for key in keys}
    epochs = {"final": experiment.max_epochs, "best": None}
    views = [
        View(key, view_label(key), len(results[key]), epochs.get(key, _epoch_of(key)))
        for key in keys
    ]
    return views, results


def _epoch_of(key: str) -> int | None:
    match = _EPOCH_VIEW.match(key)
    return int(match.group(1)) if match else None


def half_view(views: list[View], n_trials: int) -> str:
    """The highest ASHA rung (the final epoch counting as the last) that at least half of the
    ``n_trials`` trials reached: the view on which tasks are compared at one budget with most of
    their trials (the atlas's default, :mod:`analysis.data.atlas`); ``"final"`` without rungs.

    Parameters
    ----------
    views : list of View
        From :func:`experiment_views`.
    n_trials : int
        Every trial of the experiment (the ``table`` rows, whatever their status).
    """
    ladder = [v for v in views if v.key.startswith("epoch")]
    if not ladder:
        return "final"
    ladder += [v for v in views if v.key == "final"]
    reached = [v for v in ladder if 2 * v.n_trials >= n_trials and v.n_trials > 0]
    return reached[-1].key if reached else ladder[0].key


def default_view(views: list[View]) -> str:
    """The view a dashboard opens on: ``"final"`` (the tables' view) when a trial reached the last
    epoch; otherwise (a search still running) its highest rung that has a trial, else ``"best"``.

    Parameters
    ----------
    views : list of View
        From :func:`experiment_views`.
    """
    counts = {v.key: v.n_trials for v in views}
    if counts.get("final", 0) > 0 or not views:
        return "final"
    rungs = [v for v in views if v.key.startswith("epoch") and v.n_trials > 0]
    return rungs[-1].key if rungs else "best"


