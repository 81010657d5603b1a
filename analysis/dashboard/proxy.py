"""The dashboard's "screen against end-to-end" block of a screen that replayed a search's configs
(:mod:`analysis.data.proxy`): its figure and its regret table, or nothing for other experiments."""
from __future__ import annotations

import html

import plotly.graph_objects as go

from analysis.charts.proxy import proxy_figure
from analysis.data.proxy import proxy_info, reference_path
from ssot.errors import SSOTError
from ssot.results import discovery
from ssot.results.experiment import Experiment

__all__ = ["proxy_section"]


def proxy_section(experiment: Experiment, key: str) -> tuple[str, dict[str, go.Figure]]:
    """The block's HTML and its figures (plot id -> figure), ``("", {})`` when ``experiment``
    records no reference; a note when the reference cannot be read."""
    where = reference_path(experiment.meta or {})
    if where is None:
        return "", {}
    heading = "<h3>The screen against end-to-end training of the same configs</h3>"
    try:
        found = [e for e in discovery.read_experiments(where) if e.meta is not None and e.trials is not None]
    except (OSError, ValueError, SSOTError) as exc:  # a missing folder, an unreachable store
        found, reason = [], str(exc)
    else:
        reason = "no readable experiment there"
    if len(found) != 1:
        return (f'{heading}<p class="note">The reference {html.escape(where)} cannot be read ({html.escape(reason)}); '
                "python analysis/proxy.py compares them once it can.</p>"), {}
    info = proxy_info(experiment, found[0])
    div_id = f"{key}-proxy"
    rows = "".join(f"<tr><td>top-{k}</td><td>{regret:.1f}</td></tr>" for k, regret in info.regret.items())
    text = (f'{heading}<p class="note">Replayed the configs of {html.escape(where)}: how the screen ranks them against '
            f"their end-to-end accuracy ({info.n} matched; python analysis/proxy.py writes the same as CSV and Markdown). "
            f"Regret: the best end-to-end accuracy minus the best among the screen's top k.</p>"
            f'<div class="plot" id="{div_id}"></div><table class="regret"><tr><th>confirmed</th><th>regret (points)</th></tr>'
            f"{rows}<tr><td>random pick</td><td>{info.random_regret:.1f}</td></tr></table>")
    return text, {div_id: proxy_figure(info, f"{experiment.task}: screen vs end-to-end")}
