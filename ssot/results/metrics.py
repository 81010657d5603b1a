"""The metric registry: every metric a run reports, with its direction, its role and its label.

One entry per metric (:data:`METRICS`, in the column order of ``trials.csv``). A metric's
``direction`` is ``"max"`` (higher is better), ``"min"`` or ``None`` (a diagnostic, never selected
on); its ``role`` says what it is: ``"oracle"`` (uses the target labels: ``target_acc``),
``"validator"`` (a label-free model-selection score, computed by :mod:`ssot.validators`),
``"loss"`` or ``"diagnostic"``. The label-free validators are declared here statically, so that
the torch-free readers (``analysis``) know their directions; :mod:`ssot.validators` takes its
directions from here. A new metric is one line.

Derived lists: :data:`METRIC_COLUMNS` (columns of ``trials.csv``), :data:`REPORTED_METRICS`
(what a trial reports to Ray every epoch), :data:`EPOCH_VALIDATORS` (validators the trainer computes
every epoch), :data:`SEARCH_METRICS` (what a search may optimise), :data:`LABEL_FREE`,
:data:`DIRECTIONS` (oracle and validators, as ``experiment.json``'s ``validator_directions``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Direction = Literal["max", "min"]
Role = Literal["oracle", "validator", "loss", "diagnostic"]


@dataclass(frozen=True)
class Metric:
    """One metric of a run.

    Attributes
    ----------
    name : the column name in ``trials.csv`` and the key in a run record's epochs.
    direction : ``"max"``, ``"min"`` or ``None`` (never selected on).
    role : ``"oracle"``, ``"validator"``, ``"loss"`` or ``"diagnostic"``.
    per_epoch : False for a value reported once per trial (``source_only_target_acc``).
    column : False for a score computed after a search over its trials (``ensv``), which is not
        a column of ``trials.csv``.
    fraction : the value is a fraction in [0, 1] (its worst value is 0).
    label : how a selection on it should be read (``"oracle"``: it uses the target labels).
    """

    name: str
    direction: Direction | None
    role: Role = "diagnostic"
    per_epoch: bool = True
    column: bool = True
    fraction: bool = False
    label: str = ""

    @property
    def worst(self) -> float:
        """The finite score a diverged run reports (worse than any real score), so ASHA can stop
        it and TPE can learn from it: 0 for a fraction, else -1e3 (``max``) or +1e3 (``min``)."""
        if self.fraction:
            return 0.0
        return -1e3 if self.direction == "max" else 1e3


#: Every metric, in the column order of ``trials.csv`` (then the post-hoc ones).
METRICS: tuple[Metric, ...] = (
    Metric("target_acc", "max", "oracle", fraction=True, label="oracle"),
    Metric("source_acc", "max", "validator", fraction=True),
    Metric("loss_total", "min", "loss"),
    Metric("loss_ce", "min", "loss"),
    Metric("loss_ot", "min", "loss"),
    Metric("loss_ent", "min", "loss"),
    Metric("ot_value", None),
    Metric("outlier_mass", None),
    Metric("n_pred_classes", None),
    Metric("source_only_target_acc", "max", "oracle", per_epoch=False, fraction=True),
    Metric("time_s", None),
    # label-free validators (ssot/validators.py computes them)
    Metric("entropy", "min", "validator"),
    Metric("snd", "max", "validator"),
    Metric("im", "max", "validator"),
    Metric("im_pda", "max", "validator"),
    Metric("bnm", "max", "validator"),
    Metric("dev", "min", "validator"),
    Metric("mixval", "max", "validator", fraction=True),
    Metric("mixval_inter", "max", "validator", fraction=True),
    Metric("mixval_intra", "max", "validator", fraction=True),
    # post hoc, over the final predictions of a finished search's trials
    Metric("ensv", "max", "validator", per_epoch=False, column=False, fraction=True),
)
_BY_NAME = {m.name: m for m in METRICS}

DEFAULT_METRIC = "target_acc"
#: The columns of ``trials.csv`` holding metrics, in order.
METRIC_COLUMNS: tuple[str, ...] = tuple(m.name for m in METRICS if m.column)
#: The per-epoch metrics a trial reports to Ray.
REPORTED_METRICS: tuple[str, ...] = tuple(m.name for m in METRICS if m.column and m.per_epoch)
#: Validators computed every epoch by the trainer (``ensv`` is post hoc, over a finished search).
EPOCH_VALIDATORS: tuple[str, ...] = tuple(m.name for m in METRICS if m.role == "validator" and m.per_epoch)
#: Metrics a search may optimise: the oracle and the epoch validators.
SEARCH_METRICS: tuple[str, ...] = (DEFAULT_METRIC, *EPOCH_VALIDATORS)
#: Search metrics that do not use target labels.
LABEL_FREE: tuple[str, ...] = EPOCH_VALIDATORS
#: The oracle and every validator with its direction (``experiment.json``'s ``validator_directions``).
DIRECTIONS: dict[str, str] = {m.name: str(m.direction) for m in METRICS
                              if m.name == DEFAULT_METRIC or m.role == "validator"}


def metric(name: str) -> Metric:
    """The :class:`Metric` called ``name``; a ``ValueError`` in scikit-learn's style otherwise."""
    if name in _BY_NAME:
        return _BY_NAME[name]
    raise ValueError(f"The 'metric' parameter must be one of {', '.join(METRIC_COLUMNS)}. Got {name!r} instead.")


def is_fraction(name: str) -> bool:
    """Whether the metric ``name`` is a fraction in [0, 1] (written in percent); False for a name
    the registry does not know."""
    known = _BY_NAME.get(name)
    return known is not None and known.fraction


def worst_value(name: str) -> float:
    """:attr:`Metric.worst` of the metric ``name``."""
    return metric(name).worst
