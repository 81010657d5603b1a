"""The budget of a search, so that searches of different budgets are never compared as equals.

A search's budget (:class:`Budget`) is what it was allowed to spend: the trials it planned
(``num_samples``, times the grid's cells for a grid search), the epochs of a trial
(``max_epochs``), whether ASHA stopped trials early, and the space it searched. Two searches shown
side by side (two tasks in the cross-task table, two searches of one task) whose budgets differ in
any of these are labelled so wherever they are compared (:func:`budget_differences`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from analysis.data.experiments import Experiment
from analysis.data.frames import format_value
from analysis.data.views import asha_rungs

__all__ = ["Budget", "BUDGET_FIELDS", "search_budget", "space_text", "budget_differences"]

#: The fields of a budget, in the order the page names them, with their names.
BUDGET_FIELDS: dict[str, str] = {
    "trials": "trials planned (num_samples)",
    "max_epochs": "epochs per trial (max_epochs)",
    "early_stop": "early stopping",
    "space": "searched space",
}


@dataclass(frozen=True)
class Budget:
    """What a search was allowed to spend.

    Attributes
    ----------
    trials : int or None
        Trials planned: ``num_samples`` of ``experiment.json`` times the number of grid cells of a
        grid search; None when not recorded.
    max_epochs : int
    early_stop : str
        ``"off"``, ``"ASHA (grace period G, reduction factor F)"`` or ``"not recorded"``.
    space : str
        The searched space in short (:func:`space_text`).
    """

    trials: int | None
    max_epochs: int
    early_stop: str
    space: str

    def field_text(self, name: str) -> str:
        """One field as the page writes it."""
        value = getattr(self, name)
        if name == "trials":
            return "?" if value is None else str(value)
        return str(value)

    def text(self) -> str:
        """E.g. ``"20 trials x 15 epochs, ASHA (grace period 5, reduction factor 3)"``."""
        trials = "? trials" if self.trials is None else f"{self.trials} trials"
        return f"{trials} × {self.max_epochs} epochs, early stopping {self.early_stop}"


def _spec_text(spec: Mapping[str, Any]) -> str:
    kind = spec.get("type")
    if kind == "loguniform":
        return f"log [{format_value(spec.get('low'))}, {format_value(spec.get('high'))}]"
    if kind in ("choice", "grid"):
        values = ", ".join(format_value(v) for v in spec.get("values") or [])
        return f"{'grid' if kind == 'grid' else 'one of'} {{{values}}}"
    if kind == "fixed":
        return f"= {format_value(spec.get('value'))}"
    return str(dict(spec))


def space_text(space: Mapping[str, Any] | None) -> str:
    """A space of ``experiment.json`` in short: ``"lambda_ot log [0.001, 10]; ...; potential_width
    one of {64, 128}"``; ``"not recorded"`` for none."""
    if not space:
        return "not recorded"
    return "; ".join(f"{name} {_spec_text(spec) if isinstance(spec, Mapping) else spec}" for name, spec in space.items())


def _grid_cells(space: Mapping[str, Any]) -> int:
    return math.prod(len(spec.get("values") or []) or 1 for spec in space.values()
                     if isinstance(spec, Mapping) and spec.get("type") == "grid")


def search_budget(experiment: Experiment) -> Budget:
    """The budget ``experiment.json`` records for ``experiment``."""
    meta = experiment.meta or {}
    raw = meta.get("space")
    space: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
    samples = meta.get("num_samples")
    trials = int(samples) * _grid_cells(space) if isinstance(samples, (int, float)) and math.isfinite(samples) else None
    rungs = asha_rungs(meta)
    if rungs is None:
        early = "not recorded"
    elif not rungs:
        early = "off"
    else:
        early = f"ASHA (grace period {meta.get('grace_period')}, reduction factor {meta.get('reduction_factor')})"
    return Budget(trials, experiment.max_epochs, early, space_text(space))


def budget_differences(experiments: Sequence[Experiment]) -> dict[str, dict[str, list[str]]]:
    """The budget fields in which ``experiments`` differ.

    Returns
    -------
    dict
        For each field of :data:`BUDGET_FIELDS` whose value is not the same for every experiment:
        each value's text -> the keys (``task/name``) of the experiments that have it, in the
        experiments' order. Empty when all share one budget (or fewer than two are given).
    """
    budgets = [(e.key, search_budget(e)) for e in experiments]
    out: dict[str, dict[str, list[str]]] = {}
    for name in BUDGET_FIELDS:
        values: dict[str, list[str]] = {}
        for key, budget in budgets:
            values.setdefault(budget.field_text(name), []).append(key)
        if len(values) > 1:
            out[name] = values
    return out
