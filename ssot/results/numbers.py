"""How the tables and pages write a number: one rule for a missing value and one for a metric.

A missing value (``None``, NaN, infinity, or anything that is not a number) is written as
``missing``: an empty cell in the Markdown tables the commands write (the default), a dash on the
dashboard. A metric's value is a percentage when the metric registry says it is a fraction
(:func:`ssot.results.metrics.is_fraction`: accuracies, MixVal), else four significant digits
(:func:`metric_value`), so ``confirmation.md`` and the dashboard write MixVal the same way.
"""
from __future__ import annotations

import math
from typing import Any

from ssot.results.metrics import is_fraction

__all__ = ["DASH", "finite", "fixed", "significant", "percent", "metric_value", "metric_unit"]


#: A missing value on the dashboard and the atlas (text: the pages' templates escape it).
DASH = "—"


def finite(value: Any) -> float | None:
    """``value`` as a float when it is a finite number, else None."""
    if isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def fixed(value: Any, digits: int = 1, *, missing: str = "", sign: bool = False) -> str:
    """``value`` with ``digits`` decimals (``+`` before a positive one with ``sign``), or
    ``missing`` for a missing value."""
    number = finite(value)
    if number is None:
        return missing
    return f"{number:+.{digits}f}" if sign else f"{number:.{digits}f}"


def significant(value: Any, digits: int = 4, *, missing: str = "") -> str:
    """``value`` to ``digits`` significant digits, or ``missing`` for a missing value."""
    number = finite(value)
    return missing if number is None else f"{number:.{digits}g}"


def percent(fraction: Any, digits: int = 1, *, missing: str = "", unit: str = "") -> str:
    """A fraction in [0, 1] in percent (``0.984`` -> ``98.4``, then ``unit``: ``" %"``), or ``missing``."""
    number = finite(fraction)
    return missing if number is None else f"{100 * number:.{digits}f}{unit}"


def metric_value(name: str, value: Any, digits: int = 1, *, missing: str = "", unit: bool = False) -> str:
    """A value of the metric ``name``: in percent with ``digits`` decimals when the registry says
    it is a fraction (followed by ``" %"`` with ``unit``), else to 4 significant digits; ``missing``
    for a missing value. The unit alone: :func:`metric_unit`."""
    if is_fraction(name):
        return percent(value, digits, missing=missing, unit=metric_unit(name) if unit else "")
    return significant(value, missing=missing)


def metric_unit(name: str) -> str:
    """``" %"`` after a value of a fraction metric written by :func:`metric_value`, else ``""``."""
    return " %" if is_fraction(name) else ""
