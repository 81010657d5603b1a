"""An experiment's tidy outputs, from its trials' results: ``trials.csv``, ``best_config.json``, the summary.

:func:`trial_frame` is the one place that turns trials' results (:class:`TrialHistory`: what each
trial reported, in :mod:`tune.members`' format) into the rows of ``trials.csv``, one per member
and epoch: the live files of a running search and its final files are built by it alike, from the
search's record (:meth:`tune.record.Record.trials`).

Pure results work (no Ray import, no training): the format itself and the best-trial rule are
owned by :mod:`ssot.results`; files are written through :mod:`ssot.results.storage`.
"""
from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from ssot import cli
from ssot.config import SSOTConfig
from ssot.results import storage
from ssot.results import trials as trial_model
from ssot.results.experiment import BEST_CONFIG_FILE, FINISHED, hyperparameters, now, read_experiment, write_experiment
from ssot.results.metrics import DEFAULT_METRIC, METRIC_COLUMNS, metric
from ssot.results.trials import ERRORED, PREDICTIONS_COLUMN, RUNNING, trial_columns
from tune import members
from tune.mps import describe as describe_mps

#: Ray's statuses of a trial that ended.
ENDED = ("TERMINATED", "ERROR")


@dataclass
class TrialHistory:
    """One trial (a unit of the record: a config, or a population) as the search's outputs need it.

    Attributes
    ----------
    trial_id : its id (:func:`tune.members.unit_ids`).
    config : its params (a config and its members, :mod:`tune.members`).
    results : what it reported, oldest first, earlier drivers' runs included: result dicts as Ray's
        callbacks receive them (nested or flattened, :func:`tune.members.entries`).
    status : Ray's vocabulary of its state (``PENDING``, ``RUNNING``, ``TERMINATED``, ``ERROR``).
    error : the last line of its error when it errored, else None.
    failures : times Ray restarted it after a failure.
    """

    trial_id: str
    config: dict[str, Any]
    results: list[dict[str, Any]] = field(default_factory=list)
    status: str = "PENDING"
    error: str | None = None
    failures: int = 0

    @property
    def ended(self) -> bool:
        return self.status in ENDED


@dataclass
class SearchOutcome:
    """What a finished (or interrupted) search left: its folder, table and best config."""

    path: str
    trials: pd.DataFrame
    best_config: SSOTConfig | None
    finished: bool
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def status(self) -> str:
        """``experiment.json``'s status: ``finished``, ``errored`` or ``running``."""
        return str(self.info.get("status") or (FINISHED if self.finished else RUNNING))


def exit_status_of(outcome: SearchOutcome) -> int:
    """A search's exit status (:mod:`ssot.cli`): 0 every trial ended and none errored; 1 some
    trials errored (fix, then ``--resume``); 3 every trial ended but none reached a result (all
    errored or diverged); 130 interrupted (Ctrl-C) or not every trial ended (``--resume`` continues)."""
    if outcome.status == RUNNING:
        return cli.EXIT_INTERRUPTED
    if outcome.best_config is None:
        return cli.EXIT_NO_RESULT
    return cli.EXIT_FAILED if outcome.status == ERRORED else cli.EXIT_OK


def expected_configs(info: dict[str, Any]) -> int:
    """Configs a complete search trains: ``num_samples``, times the number of cells for a grid."""
    return int(info["num_samples"]) * math.prod(len(s["values"]) for s in info["space"].values() if s["type"] == "grid")


def expected_trials(info: dict[str, Any]) -> int:
    """Ray trials a complete search has: its configs (:func:`expected_configs`) in trials of
    ``population`` members (one without)."""
    return math.ceil(expected_configs(info) / int(info.get("population") or 1))


def trial_frame(trials: Iterable[TrialHistory], info: dict[str, Any]) -> pd.DataFrame:
    """The rows of ``trials.csv``: one per member of ``trials`` and epoch (each epoch once,
    :func:`tune.members.history`), with the member's status (:func:`tune.members.member_status`);
    a member that recorded no epoch has one row with an empty ``epoch``."""
    rows: list[dict[str, Any]] = []
    hyper = hyperparameters(info)
    max_epochs = int(info["max_epochs"])
    for trial in trials:
        entries = members.history(trial.results)
        for member, params in members.members_of(trial.config, trial.trial_id).items():
            mine = entries.get(member, [])
            status, reason = members.member_status(mine, trial.error if trial.status == "ERROR" else None, max_epochs,
                                                   trial.ended)
            common = {"task": info["task"], "trial_id": member, "search": info["search"], **{h: params.get(h) for h in hyper}}
            for entry in mine or [{"epoch": math.nan}]:
                rows.append({**common, "epoch": entry.get("epoch"), **{m: entry.get(m, math.nan) for m in METRIC_COLUMNS},
                             PREDICTIONS_COLUMN: entry.get(PREDICTIONS_COLUMN), "status": status, "reason": reason})
    frame = pd.DataFrame(rows, columns=trial_columns(hyper))
    frame["epoch"] = pd.to_numeric(frame["epoch"], errors="coerce").astype("Int64")
    return frame.sort_values(["trial_id", "epoch"], kind="stable").reset_index(drop=True)


