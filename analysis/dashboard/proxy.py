"""The dashboard's "screen against end-to-end" block of a screen that replayed a search's configs
(:mod:`analysis.data.proxy`): its figure and its regret table, or nothing for other experiments."""
from __future__ import annotations

import plotly.graph_objects as go
from markupsafe import Markup

from analysis.charts.proxy import proxy_figure
from analysis.dashboard.templates import render
from analysis.data.proxy import proxy_info, reference_path
from ssot.errors import SSOTError
from ssot.results import discovery
from ssot.results.experiment import Experiment

__all__ = ["proxy_section"]


def proxy_section(experiment: Experiment, key: str) -> tuple[Markup | str, dict[str, go.Figure]]:
    """The block's HTML (``templates/proxy.html``) and its figures (plot id -> figure), ``("", {})``
    when ``experiment`` records no reference; a note when the reference cannot be read."""
    where = reference_path(experiment.meta or {})
    if where is None:
        return "", {}
    try:
        found = [e for e in discovery.read_experiments(where) if e.meta is not None and e.trials is not None]
    except (OSError, ValueError, SSOTError) as exc:  # a missing folder, an unreachable store
        found, reason = [], str(exc)
    else:
        reason = "no readable experiment there"
    if len(found) != 1:
        return render("proxy.html", where=where, reason=reason, info=None), {}
    info = proxy_info(experiment, found[0])
    div_id = f"{key}-proxy"
    return (render("proxy.html", where=where, info=info, div_id=div_id),
            {div_id: proxy_figure(info, f"{experiment.task}: screen vs end-to-end")})
