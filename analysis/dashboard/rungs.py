"""The dashboard's "can early stopping be trusted?" block of one experiment: the rank correlation
between each ASHA rung and the final epoch (:func:`analysis.data.rungs.rung_correlations`, the
atlas's too), as a small table with a sentence on what it means."""

from __future__ import annotations

import html
import math

import pandas as pd

from analysis.data.experiments import Experiment
from analysis.data.rungs import MIN_RUNG_TRIALS, VERY_STRONG, RungCorrelation, rung_correlations

__all__ = ["rungs_html"]


def _verdict(c: RungCorrelation) -> str:
    """What one rung's correlation says about the trials ASHA stopped there (or could have)."""
    if not math.isfinite(c.rho):
        return f"epoch {c.rung}: {c.note or 'no correlation'}"
    head = f"epoch {c.rung}: ρ = {c.rho:.2f} [{c.low:.2f}, {c.high:.2f}] ({c.strength}, n = {c.n}): "
    stopped = f"the trials ASHA stopped at epoch {c.rung}" if c.asha else f"trials stopped at epoch {c.rung}"
    if c.rho >= VERY_STRONG:
        return head + f"ranking trials there keeps the final epoch's order, so {stopped} would most likely have ended behind"
    if c.rho >= 0.4:
        return (head + "the epoch mostly keeps the final epoch's order, but not reliably: a trial stopped there could "
                "have ended among the best (a larger --grace-period, or --no-early-stop, would show it)")
    return (head + f"epoch {c.rung} ranks trials unlike the final epoch, so stopping there may well lose the trials that "
            "would have ended best (a larger --grace-period, or --no-early-stop, avoids it)")


def rungs_html(experiment: Experiment, table: pd.DataFrame) -> str:
    """The block's HTML for ``experiment`` and its trial ``table`` (:func:`analysis.data.frames.trial_table`)."""
    correlations = rung_correlations(experiment, table)
    heading = "<h3>Can early stopping be trusted? Rung against final epoch</h3>"
    if not correlations:
        return f'{heading}<p class="note">The search ran a single epoch: there is no earlier epoch to compare.</p>'
    body = "".join(
        f"<tr><td>{c.rung}</td><td>{c.n}</td><td>{'' if not math.isfinite(c.rho) else f'{c.rho:.2f}'}</td>"
        f"<td>{'' if not math.isfinite(c.rho) else f'[{c.low:.2f}, {c.high:.2f}]'}</td><td>{html.escape(c.strength)}</td></tr>"
        for c in correlations
    )
    what = ("an ASHA rung (an epoch at which the scheduler compared trials and stopped the worse ones)" if correlations[0].asha
            else "each epoch (this search stopped no trial early: the table says from which epoch it could have)")
    explain = (f"Spearman's rank correlation ρ between each trial's target accuracy at {what} and at the final epoch "
               f"({experiment.max_epochs}), among the n trials that reached both (at least {MIN_RUNG_TRIALS}), with its 95 % "
               "interval. DeepCAVE reads ρ ≥ 0.7 as a very strong relationship: the rung then ranks trials as the final "
               "epoch would, and stopping there loses little. Under ASHA the n trials are those it let through, the "
               "better ones; over such a narrow set a rank correlation tends to be lower than over all trials, so a low "
               "ρ here is a warning rather than a proof.")
    verdicts = "".join(f"<li>{html.escape(_verdict(c))}</li>" for c in correlations)
    return (f'{heading}<p class="note">{explain}</p><table class="rungs"><thead><tr><th>epoch</th>'
            "<th>n (trials at it and at the final epoch)</th><th>Spearman ρ</th><th>95 % interval</th><th>DeepCAVE reads</th>"
            f'</tr></thead><tbody>{body}</tbody></table><ul class="note verdicts">{verdicts}</ul>')
