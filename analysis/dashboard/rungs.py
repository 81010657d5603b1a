"""The dashboard's "can early stopping be trusted?" block of one experiment: the rank correlation
between each ASHA rung and the final epoch (:func:`analysis.data.views.rung_correlations`), as a
small table with a sentence on what it means."""

from __future__ import annotations

import html
import math

from analysis.data.experiments import Experiment
from analysis.data.views import STRONG_CORRELATION, correlation_strength, rung_correlations

__all__ = ["rungs_html"]

#: Below this many trials reaching both a rung and the final epoch, a rank correlation says little.
FEW = 5


def _verdict(rung: int, n: int, rho: float) -> str:
    """What one rung's correlation says about the trials ASHA stopped there."""
    if n < 3 or not math.isfinite(rho):
        return f"epoch {rung}: too few trials reached both it and the last epoch ({n}) to say how well it ranks them"
    head = f"epoch {rung}: ρ = {rho:.2f} ({correlation_strength(rho)}, n = {n}): "
    few = f"; only {n} trials, so this is a rough indication" if n < FEW else ""
    if rho >= STRONG_CORRELATION:
        return (head + "ranking trials there keeps the final epoch's order, so the trials ASHA stopped at epoch "
                f"{rung} would most likely have ended behind{few}")
    if rho >= 0.4:
        return (head + "the rung mostly keeps the final epoch's order, but not reliably: a trial stopped there could "
                f"have ended among the best (a larger --grace-period, or --no-early-stop, would show it){few}")
    return (head + f"epoch {rung} ranks trials unlike the final epoch, so ASHA may well have stopped the trials that "
            f"would have ended best (a larger --grace-period, or --no-early-stop, avoids it){few}")


def rungs_html(experiment: Experiment) -> str:
    """The block's HTML: a note when the search had no ASHA rung, else the table and its reading."""
    rows = rung_correlations(experiment)
    heading = "<h3>Can early stopping be trusted? Rung against final epoch</h3>"
    if rows.empty:
        return (f'{heading}<p class="note">No ASHA rung: every trial of this search was run to its last epoch '
                "(or the search recorded no scheduler), so there is no early stop to check.</p>")
    body = "".join(
        f"<tr><td>{int(r.rung)}</td><td>{int(r.n)}</td>"
        f"<td>{'' if not math.isfinite(r.spearman) else f'{r.spearman:.2f}'}</td>"
        f"<td>{html.escape(correlation_strength(r.spearman))}</td></tr>"
        for r in rows.itertuples()
    )
    metric = html.escape(experiment.metric)
    explain = (f"Spearman's rank correlation ρ between each trial's {metric} at an ASHA rung (an epoch at which the "
               f"scheduler compared trials and stopped the worse ones) and at the final epoch ({experiment.max_epochs}), "
               "among the n trials that reached both. DeepCAVE reads ρ ≥ 0.7 as a very strong relationship: the rung "
               "then ranks trials as the final epoch would, and stopping there loses little. The n trials are those "
               "ASHA let through, the better ones; over such a narrow set a rank correlation tends to be lower than "
               "over all trials, so a low ρ here is a warning rather than a proof.")
    verdicts = "".join(f"<li>{html.escape(_verdict(int(r.rung), int(r.n), float(r.spearman)))}</li>" for r in rows.itertuples())
    return (f'{heading}<p class="note">{explain}</p><table class="rungs"><thead><tr><th>rung (epoch)</th>'
            "<th>n (trials at the rung and the final epoch)</th><th>Spearman ρ</th><th>DeepCAVE reads</th></tr></thead>"
            f'<tbody>{body}</tbody></table><ul class="note verdicts">{verdicts}</ul>')
