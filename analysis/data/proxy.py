r"""The proxy, measured: how a screen ranks configs against end-to-end training of the same configs.

A *screen* (a search on a feature cache, often by populations) that replayed the configs of an
end-to-end *reference* search (``tune/search.py --configs-from``; ``experiment.json`` records it
under :data:`ssot.results.experiment.REFERENCE_KEY`) is matched with it config by config (the
values of the reference's sampled hyperparameters, to 9 significant digits). Then:

- the screen's **ranking**: the trials that reached the screen's last epoch first, by the screen's
  selection metric at that epoch (its direction), then the early-stopped ones by the epoch they
  reached and their value there (ASHA's verdict); a diverged trial last;
- the **truth**: the reference trial's target accuracy at its last epoch (completed trials; a
  diverged one counts 0, the worst value a search gives it; an errored one is left out);
- **Spearman** :math:`\rho` and **Kendall** :math:`\tau_b` between the screen's ranking and the
  truth (ties: average ranks);
- the **regret of "top-k of the screen, confirmed"**: the best true accuracy of all matched
  configs minus the best true accuracy among the screen's first ``k`` (``k = 1``: the regret of
  "best of the screen"), in accuracy points; beside it, the regret of a random pick (the best
  minus the mean) as the baseline a screen must beat.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ssot.results import experiment as results_experiment
from ssot.results.experiment import REFERENCE_KEY
from ssot.results.metrics import DEFAULT_METRIC, metric
from ssot.results.trials import DIVERGED, ERRORED, without_placeholders

__all__ = ["DEFAULT_KS", "ProxyInfo", "proxy_info", "spearman", "kendall_tau_b", "reference_path", "summary_table"]

#: The k of "top-k of the screen, confirmed" reported by default.
DEFAULT_KS: tuple[int, ...] = (1, 3, 5)


def _correlation(test: Any, x: Sequence[float], y: Sequence[float]) -> float:
    """``test(x, y).statistic`` (a :mod:`scipy.stats` rank correlation); NaN for fewer than two
    pairs or a constant side."""
    a, b = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if len(a) < 2 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return math.nan
    return float(test(a, b).statistic)


def spearman(x: Sequence[float], y: Sequence[float]) -> float:
    """Spearman's rank correlation (average ranks for ties); NaN for fewer than two pairs or a
    constant side."""
    from scipy import stats

    return _correlation(stats.spearmanr, x, y)


def kendall_tau_b(x: Sequence[float], y: Sequence[float]) -> float:
    r"""Kendall's :math:`\tau_b` (ties in either side corrected); NaN for fewer than two pairs or
    a constant side."""
    from scipy import stats

    return _correlation(stats.kendalltau, x, y)


@dataclass
class ProxyInfo:
    """A screen against its reference (module docstring).

    Attributes
    ----------
    task, screen, reference : the task and the two experiments' names (or paths).
    metric : the screen's selection metric (its ranking).
    pairs : one row per matched config, in the screen's order: ``screen_trial``, ``reference_trial``,
        the hyperparameters, ``screen_epochs``, ``screen_value``, ``screen_position`` (1 = the
        screen's best), ``true_acc``.
    spearman, kendall : rank correlations between the screen's order and the truth.
    regret : ``k`` -> regret (points) of the best true accuracy among the screen's first ``k``.
    random_regret : the best true accuracy minus the mean (points): the regret of a random pick.
    best_acc : the best true accuracy of the matched configs.
    unmatched : configs of the screen without a usable reference trial (or the reverse).
    """

    task: str
    screen: str
    reference: str
    metric: str
    pairs: pd.DataFrame
    spearman: float
    kendall: float
    regret: dict[int, float] = field(default_factory=dict)
    random_regret: float = math.nan
    best_acc: float = math.nan
    unmatched: int = 0

    @property
    def n(self) -> int:
        return len(self.pairs)


def _key(row: Mapping[str, Any], params: Sequence[str]) -> tuple:
    return tuple(float(f"{float(row[p]):.9g}") for p in params)


def _truth(reference: results_experiment.Experiment) -> pd.DataFrame:
    """One row per reference trial with a true accuracy (module docstring)."""
    table = reference.trial_table()
    completed = table[table["reached_final"]].assign(true_acc=lambda t: t["final_acc"])
    diverged = table[table["status"] == DIVERGED].assign(true_acc=0.0)
    return pd.concat([completed, diverged]).reset_index(drop=True)


def screen_order(screen: results_experiment.Experiment) -> pd.DataFrame:
    """The screen's trials in its ranking order (module docstring), with ``screen_value`` and
    ``screen_epochs``; errored trials are left out."""
    table = screen.trial_table()
    chosen = metric(screen.metric or DEFAULT_METRIC)
    trials = without_placeholders(screen.trials)
    last = trials.dropna(subset=["epoch"]).sort_values(["trial_id", "epoch"]).groupby("trial_id").tail(1).set_index("trial_id")
    table = table[table["status"] != ERRORED].copy()
    table["screen_epochs"] = table["trial_id"].map(last["epoch"]).fillna(0)
    table["screen_value"] = pd.to_numeric(table["trial_id"].map(last[chosen.name]), errors="coerce")
    sign = -1.0 if chosen.direction == "max" else 1.0
    table["_value"] = (sign * table["screen_value"]).fillna(math.inf)
    table["_diverged"] = table["status"] == DIVERGED
    table = table.sort_values(["_diverged", "screen_epochs", "_value", "trial_id"], ascending=[True, False, True, True],
                              kind="stable")
    return table.drop(columns=["_value", "_diverged"]).reset_index(drop=True)


def proxy_info(screen: results_experiment.Experiment, reference: results_experiment.Experiment,
               ks: Iterable[int] = DEFAULT_KS) -> ProxyInfo:
    """Compare ``screen`` with its ``reference`` (module docstring)."""
    params = [p for p, spec in ((reference.meta or {}).get("space") or {}).items() if spec.get("type") in ("loguniform", "choice")]
    truth = _truth(reference)
    by_key = {_key(r, params): r for _, r in truth.iterrows()}
    order = screen_order(screen)
    rows = []
    for _, r in order.iterrows():
        match = by_key.pop(_key(r, params), None)
        if match is None:
            continue
        rows.append({"screen_trial": r["trial_id"], "reference_trial": match["trial_id"], **{p: r[p] for p in params},
                     "screen_epochs": int(r["screen_epochs"]), "screen_value": r["screen_value"], "true_acc": float(match["true_acc"])})
    pairs = pd.DataFrame(rows, columns=["screen_trial", "reference_trial", *params, "screen_epochs", "screen_value", "true_acc"])
    pairs.insert(len(pairs.columns) - 1, "screen_position", np.arange(1, len(pairs) + 1))
    unmatched = (len(order) - len(pairs)) + len(by_key)
    info = ProxyInfo(task=reference.task, screen=screen.name, reference=reference.name, metric=screen.metric,
                     pairs=pairs, spearman=math.nan, kendall=math.nan, unmatched=unmatched)
    if pairs.empty:
        return info
    truth_acc = pairs["true_acc"].to_numpy()
    # the screen's order as a score: its ties (same epochs and value) share a rank
    score = -pairs.groupby(["screen_epochs", "screen_value"], dropna=False, sort=False)["screen_position"].transform("min").to_numpy()
    info.spearman, info.kendall = spearman(score, truth_acc), kendall_tau_b(score, truth_acc)
    info.best_acc = float(truth_acc.max())
    info.random_regret = 100 * (info.best_acc - float(truth_acc.mean()))
    info.regret = {k: 100 * (info.best_acc - float(truth_acc[:k].max())) for k in ks if k >= 1}
    return info


def reference_path(meta: Mapping[str, Any]) -> str | None:
    """The path of the experiment a screen replayed (``experiment.json``'s reference), or None."""
    reference = meta.get(REFERENCE_KEY) if meta else None
    return str(reference["path"]) if isinstance(reference, Mapping) and reference.get("path") else None


def summary_table(infos: Sequence[ProxyInfo], ks: Sequence[int] = DEFAULT_KS) -> pd.DataFrame:
    """One row per screen (task, screen, reference, n, Spearman, Kendall, the regrets), by task,
    each task's screens followed (when it has several) by their mean (``screen = "mean"``)."""
    rows = [{"task": i.task, "screen": i.screen, "reference": i.reference, "n": i.n, "spearman": i.spearman,
             "kendall": i.kendall, **{f"regret_top{k}": i.regret.get(k, math.nan) for k in ks},
             "regret_random": i.random_regret, "best_acc": 100 * i.best_acc} for i in infos]
    table = pd.DataFrame(rows)
    if table.empty:
        return table
    means = []
    for task, group in table.groupby("task", sort=False):
        if len(group) > 1:
            numeric = group.drop(columns=["task", "screen", "reference"]).mean(numeric_only=True)
            means.append({"task": task, "screen": "mean", "reference": f"{len(group)} screens", **numeric.to_dict()})
    table = pd.concat([table, pd.DataFrame(means)], ignore_index=True) if means else table
    mean_last = (table["screen"] == "mean").astype(int)
    return table.assign(_m=mean_last).sort_values(["task", "_m", "screen"], kind="stable").drop(columns="_m").reset_index(drop=True)
