"""The one Ray Tune trainable of a search: a trial trains its members as one population.

:func:`run_trial` trains the P >= 1 configs of a trial's params (:func:`tune.members.members_of`)
as one :class:`ssot.population.Population` (a population of one is exactly its config's
:class:`ssot.trainer.Trainer` run, any backbone, solver and precision; more members are stacked on
a feature cache) and reports every epoch (:func:`tune.members.report`: one entry per member, the
lead member's at the top). Before each report it records the epoch in its unit's files
(:class:`tune.record.UnitFiles`: its reports so far, then the members' state), so that whoever
runs the unit again (Ray after a lost node or an error, ``--resume`` after the driver stopped)
continues from its newest state.

Besides the config, a trial's params carry private keys starting with ``_``:

``_unit``, ``_record``
    the unit's id and the experiment folder (local or a URI) that holds its files (:mod:`tune.record`).
``_pretrain_cache``
    a folder (or a URI: object storage) where the source-only model is stored once per
    pretraining config and seed: every trial of a search starts adaptation from the same
    pretrained network instead of repeating the pretraining (identical results, since pretraining
    does not depend on the searched fields).
``_rungs``, ``_reduction_factor``, ``_metric``
    the early-stopping rungs applied inside the population (:func:`tune.experiment.early_stopping`:
    none for a config per trial, which ASHA stops across trials), its reduction factor, and the
    search's metric (the rungs' ranking and the lead entry).

A diverging member (non-finite loss) reports ``target_acc = 0.0`` and every validator at
:func:`ssot.results.metrics.worst_value` (finite, so ASHA can cut it and Optuna can learn from it
rather than leave the trial RUNNING), with ``diverged = 1`` and the reason, then stops; the other
members go on.
"""
from __future__ import annotations

import hashlib
import io
import json
from typing import Any

import torch
from ray import tune

from ssot.config import CONFIG_FIELDS, TASK_FIELDS, SSOTConfig
from ssot.data import TaskData, build_task
from ssot.data.safe_load import load_dict
from ssot.population import Population
from ssot.results import storage
from ssot.results.metrics import DEFAULT_METRIC
from ssot.results.metrics import metric as metric_spec
from ssot.results.trials import DIVERGED, EARLY_STOPPED
from ssot.trainer import Trainer
from tune import members as member_results
from tune.record import UnitFiles

#: The trial's private params: its unit and the experiment folder of its files, early stopping inside it and its metric.
UNIT_KEY, RECORD_KEY = "_unit", "_record"
RUNGS_KEY, REDUCTION_KEY, METRIC_KEY = "_rungs", "_reduction_factor", "_metric"
#: The folder, beside an experiment's task folders (``<storage>/<name>/_pretrained``), of the
#: source-only models its trials share (``_pretrain_cache``).
PRETRAINED_DIR = "_pretrained"


def config_of(params: dict[str, Any]) -> SSOTConfig:
    """The SSOT config inside a member's params (private ``_`` keys and the members dropped)."""
    return SSOTConfig.from_dict({k: v for k, v in params.items() if k in CONFIG_FIELDS}, source="trial config")


def run_trial(params: dict[str, Any]) -> None:
    """Train a trial's members under Ray Tune, recording and reporting every epoch (module docstring)."""
    unit = str(params[UNIT_KEY])
    listed = member_results.members_of(params, unit)
    ids, configs = list(listed), [config_of(p) for p in listed.values()]
    chosen = metric_spec(params.get(METRIC_KEY) or DEFAULT_METRIC)
    population = Population(configs, task_of(configs[0]), rungs=params.get(RUNGS_KEY) or (),
                            reduction_factor=int(params.get(REDUCTION_KEY) or 3), metric=chosen.name)
    files = UnitFiles(str(params[RECORD_KEY]), unit)
    saved = files.latest()
    history = saved.history if saved is not None else []
    if saved is not None:
        population.load_state_dict(load_state(saved.state, f"the state {files.folder}/epoch-{saved.epoch}.pt", population.device))
    else:
        population.pretrain(lambda host: pretrain_shared(host, params.get("_pretrain_cache")))
        if not population.alive:  # every member diverged in the shared pretraining: no accuracy at all
            entries = {ids[m.index]: member_results.diverged_entry(0, m.record["reason"], None) for m in population.members}
            _report(member_results.report(entries, chosen.name, chosen.direction or "max"), files, history, 0, None)
            return
    while population.alive:
        touched = population.adapt_epoch()
        entries = {ids[m.index]: _entry(m, population.epoch, configs[m.index].epochs) for m in touched}
        _report(member_results.report(entries, chosen.name, chosen.direction or "max"), files, history, population.epoch,
                population.state_dict() if population.alive else None)


