"""The HTML of every page: Jinja2 templates in this folder and the one environment that renders them.

Autoescaping is on for every template: a value put into a page (a task or experiment name, a path,
a metric's label, a problem's text) is escaped by the environment, never by the code that passes it.
Markup that is meant as markup says so: the templates' own text, :func:`param_label`'s names of the
known hyperparameters (Plotly's HTML subset), and a fragment rendered by :func:`render` (a
``markupsafe.Markup``, put into another template as it is). Data for a page's script goes through
:func:`script_json`, whose JSON cannot end the ``<script>`` element it is in.

Pages: ``dashboard.html`` (:mod:`analysis.dashboard.page`) and ``atlas.html``
(:mod:`analysis.dashboard.atlas`) extend ``base.html`` (the head, the script-error box); the
sections of the dashboard each have their template, and ``macros.html`` holds the pieces several
share (a plot's container, a table, the warnings box, a section's figures and the script drawing
them). The templates ship in the package (``pyproject.toml``'s package-data).
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import plotly.graph_objects as go
import plotly.io as pio
from jinja2 import Environment, FileSystemLoader, StrictUndefined
from markupsafe import Markup, escape
from plotly.offline import get_plotlyjs

from analysis.charts.style import PARAM_LABELS

__all__ = ["ENV", "render", "script_json", "figures_json", "param_label"]

#: Characters JSON may hold inside a string that could end or open markup in a ``<script>`` element.
_SCRIPT_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "'": "\\u0027"}


def script_json(text: str) -> Markup:
    """JSON text (already serialised) made safe inside a ``<script>`` element: ``<``, ``>``, ``&``
    and ``'`` as their ``\\u`` escapes, which JSON reads back as the same characters (outside
    strings JSON has none of them)."""
    for char, escaped in _SCRIPT_ESCAPES.items():
        text = text.replace(char, escaped)
    return Markup(text)


def to_script(value: Any) -> Markup:
    """``value`` as JSON fit for a ``<script>`` element (the templates' ``tojson``)."""
    return script_json(json.dumps(value))


def figures_json(figures: Mapping[str, go.Figure]) -> Markup:
    """Plotly figures by plot id, as one JSON object fit for a ``<script>`` element."""
    return script_json("{" + ",".join(f"{json.dumps(div_id)}:{pio.to_json(figure, validate=False)}"
                                      for div_id, figure in figures.items()) + "}")


def param_label(param: str) -> Markup:
    """A hyperparameter's display name as markup: a known one's (``λ<sub>OT</sub>``), any other name escaped."""
    return Markup(PARAM_LABELS[param]) if param in PARAM_LABELS else escape(param)


#: The one environment of the project's pages (the study's index page may render its own templates with it).
ENV = Environment(loader=FileSystemLoader(Path(__file__).parent), autoescape=True, undefined=StrictUndefined,
                  trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
ENV.filters["tojson"] = to_script
ENV.filters["param"] = param_label
ENV.globals["plotlyjs"] = lambda: Markup(get_plotlyjs())  # plotly.js itself, inlined: the pages need no network


def render(name: str, **context: Any) -> Markup:
    """The template ``name`` of this folder rendered with ``context``: markup, put as it is into another template."""
    return Markup(ENV.get_template(name).render(**context))
