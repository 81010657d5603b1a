"""The experiment trackers a search can log to: MLflow, TensorBoard, Weights & Biases offline.

``python tune/search.py --tracker mlflow --tracker tensorboard --tracker wandb-offline`` adds Ray
Tune's logger callbacks to the search (:func:`tune.tracker_loggers.tracker_callbacks`). Each Ray trial becomes one run of
the tracker, with the trial's parameters (its whole config), every epoch's metrics (the target
accuracy, every validator, the losses, ``diverged``; step = Ray's training iteration = the epoch)
and how it ended. A trial reports in :mod:`tune.members`' format: in a search of one config per
trial the run's parameters and metrics are that config's (and again under
``members/<trial id>/``); a trial of P > 1 configs (``--population``) logs its first member's
config and its lead member's metrics at the top, and every member's under ``members/<id>/``:

``mlflow``
    :class:`MLflowLogger` (Ray's ``MLflowLoggerCallback``): the MLflow experiment
    ``<name>/<task>`` (the name of the Optuna study too), one run per trial named after it, tagged
    with ``trial_id`` and ``task``; the run ends ``FINISHED`` or ``FAILED`` (Ray's view) and is
    tagged ``ssot_status`` with the trial's status in ``trials.csv`` (``completed``,
    ``early-stopped``, ``diverged``, ``errored``). The tracking URI is ``$MLFLOW_TRACKING_URI``,
    else MLflow's own default made absolute: ``sqlite:///<current folder>/mlflow.db``
    (``mlflow ui --backend-store-uri`` that URL shows it).
``tensorboard``
    Ray's ``TBXLoggerCallback``: event files in each trial's folder (``tensorboard --logdir
    <storage-path>/<name>``); every epoch's scalars, and the trial's searched values with its
    last metrics in TensorBoard's HParams tab. TensorBoard has no notion of a run's status: the
    ``diverged`` scalar and the number of epochs say how a trial ended.
``wandb-offline``
    :class:`OfflineWandbLogger` (Ray's ``WandbLoggerCallback`` in W&B's offline mode: nothing is
    sent anywhere): W&B project ``<name>``, group ``<task>``, one offline run per trial in
    ``wandb/offline-run-<date>-<trial id>/`` under ``$WANDB_DIR``, else under the current folder
    (W&B's own default), with the config (plus ``ssot_status`` at the end) and every epoch's
    metrics; ``wandb sync wandb/offline-run-*`` uploads them later. (Not in the trial folders:
    Ray copies those to the storage path when a trial ends, before W&B has finished writing.)

The callbacks are Ray's, two of them extended (:mod:`tune.tracker_loggers`, imported with Ray when
a search starts: this module loads neither, so that ``tune/search.py`` checks its flags first).
Everything is checked before Ray starts (:func:`check_trackers`), in one line with exit
status 2: a tracker whose package is missing (``pip install -e ".[trackers]"``), an MLflow
tracking URI that cannot be used (a sqlite or file location that cannot be created, an HTTP
server that does not answer within a few seconds, a store MLflow itself refuses, such as the file
store ``./mlruns`` that MLflow 3 keeps in maintenance mode), a W&B folder that cannot be created.
"""
from __future__ import annotations

import importlib.util
import os
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path

from ssot.errors import ConfigError
from ssot.results.outputs import check_output

__all__ = ["TRACKERS", "PACKAGES", "MLFLOW_URI_ENV", "WANDB_DIR_ENV", "STATUS_TAG", "mlflow_uri", "wandb_dir", "check_trackers"]

#: The names ``--tracker`` takes.
TRACKERS = ("mlflow", "tensorboard", "wandb-offline")
#: The Python package each tracker needs (all in the ``trackers`` extra).
PACKAGES = {"mlflow": "mlflow", "tensorboard": "tensorboardX", "wandb-offline": "wandb"}
#: MLflow's own variable for the tracking URI.
MLFLOW_URI_ENV = "MLFLOW_TRACKING_URI"
#: W&B's own variable for the folder its runs go to.
WANDB_DIR_ENV = "WANDB_DIR"
#: Seconds an MLflow server has to answer before the search is refused.
PROBE_TIMEOUT = 5.0

#: The tag (MLflow) or config key (W&B) of a trial's status in ``trials.csv``.
STATUS_TAG = "ssot_status"


def mlflow_uri() -> str:
    """The tracking URI MLflow runs go to: ``$MLFLOW_TRACKING_URI``, else ``sqlite:///<cwd>/mlflow.db``."""
    return os.environ.get(MLFLOW_URI_ENV) or f"sqlite:///{Path.cwd() / 'mlflow.db'}"


def wandb_dir() -> str:
    """The folder W&B's ``wandb/`` folder of offline runs goes to: ``$WANDB_DIR``, else the current folder."""
    return str(Path(os.environ.get(WANDB_DIR_ENV) or Path.cwd()).resolve())


def check_trackers(names: Sequence[str]) -> None:
    """Refuse, before any work, an unknown tracker, a missing package or an unusable MLflow URI.

    Raises
    ------
    ConfigError
        In one line naming the problem and the fix.
    """
    for name in names:
        if name not in TRACKERS:
            raise ConfigError(f"The '--tracker' parameter must be one of {', '.join(TRACKERS)}. Got {name!r} instead.")
        package = PACKAGES[name]
        if importlib.util.find_spec(package) is None:
            raise ConfigError(f"--tracker {name} needs the {package} package, which is not installed: "
                              f"pip install -e \".[trackers]\" (or pip install {package}).")
    if "mlflow" in names:
        _check_mlflow_uri(mlflow_uri())
    if "wandb-offline" in names:
        check_output(wandb_dir(), f"${WANDB_DIR_ENV} (--tracker wandb-offline; default: the current folder)", folder=True,
                     exists_ok=True)


def _check_mlflow_uri(uri: str) -> None:
    where = f"--tracker mlflow: the tracking URI {uri} (${MLFLOW_URI_ENV}, default sqlite:///./mlflow.db)"
    if uri.startswith(("http://", "https://")):
        try:
            with urllib.request.urlopen(uri.rstrip("/") + "/health", timeout=PROBE_TIMEOUT) as answer:
                answer.read()
        except (urllib.error.URLError, OSError, ValueError) as exc:
            reason = getattr(exc, "reason", exc)
            raise ConfigError(f"{where} does not answer within {PROBE_TIMEOUT:g} s ({reason}). Start the server "
                              f"(mlflow server --host 127.0.0.1 --port 5000) or set {MLFLOW_URI_ENV}.") from None
        return
    if uri.startswith("sqlite:///"):
        check_output(uri.split(":///", 1)[1], f"${MLFLOW_URI_ENV} (--tracker mlflow)", folder=False, exists_ok=True)
    elif uri.startswith("file:") or "://" not in uri:
        check_output(uri.removeprefix("file://").removeprefix("file:"), f"${MLFLOW_URI_ENV} (--tracker mlflow)", folder=True,
                     exists_ok=True)
    from mlflow import MlflowClient

    try:  # what MLflow itself refuses (a file store in maintenance mode, a database it cannot migrate, ...)
        MlflowClient(uri).search_experiments(max_results=1)
    except Exception as exc:  # noqa: BLE001 - MLflow raises many kinds
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ConfigError(f"{where} cannot be used by MLflow ({first}). Set {MLFLOW_URI_ENV} to a database such as "
                          "sqlite:///mlflow.db or a tracking server's http:// URL.") from None
