"""The dashboard's "can early stopping be trusted?" block of one experiment: the rank correlation
between each ASHA rung and the final epoch (:func:`analysis.data.rungs.rung_correlations`, the
atlas's too), as a small table with a sentence on what it means."""

from __future__ import annotations

import math

import pandas as pd
from markupsafe import Markup

from analysis.dashboard.templates import render
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


def rungs_html(experiment: Experiment, table: pd.DataFrame) -> Markup:
    """The block's HTML (``templates/rungs.html``) for ``experiment`` and its trial ``table``
    (:func:`analysis.data.frames.trial_table`)."""
    correlations = rung_correlations(experiment, table)
    what = ("an ASHA rung (an epoch at which the scheduler compared trials and stopped the worse ones)"
            if correlations and correlations[0].asha
            else "each epoch (this search stopped no trial early: the table says from which epoch it could have)")
    rows = [{"rung": c.rung, "n": c.n, "strength": c.strength, "verdict": _verdict(c),
             "rho_text": f"{c.rho:.2f}" if math.isfinite(c.rho) else "",
             "interval": f"[{c.low:.2f}, {c.high:.2f}]" if math.isfinite(c.rho) else ""} for c in correlations]
    return render("rungs.html", correlations=rows, what=what, max_epochs=experiment.max_epochs, min_trials=MIN_RUNG_TRIALS)
