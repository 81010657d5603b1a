"""The run record: what one training run leaves, its rules, and its files.

Every training run (``python -m ssot.train``, a final, confirmation, ablation or solver run, a
trial) builds one record (:func:`ssot.trainer.run` returns it as a dict): ``config`` (every field
of the config), ``epochs`` (one dict per adaptation epoch: ``epoch``, ``target_acc`` and the other
metrics of :mod:`ssot.results.metrics`), ``source_only_target_acc`` (target accuracy after source
pretraining, before adaptation), ``status`` (``completed`` or ``diverged``) and ``reason``, plus
what the analyses draw (``task``, ``source_only``, ``source_class_freq``, ``target_class_freq``,
``target_pred``, ...). :class:`RunRecord` is its typed view; every reader goes through
:func:`read_record` and every writer through :func:`write_new` (never overwrites).

The rules of a run
------------------
*Final accuracy* (:attr:`RunRecord.final_acc`): the target accuracy at the last adaptation epoch;
a run without any adaptation epoch (``--epochs 0``, or diverged in its first) has its source-only
accuracy. A diverged run counts with its last finished epoch; its status says so.

*Score* (:meth:`RunRecord.score`): the value of a metric a run is ranked by: the metric at the
last epoch of a completed run, :func:`ssot.results.metrics.worst_value` otherwise (a diverged run
scores as a diverged trial does in a search).

Over seeds, :func:`mean_std` gives the mean and the *sample* standard deviation
(:math:`\\sqrt{\\sum_i (v_i - \\bar v)^2 / (n - 1)}`, 0 for one seed).
"""
from __future__ import annotations

import json
import math
import statistics
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ssot.errors import ResultsError
from ssot.results import atomic
from ssot.results.metrics import worst_value

#: Sub-folder of a results folder holding one run record per (task, seed).
RUNS_DIR = "runs"
COMPLETED, DIVERGED = "completed", "diverged"


def is_run_record(obj: Any) -> bool:
    """Whether ``obj`` (parsed JSON) is a run record: an object with a ``config`` and a list of ``epochs``."""
    return isinstance(obj, Mapping) and isinstance(obj.get("config"), Mapping) and isinstance(obj.get("epochs"), list)


@dataclass(frozen=True)
class RunRecord:
    """The typed view of a run record (module docstring).

    Attributes
    ----------
    config : dict
        Every field of the run's :class:`ssot.config.SSOTConfig`.
    epochs : list of dict
        One entry per adaptation epoch.
    status : str
        ``completed``, ``diverged`` (or ``running`` inside a trainer).
    source_only_target_acc : float or None
        Target accuracy before adaptation (None on an unlabeled target, or diverged in pretraining).
    reason : str or None
        Why a run did not complete.
    other : dict
        Every other key of the record, kept as it is.
    """

    config: dict[str, Any]
    epochs: list[dict[str, Any]]
    status: str = "unknown"
    source_only_target_acc: float | None = None
    reason: str | None = None
    other: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | RunRecord) -> RunRecord:
        """The typed view of a record dict (a :class:`RunRecord` is returned as it is); missing
        keys take their defaults (files are checked by :func:`read_record`)."""
        if isinstance(data, RunRecord):
            return data
        known = {"config", "epochs", "status", "source_only_target_acc", "reason"}
        return cls(dict(data.get("config") or {}), list(data.get("epochs") or []), str(data.get("status", "unknown")),
                   data.get("source_only_target_acc"), data.get("reason"),
                   {k: v for k, v in data.items() if k not in known})

    def to_dict(self) -> dict[str, Any]:
        """The JSON object of the record."""
        return {"config": self.config, **self.other, "source_only_target_acc": self.source_only_target_acc,
                "epochs": self.epochs, "status": self.status, "reason": self.reason}

    @property
    def seed(self) -> int:
        return int(self.config["seed"])

    @property
    def task(self) -> str:
        return str(self.config.get("task", ""))

    @property
    def completed(self) -> bool:
        return self.status == COMPLETED

    @property
    def final_acc(self) -> float | None:
        """The run's final accuracy (module docstring); None without target labels."""
        return self.epochs[-1]["target_acc"] if self.epochs else self.source_only_target_acc

    def score(self, metric_name: str) -> float:
        """The value the run is ranked by under ``metric_name`` (module docstring)."""
        if self.completed and self.epochs:
            value = self.epochs[-1].get(metric_name)
            if value is not None and math.isfinite(float(value)):
                return float(value)
        return float(worst_value(metric_name))


