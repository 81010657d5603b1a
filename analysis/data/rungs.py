"""Trust in early stopping: how well a trial's accuracy at a rung ranks it at the final epoch.

ASHA stops a trial at a rung ``r`` when its accuracy there ranks low among the trials that
reached ``r``; that is sound when the ranking at ``r`` predicts the ranking at the last epoch.
For each rung ``r`` below the last epoch, this module gives Spearman's rank correlation between
the accuracy at epoch ``r`` and at the last epoch, over the ``n`` trials that recorded both (the
trials that reached the last epoch), with the 95 % interval of :func:`analysis.data.effects.rank_interval`.

The words are DeepCAVE's (its budget-correlation plugin): a correlation of at least 0.7 is *very
strong*, 0.4 *strong*, 0.3 *moderate*, 0.2 *weak*, below *not given* (:func:`strength`). It is
not computed on fewer than :data:`MIN_RUNG_TRIALS` trials.

The rungs are ASHA's (:func:`analysis.data.views.rung_epochs`) when the search stopped trials
early; a search without early stopping gets every epoch below the last, which says from which
epoch on early stopping could have been trusted on that task. Under ASHA, the trials that
reached the last epoch are those it promoted at every rung: the correlation is measured on the
better part of the range only (a restricted range), and says nothing of the trials it stopped.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import pandas as pd

from analysis.data.effects import RankCorrelation, rank_correlation
from analysis.data.experiments import Experiment
from analysis.data.frames import final_results
from analysis.data.views import epoch_results, rung_epochs

__all__ = ["MIN_RUNG_TRIALS", "VERY_STRONG", "STRENGTHS", "RungCorrelation", "strength", "rung_correlations", "rungs_frame"]

#: Fewest trials a rung correlation is computed on.
MIN_RUNG_TRIALS = 5
#: DeepCAVE's threshold of a very strong correlation.
VERY_STRONG = 0.7
#: DeepCAVE's words, from the strongest: (lowest correlation, word).
STRENGTHS: tuple[tuple[float, str], ...] = ((0.7, "very strong"), (0.4, "strong"), (0.3, "moderate"), (0.2, "weak"))


def strength(rho: float) -> str:
    """DeepCAVE's word for a rank correlation (``"not given"`` below 0.2, ``""`` for NaN)."""
    if not math.isfinite(rho):
        return ""
    return next((word for low, word in STRENGTHS if rho >= low), "not given")


@dataclass(frozen=True, kw_only=True)
class RungCorrelation(RankCorrelation):
    """The rank correlation (:class:`analysis.data.effects.RankCorrelation`) between the accuracy
    at one rung and at the last epoch, over the trials that recorded both.

    Attributes
    ----------
    rung : int
        The epoch of the rung.
    final_epoch : int
        The last epoch.
    asha : bool
        Whether ``rung`` is one of the search's ASHA rungs (else any epoch of a search run
        without early stopping).
    """

    rung: int
    final_epoch: int
    asha: bool

    @property
    def very_strong(self) -> bool:
        return bool(self.rho >= VERY_STRONG)

    @property
    def strength(self) -> str:
        return strength(self.rho)


def rung_correlations(experiment: Experiment, table: pd.DataFrame) -> list[RungCorrelation]:
    """The correlation of every rung of ``experiment`` with its last epoch (module docstring).

    Parameters
    ----------
    experiment : Experiment
    table : pandas.DataFrame
        Its :func:`analysis.data.frames.trial_table`.
    """
    final_epoch = experiment.max_epochs
    rungs = rung_epochs(experiment, table)
    asha = bool(rungs)
    epochs = rungs if asha else tuple(range(1, final_epoch))
    final = final_results(table, "final").set_index("trial_id")["acc"]
    out = []
    for rung in epochs:
        at = epoch_results(experiment, table, rung).set_index("trial_id")["acc"]
        both = pd.concat([at.rename("rung"), final.rename("final")], axis=1, join="inner").dropna()
        n = len(both)
        if n < MIN_RUNG_TRIALS:
            note = f"not computed: {n} trial(s) reached epoch {rung} and the last epoch (at least {MIN_RUNG_TRIALS} needed)"
            out.append(RungCorrelation(rung=rung, final_epoch=final_epoch, asha=asha, n=n, note=note))
            continue
        if both["rung"].nunique() < 2 or both["final"].nunique() < 2:
            out.append(RungCorrelation(rung=rung, final_epoch=final_epoch, asha=asha, n=n,
                                       note="undefined: the accuracies are all equal"))
            continue
        rho, low, high = rank_correlation(both["rung"], both["final"])
        out.append(RungCorrelation(rung=rung, final_epoch=final_epoch, asha=asha, n=n, rho=rho, low=low, high=high))
    return out


def rungs_frame(correlations: Mapping[str, list[RungCorrelation]]) -> pd.DataFrame:
    """The rung correlations of every task, one row per (task, rung): ``task``, ``rung``,
    ``final_epoch``, ``n``, ``rho``, ``low``, ``high``, ``strength``, ``very_strong``, ``asha``, ``note``."""
    rows = [{"task": task, "rung": c.rung, "final_epoch": c.final_epoch, "n": c.n, "rho": c.rho, "low": c.low,
             "high": c.high, "strength": c.strength, "very_strong": c.very_strong, "asha": c.asha, "note": c.note}
            for task, items in correlations.items() for c in items]
    return pd.DataFrame(rows, columns=["task", "rung", "final_epoch", "n", "rho", "low", "high", "strength", "very_strong",
                                       "asha", "note"])
