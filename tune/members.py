"""The one shape of a search trial: its members, their ids, their params and their per-epoch entries.

Every Ray trial of a search trains P >= 1 configs, its *members* (one
:class:`ssot.population.Population`, run by :mod:`tune.trial`; P is ``--population``, default 1).
This module owns how they travel through Ray (pure data work: no Ray, no torch).

Params
    A trial's params are a full config, its first member's, plus under :data:`MEMBERS_KEY` every
    member's id and the values of its searched fields (:func:`proposal`)::

        {"lambda_ot": 0.1, ..., "members": {"p00-m00-3f2a1b0c": {"lambda_ot": 0.1, ...}, ...}}

    Params without ``members`` (a cell of ``--search grid``: Ray proposes the config itself) are
    one member whose id is the Ray trial's (:func:`members_of`).

Results
    Each epoch a trial reports, under :data:`MEMBERS_KEY`, one *entry* per member that recorded
    the epoch or ended in it: a flat dict of scalars, the result an independent run of that config
    would report (:func:`epoch_entry`, :func:`diverged_entry`: the epoch's metrics, ``diverged``,
    ``reason``, :data:`EARLY_STOPPED_FLAG`, the run's source-only values, and at its last epoch its
    target predictions as text). Ray flattens the nested dict into columns
    ``members/<member id>/<name>`` (``result.json``, ``progress.csv``, its dataframes, the
    trackers); :func:`entries` reads either form. At the top, the trial reports its *lead* entry:
    the epoch's best member under the search's metric (a diverged one last; predictions left out),
    the scalar Ray's scheduler, its tables, the trackers and the printed lines read
    (:func:`report`). With one member, the lead is that member.

Member ids
    ``t<k>`` for the ``k``-th config of a search of one config per trial (the trial and its only
    member share the id), ``p<u>-m<i>`` for member ``i`` of the ``u``-th population
    (:func:`unit_ids`), zero-padded so that ids sort in the order the configs were proposed (the
    best-trial rule's tie-break). They are the search's record's (:mod:`tune.record`): the same
    config keeps its id whatever stopped and resumed the search.

The status a member ends with (``trials.csv``'s, and through :mod:`tune.searcher` the Optuna
trial's state) is :func:`member_status`.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ssot.results.metrics import EPOCH_VALIDATORS, REPORTED_METRICS, worst_value
from ssot.results.numbers import finite
from ssot.results.trials import COMPLETED, DIVERGED, EARLY_STOPPED, ERRORED, PREDICTIONS_COLUMN, RUNNING

#: ``experiment.json``'s ``trial_format`` of a search whose trials have this module's shape and whose
#: record is :mod:`tune.record`; searches started by earlier versions (2: their record was Ray's
#: saved state; none: one trainable per kind of trial) are not resumed.
TRIAL_FORMAT = 3
#: The key of a trial's params (its members' searched values) and of its results (their entries).
MEMBERS_KEY = "members"
#: The separator of Ray's flattened result columns (``members/<id>/<name>``).
SEP = "/"
#: An entry's flag: the member stopped at this epoch, an early-stopping rung.
EARLY_STOPPED_FLAG = "early_stopped"
#: Scalar epoch metrics of an entry (lists and dicts stay in the checkpointed run record).
REPORTED = ("epoch", *REPORTED_METRICS)


# ---------------------------------------------------------------------------- ids and params
def unit_ids(config: int, unit: int, count: int, size: int, total: int) -> tuple[str, list[str]]:
    """The id of a new trial and of its ``count`` members: the ``unit``-th trial of a search of
    ``total`` configs, ``size`` per trial, whose first member is its ``config``-th config (module docstring)."""
    width = max(4, len(str(max(0, total - 1))))
    if size == 1:
        return f"t{config:0{width}d}", [f"t{config:0{width}d}"]
    first = f"p{unit:0{width}d}"
    return first, [f"{first}-m{index:0{max(2, len(str(size - 1)))}d}" for index in range(count)]


def proposal(members: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """A trial's params as a searcher proposes them: its first member's values at the top, every
    member's under :data:`MEMBERS_KEY` (module docstring)."""
    first = next(iter(members.values()))
    return {**first, MEMBERS_KEY: {str(k): dict(v) for k, v in members.items()}}


def members_of(params: Mapping[str, Any], trial_id: str) -> dict[str, dict[str, Any]]:
    """Each member of a trial with its full params (``params`` with the member's searched values);
    params without members are one member, the Ray trial ``trial_id``."""
    shared = {k: v for k, v in params.items() if k != MEMBERS_KEY}
    listed = params.get(MEMBERS_KEY) or {str(trial_id): {}}
    return {str(k): {**shared, **dict(v)} for k, v in listed.items()}


# ---------------------------------------------------------------------------- entries
def epoch_entry(metrics: Mapping[str, Any], record: Mapping[str, Any], *, final: bool) -> dict[str, Any]:
    """A member's entry for an epoch: the scalar metrics :data:`REPORTED` of ``metrics``, the
    run's source-only values from its ``record``, and at the ``final`` epoch its target
    predictions (for the post-hoc EnsV selector)."""
    entry = {k: _number(metrics[k]) for k in REPORTED} | {"diverged": 0, "reason": "", EARLY_STOPPED_FLAG: 0}
    entry |= _source_only(record)
    entry["epoch"] = int(metrics["epoch"])
    if final:
        entry[PREDICTIONS_COLUMN] = " ".join(map(str, record["target_pred"]))
    return entry


