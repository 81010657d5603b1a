"""Warm start against cold start: how fast each search comes near the best config a cold search finds.

The searches are read as they ran: their trials in the order they were proposed (``trial_id``
order: a population's member ids sort so, :mod:`tune.members`), each trial's final value of the
search's metric when it reached the last epoch (the best-trial rule's view: an early-stopped or
diverged trial finds nothing). For one task and sampler seed, with the *reference* the best a
cold search of ``n`` trials found (its best trial's value):

- the **best so far** after ``k`` trials: the best final value among the first ``k`` proposed
  (:func:`best_so_far`);
- the **trials needed**: the smallest ``k`` whose best so far is within ``within`` (1 point of
  accuracy by default) of the reference; ``None`` when the search never gets there in its trials
  (censored: "more than its number of trials");
- the **regret after k trials**: the reference minus the best so far, in points (the reference
  itself when no trial reached the last epoch yet), for ``k`` in ``at``.

A warm-started search counts every trial it ran, its sources' best configs included: they are
trials of this task's search that it paid for.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ssot.results.experiment import Experiment

__all__ = ["best_so_far", "trials_needed", "Comparison", "compare"]


def best_so_far(experiment: Experiment) -> np.ndarray:
    """The best final value of the search's metric among its first ``k`` trials, for ``k = 1..n``
    (NaN until a trial reached the last epoch), in the metric's direction."""
    table = experiment.trial_table().sort_values("trial_id", kind="stable")
    values = pd.to_numeric(table[experiment.metric].where(table["reached_final"]), errors="coerce").to_numpy(float)
    sign = -1.0 if (experiment.meta or {}).get("mode") == "min" else 1.0
    running = np.fmax.accumulate(np.where(np.isnan(values), -np.inf, sign * values))
    return np.where(np.isinf(running), np.nan, sign * running)


def trials_needed(curve: np.ndarray, reference: float, within: float) -> int | None:
    """The smallest ``k`` with ``curve[k - 1] >= reference - within`` (None: never)."""
    hit = np.nonzero(np.nan_to_num(curve, nan=-np.inf) >= reference - within - 1e-12)[0]
    return int(hit[0]) + 1 if len(hit) else None


def _regret(curve: np.ndarray, reference: float, k: int) -> float:
    if len(curve) < k:
        return float("nan")
    value = curve[k - 1]
    return 100 * (reference - (value if np.isfinite(value) else 0.0))


@dataclass
class Comparison:
    """Per (task, seed) and per search kind: the trials needed and the regrets (points)."""

    table: pd.DataFrame  # task, seed, kind, n_trials, reference, trials_needed, regret@k ...
    at: tuple[int, ...]
    within: float
    #: (task, seed, kind) -> regret after k = 1..n trials, in points
    curves: dict[tuple[str, int, str], np.ndarray] = field(default_factory=dict)

    def summary(self) -> pd.DataFrame:
        """Per task and kind over seeds: the median trials needed (censored runs counted as their
        number of trials plus one), how many reached the reference, the mean regret at each k."""
        rows = []
        for (task, kind), group in self.table.groupby(["task", "kind"], sort=False):
            needed = group["trials_needed"].fillna(group["n_trials"] + 1)
            rows.append({"task": task, "kind": kind, "seeds": len(group), "reached": int(group["trials_needed"].notna().sum()),
                         "median_trials_needed": float(np.median(needed)),
                         **{f"regret@{k}": float(group[f"regret@{k}"].mean()) for k in self.at}})
        return pd.DataFrame(rows)


def compare(cold: Mapping[tuple[str, int], Experiment], warm: Mapping[tuple[str, int], Experiment], *,
            within: float = 0.01, at: Sequence[int] = (10, 20)) -> Comparison:
    """Cold and warm searches keyed by ``(task, seed)``; each (task, seed) is measured against
    the best value its cold search found (module docstring)."""
    rows, curves = [], {}
    for (task, seed), reference_search in sorted(cold.items()):
        best = reference_search.best_trial()
        reference = float(best[reference_search.metric]) if best is not None else float("nan")
        for kind, search in (("cold", reference_search), ("warm", warm.get((task, seed)))):
            if search is None:
                continue
            curve = best_so_far(search)
            curves[(task, seed, kind)] = 100 * (reference - np.nan_to_num(curve, nan=0.0))
            rows.append({"task": task, "seed": seed, "kind": kind, "n_trials": len(curve), "reference": reference,
                         "trials_needed": trials_needed(curve, reference, within),
                         **{f"regret@{k}": _regret(curve, reference, k) for k in at}})
    table = pd.DataFrame(rows)
    if len(table):
        table["trials_needed"] = table["trials_needed"].astype("Int64")
    return Comparison(table, tuple(at), within, curves)