def _report(result: dict[str, Any], files: UnitFiles, history: list[dict[str, Any]], epoch: int,
            state: dict[str, Any] | None) -> None:
    """Record ``result`` in the unit's files (its history with ``result`` appended, then the members'
    ``state``: None when nothing is left to train), then report it to Ray."""
    history.append(result)
    buffer = io.BytesIO()
    if state is not None:
        torch.save(state, buffer)
    files.write(epoch, history, buffer.getvalue() if state is not None else None)
    tune.report(result)


def _entry(member: Any, epoch: int, max_epochs: int) -> dict[str, Any]:
    """A member's entry for ``epoch``: the result an independent trial of its config would report."""
    if member.status == DIVERGED:
        return member_results.diverged_entry(epoch, member.record["reason"], member.record)
    entry = member_results.epoch_entry(member.epochs[-1], member.record, final=epoch >= max_epochs)
    entry[member_results.EARLY_STOPPED_FLAG] = int(member.status == EARLY_STOPPED)
    return entry


#: The task data of the last trial this worker process ran, by the config's ``task`` group
#: (:data:`ssot.config.TASK_FIELDS`): Ray reuses actors between trials (``reuse_actors=True``), so
#: a trial of the same task skips rebuilding it.
_TASK_CACHE: dict[str, TaskData] = {}


def task_of(config: SSOTConfig) -> TaskData:
    """The task data of ``config``, built once per worker process (datasets are read-only, and
    building them draws no random number, so a trial's results do not change)."""
    key = task_key(config)
    if key not in _TASK_CACHE:
        _TASK_CACHE.clear()
        _TASK_CACHE[key] = build_task(config)
    return _TASK_CACHE[key]


def task_key(config: SSOTConfig) -> str:
    """What makes two configs' task data the same: the values of the ``task`` group
    (:data:`ssot.config.TASK_FIELDS`), as text."""
    return json.dumps({k: getattr(config, k) for k in TASK_FIELDS}, sort_keys=True, default=str)


def pretrained_path(cache_dir: str, config: SSOTConfig) -> str:
    """The file of the source-only model of ``config`` in ``cache_dir``: one per value of the
    pretraining fields (:attr:`ssot.trainer.Trainer.PRETRAIN_FIELDS`, the seed included)."""
    key = {k: getattr(config, k) for k in Trainer.PRETRAIN_FIELDS}
    digest = hashlib.sha256(json.dumps(key, sort_keys=True, default=str).encode()).hexdigest()[:16]
    return storage.join(cache_dir, f"pretrained-{digest}.pt")


def load_state(data: bytes, what: str, device: Any = "cpu") -> dict[str, Any]:
    """A trainer state (a checkpoint or a pretrained model) from the bytes of its file, loaded
    safely (:func:`ssot.data.safe_load.load_dict`: tensors and plain types only, so a file planted
    in a shared store can never run code here).

    Raises
    ------
    SSOTError
        Naming ``what``, when the file is not such a state (torn, planted, or written by a
        version that pickled other objects): delete it to recompute it.
    """
    return load_dict(data, what, "It was not written by this version of the search: delete it to recompute it.",
                     map_location=device)


def trial_dirname(trial: Any) -> str:
    """Ray's folder of a trial: its unit and Ray's trial id (Ray's default repeats the whole config)."""
    return f"{trial.config.get(UNIT_KEY, 'trial')}_{trial.trial_id}"


def pretrain_shared(trainer: Trainer, cache_dir: str | None) -> None:
    """Pretrain, or load the source-only model another trial already stored in ``cache_dir``
    (a local folder or a URI such as ``s3://bucket/exp/_pretrained``, through :mod:`ssot.results.storage`:
    on a cluster every node shares it)."""
    if not cache_dir:
        trainer.pretrain()
        return
    path = pretrained_path(cache_dir, trainer.config)
    try:
        data = storage.read_bytes(path)
    except OSError:  # unreadable (e.g. a file where the folder should be): computed, then written below
        data = None
    if data is not None:
        trainer.load_pretrained(load_state(data, f"the shared pretrained model {path}", trainer.device))
        return
    trainer.pretrain()
    buffer = io.BytesIO()
    torch.save(trainer.pretrained_state(), buffer)
    storage.write_bytes(path, buffer.getvalue())  # whole: concurrent trials never read a half-written file