def diverged_entry(epoch: int, reason: str, record: Mapping[str, Any] | None) -> dict[str, Any]:
    """A member's entry when it diverged at ``epoch`` (0: in pretraining, no ``record`` values):
    every selectable metric at its worst (finite) value, so that ASHA can cut it and TPE learn
    from it, ``diverged = 1`` and the reason."""
    worst = {v: worst_value(v) for v in ("target_acc", *EPOCH_VALIDATORS)}
    entry = {"epoch": int(epoch), **worst, "diverged": 1, "reason": str(reason), EARLY_STOPPED_FLAG: 0}
    return entry | (_source_only(record) if record and record.get("source_only_target_acc") is not None else {})


def _source_only(record: Mapping[str, Any]) -> dict[str, Any]:
    return {"source_only_target_acc": _number(record["source_only_target_acc"]),
            "source_outlier_share": _number(record["source_outlier_share"])}


def _number(value: Any) -> float:
    """A reported scalar; ``None`` (e.g. no target labels) becomes NaN."""
    return float("nan") if value is None else float(value)


def lead(entries: Mapping[str, Mapping[str, Any]], metric: str, direction: str) -> str | None:
    """The member whose entry leads a report: the best finite ``metric`` (``direction`` ``"max"``
    or ``"min"``), a diverged or valueless member last, ties to the first; None without entries."""
    def rank(item: tuple[int, str]) -> tuple[bool, float, int]:
        position, member = item
        value = finite(entries[member].get(metric))
        usable = value is not None and not entries[member].get("diverged")
        return (not usable, -(value or 0.0) if direction == "max" else (value or 0.0), position)

    ranked = sorted(enumerate(entries), key=rank)
    return ranked[0][1] if ranked else None


def report(entries: Mapping[str, Mapping[str, Any]], metric: str, direction: str) -> dict[str, Any]:
    """What a trial reports to Ray for an epoch (module docstring): its lead entry at the top
    (without predictions) and every member's entry under :data:`MEMBERS_KEY`."""
    top = lead(entries, metric, direction)
    summary = {k: v for k, v in entries[top].items() if k != PREDICTIONS_COLUMN} if top is not None else {}
    return {**summary, MEMBERS_KEY: {str(k): dict(v) for k, v in entries.items()}}


def entries(result: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The member entries of one reported result: nested (what callbacks receive) or flattened by
    Ray into ``members/<id>/<name>`` (what searchers receive, and Ray's dataframes hold, where a
    member absent from a report has NaN in its columns: left out). Epochs and flags as ints."""
    found: dict[str, dict[str, Any]] = {}
    nested = result.get(MEMBERS_KEY)
    if isinstance(nested, Mapping):
        found = {str(k): dict(v) for k, v in nested.items() if isinstance(v, Mapping)}
    prefix = MEMBERS_KEY + SEP
    for key, value in result.items():
        if isinstance(key, str) and key.startswith(prefix):
            member, sep, name = key[len(prefix):].partition(SEP)
            if sep:
                found.setdefault(member, {})[name] = value
    out = {}
    for member, entry in found.items():
        epoch = finite(entry.get("epoch"))
        if epoch is None:  # absent from this report
            continue
        entry["epoch"] = int(epoch)
        for flag in ("diverged", EARLY_STOPPED_FLAG):
            entry[flag] = int(finite(entry.get(flag)) or 0)
        reason = entry.get("reason")
        entry["reason"] = reason if isinstance(reason, str) else ""
        if not isinstance(entry.get(PREDICTIONS_COLUMN), str):
            entry.pop(PREDICTIONS_COLUMN, None)
        out[member] = entry
    return out


def history(results: Iterable[Mapping[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Each member's entries over a trial's ``results`` (oldest first), one per epoch. A report of
    an epoch at or before a member's last one is a restart (a trial restored from an earlier
    checkpoint, or Ray reporting again after a lost node): it replaces the entries from that epoch
    on, which belong to the run that was abandoned, so each member keeps the epochs its final
    state descends from."""
    by_member: dict[str, list[dict[str, Any]]] = {}
    for result in results:
        for member, entry in entries(result).items():
            mine = by_member.setdefault(member, [])
            while mine and mine[-1]["epoch"] >= entry["epoch"]:
                mine.pop()
            mine.append(entry)
    return by_member


# ---------------------------------------------------------------------------- how a member ended
def member_status(entries: list[dict[str, Any]], error: str | None, max_epochs: int, ended: bool) -> tuple[str, str]:
    """A member's status in ``trials.csv`` and its reason, from its ``entries`` (oldest first),
    the error its trial ended with (None: none), the search's last epoch, and whether its trial
    ``ended``: diverged or stopped at a rung by its own entry; completed at the last epoch;
    errored with its trial, unless it had ended before; early-stopped (by ASHA across trials)
    when its trial ended before the last epoch; running otherwise."""
    last = entries[-1] if entries else {}
    if last.get("diverged"):
        return DIVERGED, str(last.get("reason") or "")
    if last.get(EARLY_STOPPED_FLAG):
        return EARLY_STOPPED, ""
    if not ended:
        return RUNNING, ""
    if last and int(last.get("epoch") or 0) >= max_epochs:
        return COMPLETED, ""
    if error is not None:
        return ERRORED, error.strip().splitlines()[-1][:300] if error.strip() else "errored"
    return EARLY_STOPPED, ""
