"""The members of a population trial: their ids, their per-epoch results, and one result per member.

A population (:mod:`ssot.population`, run by :mod:`tune.population`) is one Ray trial that trains
P configs. Its params carry the members (:data:`MEMBERS_KEY`: ``[{"trial_id", "params"}, ...]``,
proposed by the search's Optuna study); each epoch it reports one result whose
:data:`MEMBERS_COLUMN` holds, as JSON, one entry per member that recorded this epoch or ended in
it: exactly the result an independent trial of that config would report
(:func:`tune.trainable.epoch_result`, :func:`tune.trainable.diverged_result`), plus its
``trial_id`` and ``early_stopped = 1`` on the last epoch of a member stopped at a rung.

:func:`expand` turns such trials into one result per member, so that the search's tidy files
(``trials.csv``: one row per member and epoch) are built by the same code as for independent
trials (:func:`tune.outputs.trial_frame`). Pure results work: no Ray, no torch.
"""
from __future__ import annotations

import json
import math
from collections.abc import Iterable
from types import SimpleNamespace
from typing import Any

import pandas as pd

#: The key of a population trial's params holding its members.
MEMBERS_KEY = "_members"
#: The column of a population trial's results holding its members' entries (JSON).
MEMBERS_COLUMN = "members"
#: An entry's flag: the member stopped at this epoch, an ASHA rung of the population.
EARLY_STOPPED_FLAG = "early_stopped"


def member_id(trial_id: str, population: int, populations: int, index: int, size: int) -> str:
    """The trial id of member ``index`` (of ``size``) of the ``population``-th population (of
    ``populations``, counted from 0 in the order they were proposed), which is the Ray trial
    ``trial_id``: ``p<population>-m<index>-<trial_id>``, zero-padded, so that ids sort by
    population, then by member: the order the configs were proposed (the best-trial rule's
    tie-break, the lowest id, is then the config proposed first)."""
    return f"p{population:0{_digits(populations)}d}-m{index:0{_digits(size)}d}-{trial_id}"


def _digits(count: int) -> int:
    return max(2, len(str(max(0, count - 1))))


def encode(entries: list[dict[str, Any]]) -> str:
    """The :data:`MEMBERS_COLUMN` value of a population's result (NaN is written as ``NaN``)."""
    return json.dumps(entries)


def decode(text: Any) -> list[dict[str, Any]]:
    """The entries of a :data:`MEMBERS_COLUMN` value (none for a missing one)."""
    if not isinstance(text, str) or not text:
        return []
    return list(json.loads(text))


def is_population(params: dict[str, Any] | None) -> bool:
    """Whether a trial's params are those of a population."""
    return bool(params) and bool(params.get(MEMBERS_KEY))


def _ended(entries: list[dict[str, Any]], max_epochs: int) -> bool:
    if not entries:
        return False
    last = entries[-1]
    return bool(last.get("diverged")) or bool(last.get(EARLY_STOPPED_FLAG)) or int(last.get("epoch") or 0) >= max_epochs


def expand(results: Iterable[Any], max_epochs: int) -> list[Any]:
    """``results`` (Ray's results, or objects with the same ``config``, ``metrics``,
    ``metrics_dataframe``, ``error`` and ``path``) with every population trial replaced by one
    result per member, in member order.

    A member's entries are deduplicated by epoch (a population restored from its checkpoint
    reports again the epochs after it: the last report of each epoch is kept), so each member's
    epochs appear once. A member inherits the population's error only if it had not
    ended (completed, early-stopped or diverged) before it.
    """
    out: list[Any] = []
    for result in results:
        params = result.config or {}
        if not is_population(params):
            out.append(result)
            continue
        history = result.metrics_dataframe if result.metrics_dataframe is not None else pd.DataFrame()
        rows = history[MEMBERS_COLUMN].tolist() if MEMBERS_COLUMN in history else []
        entries: dict[str, dict[int, dict[str, Any]]] = {}  # member -> epoch -> its last entry
        for text in rows:
            for entry in decode(text):
                entries.setdefault(str(entry["trial_id"]), {})[int(entry.get("epoch") or 0)] = entry
        constants = {k: v for k, v in params.items() if k != MEMBERS_KEY}
        for member in params[MEMBERS_KEY]:
            mine = [e for _, e in sorted(entries.get(str(member["trial_id"]), {}).items())]
            error = None if _ended(mine, max_epochs) else result.error
            out.append(SimpleNamespace(config={**constants, **member["params"]}, metrics={"trial_id": member["trial_id"]},
                                       path=f"{result.path}/{member['trial_id']}", error=error,
                                       metrics_dataframe=pd.DataFrame(mine)))
    return out


def best_value(entries: list[dict[str, Any]], metric: str, direction: str, worst: float) -> float:
    """The best ``metric`` among the members' entries of an epoch (``worst`` when none has a
    finite one): the scalar a population reports to Ray under the search's metric."""
    values = [float(e[metric]) for e in entries if not e.get("diverged") and isinstance(e.get(metric), (int, float))
              and math.isfinite(float(e[metric]))]
    if not values:
        return worst
    return max(values) if direction == "max" else min(values)