def trial_table(frame: pd.DataFrame, info: dict[str, Any]) -> pd.DataFrame:
    """:func:`ssot.results.trials.trial_table` of an experiment's rows."""
    return trial_model.trial_table(frame, int(info["max_epochs"]), hyperparameters(info))


def best_config(frame: pd.DataFrame, info: dict[str, Any]) -> tuple[SSOTConfig | None, str | None]:
    """The full config of the trial the best-trial rule picks (:mod:`ssot.results.trials`), and its id."""
    if frame.empty:
        return None, None
    row = trial_model.best_trial(trial_table(frame, info), info.get("metric", DEFAULT_METRIC))
    if row is None:
        return None, None
    return trial_config(row, info), str(row["trial_id"])


def trial_config(row: pd.Series, info: dict[str, Any]) -> SSOTConfig:
    """The full config a trial ran: ``experiment.json``'s ``base_config`` with the searched
    values of ``row`` (a row of :func:`trial_table` or of ``trials.csv``)."""
    values = dict(info["base_config"])
    for name in info["space"]:
        kind = type(getattr(SSOTConfig(), name))  # cast the CSV's numbers back to the field's type
        values[name] = kind(row[name]) if kind in (int, float) else row[name]
    return SSOTConfig.from_dict(values, source=f"trial {row['trial_id']}")


def summary_lines(frame: pd.DataFrame, info: dict[str, Any], top: int = 5) -> list[str]:
    """A printed summary: counts per status and the best trials under the best-trial rule."""
    if frame.empty:
        return [f"{info['task']}: no trial results."]
    table = trial_table(frame, info)
    counts = table["status"].value_counts().to_dict()
    lines = [f"{info['task']}: {len(table)} trials (" + ", ".join(f"{v} {k}" for k, v in sorted(counts.items())) + ")"]
    lines += retry_lines(info)
    lines += [line for line in [describe_mps(info.get("mps"))] if line]
    chosen = metric(info.get("metric", DEFAULT_METRIC))
    best = trial_model.ranked_trials(table, chosen.name).head(top)
    label = f", {chosen.label}" if chosen.label else ""
    baseline = pd.to_numeric(table.get("source_only_target_acc"), errors="coerce").dropna().mean()
    lines.append(f"  top {len(best)} trials by final {chosen.name} ({chosen.direction}{label}; ties to the lowest "
                 f"trial id; source-only baseline {baseline:.4f}):")
    for _, r in best.iterrows():
        lines.append(f"    {r['trial_id']:>14}  {chosen.name} {r[chosen.name]:.4f}  lambda_ot {r['lambda_ot']:.4g}  "
                     f"lambda_ent {r['lambda_ent']:.4g}  eps {r['eps']:.4g}  width {int(r['potential_width'])}")
    return lines


def retry_lines(info: dict[str, Any]) -> list[str]:
    """The summary's line on trials Ray restarted from their last checkpoint (``retries`` in
    ``experiment.json``: trial id -> restarts), or none."""
    retries = info.get("retries") or {}
    if not retries:
        return []
    return [f"  {len(retries)} trial(s) restarted from their last checkpoint after a failure (a lost node, a killed "
            f"worker or an error), {sum(retries.values())} restart(s) in all; at most {info.get('max_failures')} "
            f"per trial (--max-failures)"]


def write_outputs(path: str, info: dict[str, Any], frame: pd.DataFrame, finished: bool) -> SearchOutcome:
    """Write ``trials.csv``, ``best_config.json`` and ``experiment.json`` (last, with the status)."""
    best, trial_id = best_config(frame, info)
    info["best_trial"] = trial_id
    errored = bool(len(frame)) and (frame["status"] == ERRORED).any()
    info["status"] = (ERRORED if errored else FINISHED) if finished else RUNNING
    info["finished"] = now() if finished else None
    write_experiment(path, info, frame, best.to_dict() if best else None)
    return SearchOutcome(path, frame, best, info["status"] == FINISHED, info)


def collect(path: str) -> SearchOutcome:
    """Re-read the outputs of an experiment folder (local or remote)."""
    files = read_experiment(path, read=lambda name: storage.read_text(storage.join(path, name)))
    info = files.meta or {}
    best = SSOTConfig.from_dict(files.best_config, source=f"{path}/{BEST_CONFIG_FILE}") if files.best_config else None
    frame = files.trials if files.trials is not None else pd.DataFrame()
    return SearchOutcome(path, frame, best, info.get("status") == FINISHED, info)