def records(items: Iterable[Mapping[str, Any] | RunRecord]) -> list[RunRecord]:
    """:meth:`RunRecord.from_dict` of every item."""
    return [RunRecord.from_dict(r) for r in items]


def mean_std(values: Sequence[float]) -> tuple[float, float]:
    """Mean and sample standard deviation (0 for one value) of ``values`` (non-empty)."""
    return statistics.fmean(values), statistics.stdev(values) if len(values) > 1 else 0.0


def summarize(runs: Sequence[Mapping[str, Any] | RunRecord]) -> dict[str, Any]:
    """The seeds, statuses, and mean +- std of the final and source-only accuracies of ``runs``
    (one per seed; ``None`` where a run has no accuracy, e.g. an unlabeled target)."""
    typed = records(runs)

    def stats(xs: list[float | None]) -> dict[str, float] | None:
        if any(x is None for x in xs):
            return None
        mean, std = mean_std(xs)  # type: ignore[arg-type]
        return {"mean": mean, "std": std}

    return {"seeds": [r.seed for r in typed], "target_acc": stats([r.final_acc for r in typed]),
            "source_only_target_acc": stats([r.source_only_target_acc for r in typed]),
            "statuses": [r.status for r in typed]}


# ------------------------------------------------------------------------------------ files
def run_path(out_dir: str | Path, task: str, seed: int) -> Path:
    """``out_dir/runs/<task>_seed<seed>.json``: where a results folder keeps the record of one (task, seed)."""
    return Path(out_dir) / RUNS_DIR / f"{task}_seed{seed}.json"


def read_record(path: str | Path, hint: str = "pass a JSON file written by --out",
                required: Sequence[str] = ("config", "epochs")) -> RunRecord:
    """The run record in ``path`` (it must hold the keys ``required``).

    Raises
    ------
    ResultsError
        ``"The run record PATH cannot be read (...); HINT."`` or ``"PATH is not a run record (no
        config and epochs); HINT."``.
    """
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ResultsError(f"The run record {path} cannot be read ({exc}); {hint}.") from None
    if not is_run_record(data) or any(k not in data for k in required):
        keys = f"{', '.join(required[:-1])} and {required[-1]}" if len(required) > 1 else required[0]
        raise ResultsError(f"{path} is not a run record (no {keys}); {hint}.")
    return RunRecord.from_dict(data)


def read_reusable(path: str | Path, expected: Mapping[str, Any], ignore: Collection[str] = ()) -> RunRecord:
    """A record written earlier, checked to have run the config ``expected`` (a config dict),
    except in the fields ``ignore`` (where or how fast a run executes).

    Raises
    ------
    ResultsError
        If the file is unreadable or not a finished run record, or its config differs.
    """
    hint = "move it away to retrain this seed"
    record = read_record(path, hint, required=("config", "epochs", "status"))
    differ = sorted(k for k in expected if k not in ignore and record.config.get(k) != expected[k])
    if differ:
        detail = ", ".join(f"{k}={record.config.get(k)!r} instead of {expected[k]!r}" for k in differ[:3])
        raise ResultsError(f"The run record {path} was trained with {detail}; {hint}, or pass the same config and flags.")
    return record


def write_new(path: str | Path, payload: Mapping[str, Any] | RunRecord) -> Path:
    """Write a record (or any JSON payload of records) to ``path`` at once; never replaces a file
    (:func:`ssot.results.atomic.write_new`).

    Raises
    ------
    ResultsError
        If ``path`` appeared meanwhile (the new content is kept beside it and named).
    """
    data = payload.to_dict() if isinstance(payload, RunRecord) else dict(payload)
    return atomic.write_new(Path(path), (json.dumps(data, indent=2) + "\n").encode(), "the new run")
