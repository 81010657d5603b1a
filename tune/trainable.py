"""SSOT as a Ray Tune function trainable: one report (and one checkpoint) per epoch.

The trial's ``params`` are a full :class:`ssot.config.SSOTConfig` as a dict (the searched fields
sampled, the rest constant) plus private keys starting with ``_``:

``_pretrain_cache``
    a folder (or a URI: object storage) where the source-only model is stored once per pretraining config and seed: every
    trial of a search starts adaptation from the same pretrained network instead of repeating
    the pretraining (identical results, since pretraining does not depend on the searched fields).

A diverging trial (non-finite loss) reports ``target_acc = 0.0`` and every validator at
:func:`ssot.results.metrics.worst_value` (finite, so
ASHA can cut it and Optuna can learn from it rather than leave the trial RUNNING), with
``diverged = 1`` and the reason, then stops. Ray restarts a trial from its last checkpoint.
"""
from __future__ import annotations

import hashlib
import io
import json
import tempfile
from pathlib import Path
from typing import Any

import torch
from ray import tune

from ssot.config import CONFIG_FIELDS, TASK_FIELDS, SSOTConfig
from ssot.data import TaskData, build_task
from ssot.data.safe_load import load_dict
from ssot.errors import DivergedError
from ssot.results import storage
from ssot.results.metrics import EPOCH_VALIDATORS, REPORTED_METRICS, worst_value
from ssot.trainer import Trainer
from tune.state import ENDED_FILE, STATE_FILE

#: Scalar epoch metrics reported to Ray (lists and dicts stay in the checkpointed run record).
REPORTED = ("epoch", *REPORTED_METRICS)
#: The folder, beside an experiment's task folders (``<storage>/<name>/_pretrained``), of the
#: source-only models its trials share (``_pretrain_cache``).
PRETRAINED_DIR = "_pretrained"


def config_of(params: dict[str, Any]) -> SSOTConfig:
    """The SSOT config inside a trial's params (private ``_`` keys dropped)."""
    return SSOTConfig.from_dict({k: v for k, v in params.items() if k in CONFIG_FIELDS}, source="trial config")


def ssot_trainable(params: dict[str, Any]) -> None:
    """Train one SSOT run under Ray Tune, reporting every epoch with a checkpoint."""
    config = config_of(params)
    trainer = Trainer(config, task_of(config))
    ended, state = restored(STATE_FILE, trainer.device)
    if ended:  # the trial had ended (tune.state.repair_checkpoints)
        return
    if state is not None:
        trainer.load_state_dict(state)
    else:
        try:
            pretrain_shared(trainer, params.get("_pretrain_cache"))
        except DivergedError as exc:  # diverged in source pretraining: no accuracy at all
            tune.report(diverged_result(0, exc.reason, None))
            return
    while trainer.epoch < config.epochs:
        try:
            metrics = trainer.adapt_epoch()
        except DivergedError as exc:
            tune.report(diverged_result(trainer.epoch, exc.reason, trainer.record))
            return
        result = epoch_result(metrics, trainer.record, final=trainer.epoch == config.epochs)
        with tempfile.TemporaryDirectory() as folder:
            torch.save(trainer.state_dict(), Path(folder) / STATE_FILE)
            tune.report(result, checkpoint=tune.Checkpoint.from_directory(folder))


def restored(filename: str, device: Any) -> tuple[bool, dict[str, Any] | None]:
    """This trial's checkpoint, as ``(ended, state)``: ``(False, None)`` without one; ``(True,
    None)`` for the checkpoint :func:`tune.state.repair_checkpoints` made for a trial that had
    ended (the trainable returns at once); else the state in its file ``filename``, loaded
    safely (:func:`load_state`)."""
    checkpoint = tune.get_checkpoint()
    if checkpoint is None:
        return False, None
    with checkpoint.as_directory() as folder:
        if (Path(folder) / ENDED_FILE).is_file():
            return True, None
        data = (Path(folder) / filename).read_bytes()
    return False, load_state(data, f"the trial's checkpoint {checkpoint.path}/{filename}", device)


def epoch_result(metrics: dict[str, Any], record: dict[str, Any], *, final: bool) -> dict[str, Any]:
    """What a trial reports for an epoch: the scalar metrics :data:`REPORTED` of ``metrics``, the
    run's source-only values from its ``record``, and at the ``final`` epoch its target predictions
    (for the post-hoc EnsV selector)."""
    result = {k: _number(metrics[k]) for k in REPORTED} | {"diverged": 0, "reason": ""} | _source_only(record)
    result["epoch"] = int(metrics["epoch"])
    if final:
        result["target_pred"] = " ".join(map(str, record["target_pred"]))
    return result


def diverged_result(epoch: int, reason: str, record: dict[str, Any] | None) -> dict[str, Any]:
    """What a trial reports when it diverged at ``epoch`` (0: in pretraining, ``record`` None):
    every selectable metric at its worst (finite) value, ``diverged = 1`` and the reason."""
    worst = {v: worst_value(v) for v in ("target_acc", *EPOCH_VALIDATORS)}
    return {"epoch": epoch, **worst, "diverged": 1, "reason": reason, **(_source_only(record) if record else {})}


def _source_only(record: dict[str, Any]) -> dict[str, Any]:
    return {"source_only_target_acc": _number(record["source_only_target_acc"]), "source_outlier_share": record["source_outlier_share"]}


def _number(value: Any) -> float:
    """A reported scalar; ``None`` (no target labels) becomes NaN."""
    return float("nan") if value is None else float(value)


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
    """Short trial folder names (Ray's default repeats the whole config)."""
    return f"trial_{trial.trial_id}"


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
