"""The one typed configuration of an SSOT run.

Every hyperparameter of the method lives here with its paper default. The search space
(``tune/``), the exported best configs and the ``python -m ssot.train`` command all speak these
field names. A config is validated where it enters (:meth:`SSOTConfig.validate`, called by
:meth:`SSOTConfig.from_dict`), with messages of the form
``The 'eps' parameter must be a float in [0, inf). Got -1.0 instead.``

Decisions on the points the paper leaves open (see README, "Open points of the paper"):

``pt_refresh``
    Algorithm 1 re-estimates the target label distribution ``p_t`` with a full pass over the
    target set at *every* iteration. We refresh it every ``pt_refresh`` iterations; ``0`` (the
    default) means once per epoch, reusing the evaluation pass that measures target accuracy.
    ``pt_refresh=1`` is the paper's algorithm (slow on VisDA-2017).
``mask_grad``
    Whether the soft mask ``S`` passes gradients to ``f`` and ``eta`` in the feature step. The
    paper says the mask's update "is included in the adaptive process": default ``True``.
``g_steps``, ``lr_g``
    Number of ascent steps of the potential network ``g`` per iteration (default 1) and its
    learning rate (default ``lr_g = 1e-3``; the paper gives one unnamed learning rate).
``mask_scale``
    The paper's mask rows sum to 1, so the masked cost is about ``1/b_t`` of the raw cost and
    ``lambda_OT``/``eps`` interact with the batch size. ``mask_scale=1`` (default) keeps the paper's
    definition; ``mask_scale=b_t`` would make the masked cost batch-size invariant.
``use_class_weights``, ``use_mask``
    Ablations "w/o m" (m = 1) and "w/o Mask" (S = 1). "w/o Ent" is ``lambda_ent = 0``.
"""
from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from ssot.errors import ConfigError

#: Backbones the model factory knows (``"features"``: inputs are precomputed backbone features).
BACKBONES = ("resnet50", "digits_cnn", "features")
DEVICES = ("auto", "cpu", "cuda")
PRECISIONS = ("fp32", "bf16")
#: Values of ``ot_solver`` (the solvers live in :mod:`ssot.solvers`; kept here so config stays torch-free).
OT_SOLVERS = ("net", "vector", "sinkhorn")


@dataclass
class SSOTConfig:
    """Every setting of one SSOT training run (paper defaults unless noted).

    Parameters
    ----------
    task : task name: ``digits``, ``P2H``, ``H2P`` (embedded; ``H2H``, ``P2P``: references) or one of
        the paper's 26 tasks (``A2W``, ``P2I``...).
    lambda_ot : weight of the OT loss ``L_OT``.
    lambda_ent : weight of the target entropy loss ``L_Ent`` (0 = ablation "w/o Ent").
    eps : entropic regularisation of the semi-dual (paper: 1); 0 gives the hard c-transform.
    potential_width : hidden width of the potential network ``g`` (paper: 256).
    epochs : adaptation epochs after source pretraining.
    pretrain_epochs : source-only cross-entropy epochs before adaptation.
    iters_per_epoch : adaptation iterations per epoch; 0 = ``len(source) // batch_size``.
    batch_size : source and target mini-batch size ``b_s = b_t`` (paper: 32).
    lr : Adam learning rate of the bottleneck and classifier during adaptation.
    lr_pretrain : Adam learning rate during source pretraining.
    backbone_lr_mult : multiplier of ``lr`` for a pretrained backbone (ResNet-50).
    lr_g : Adam learning rate of the potential network ``g``.
    g_steps : ascent steps of ``g`` per iteration.
    weight_decay : Adam weight decay of ``f`` and ``eta``.
    pt_refresh : iterations between re-estimations of ``p_t``; 0 = once per epoch.
    mask_grad : let gradients flow through the soft mask in the feature step.
    mask_scale : factor applied to the soft mask (1 = the paper's row-stochastic mask).
    use_class_weights : estimate importance weights ``m`` (False: m = 1).
    use_mask : use the soft mask (False: S = 1).
    ot_solver : ``net`` (potential network, the paper's method), ``vector`` (a free potential per
        target sample, SGD) or ``sinkhorn`` (entropic OT per mini-batch); see :mod:`ssot.solvers`.
    lr_vector : step size of the ``vector`` solver's per-sample ascent.
    sinkhorn_iters : maximum Sinkhorn iterations per mini-batch of the ``sinkhorn`` solver.
    backbone : ``resnet50``, ``digits_cnn`` or ``features`` (precomputed features).
    pretrained : load ImageNet weights for ResNet-50 (from ``pretrained_path`` or the torch cache).
    pretrained_path : explicit path of a ResNet-50 ImageNet state dict.
    bottleneck_dims : hidden sizes of the bottleneck after the backbone (paper: 1024, 512).
    data_root : root folder of the benchmark datasets (else env ``SSOT_DATA_ROOT``).
    features_path : a ``.pt`` feature cache to train on instead of images (backbone ``features``).
    source_dir, target_dir : the two image folders of the ``custom`` task (``--source``, ``--target``).
    image_size : crop size of the image transforms (paper: 224).
    resize_size : resize before the centre crop at evaluation (paper: 256).
    eval_batch_size : batch size of the no-gradient evaluation passes.
    source_eval_samples : size of the fixed source subset used for source accuracy (0 = all).
    source_holdout : fraction of the source set held out from training (0 = the paper's protocol:
        train on all source samples). The held-out samples are the ones ``source_acc``, the DEV
        validator and the source-only evaluation use; with 0 they are training samples.
    num_workers : DataLoader workers for image tasks.
    num_threads : torch CPU threads (0: torch's default, all cores). Results depend on it (float
        sums are split differently), so it is recorded: a search's trials run with their CPU
        share, and their ``best_config.json`` reproduces a trial exactly.
    device : ``auto`` (CUDA when available), ``cpu`` or ``cuda``.
    precision : ``fp32`` or ``bf16`` (autocast of ``f`` and ``eta``; the OT maths stays in fp32).
    seed : seed of every random number generator of the run.
    """

    task: str = "digits"
    # --- the searched hyperparameters ---
    lambda_ot: float = 1.0
    lambda_ent: float = 1.0
    eps: float = 1.0
    potential_width: int = 256
    # --- schedule ---
    epochs: int = 15
    pretrain_epochs: int = 8
    iters_per_epoch: int = 0
    batch_size: int = 32
    lr: float = 1e-4
    lr_pretrain: float = 1e-3
    backbone_lr_mult: float = 0.1
    lr_g: float = 1e-3
    g_steps: int = 1
    weight_decay: float = 0.0
    # --- open points of the paper and ablations ---
    pt_refresh: int = 0
    mask_grad: bool = True
    mask_scale: float = 1.0
    use_class_weights: bool = True
    use_mask: bool = True
    ot_solver: str = "net"
    lr_vector: float = 0.5
    sinkhorn_iters: int = 100
    # --- model ---
    backbone: str = "digits_cnn"
    pretrained: bool = True
    pretrained_path: str | None = None
    bottleneck_dims: tuple[int, ...] = (256,)
    # --- data ---
    data_root: str | None = None
    features_path: str | None = None
    source_dir: str | None = None
    target_dir: str | None = None
    image_size: int = 224
    resize_size: int = 256
    eval_batch_size: int = 256
    source_eval_samples: int = 2000
    source_holdout: float = 0.0
    num_workers: int = 0
    # --- execution ---
    num_threads: int = 0
    device: str = "auto"
    precision: str = "fp32"
    seed: int = 0

    # ------------------------------------------------------------------ construction
    @classmethod
    def for_task(cls, task: str, **overrides: Any) -> SSOTConfig:
        """The defaults for ``task``: the paper's settings for a benchmark task, the small
        CNN settings for the embedded tasks (``digits``, ``P2H``, ``H2P`` and their references
        ``H2H``, ``P2P``: the same small CNN and schedule); ``overrides`` win."""
        from ssot.data.printed import PRINTED_TASKS

        base: dict[str, Any] = {"task": task}
        if task != "digits" and task not in PRINTED_TASKS:
            base.update(
                backbone="resnet50",
                bottleneck_dims=(1024, 512),
                epochs=20,
                pretrain_epochs=5,
                num_workers=4,
            )
        if task in PRINTED_TASKS and task[0] == "P":  # 1800 printed sources: digits' 28 iterations per epoch
            base.update(iters_per_epoch=28)
        base.update(overrides)
        return cls.from_dict(base)

    @classmethod
    def from_dict(cls, values: dict[str, Any], *, source: str = "config") -> SSOTConfig:
        """Build and validate a config; unknown keys are refused with the list of valid ones."""
        if not isinstance(values, dict):
            raise ConfigError(f"The {source} must be a JSON object of config fields. Got {type(values).__name__}.")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ConfigError(
                f"Unknown field(s) {', '.join(repr(u) for u in unknown)} in the {source}. "
                f"Valid fields: {', '.join(sorted(known))}."
            )
        values = dict(values)
        if isinstance(values.get("bottleneck_dims"), list):
            values["bottleneck_dims"] = tuple(values["bottleneck_dims"])
        config = cls(**values)
        config.validate()
        return config

    @classmethod
    def from_json(cls, path: str | Path) -> SSOTConfig:
        """Read a config written by :meth:`to_json` (or a run record's ``config``)."""
        path = Path(path)
        try:
            values = json.loads(path.read_text())
        except FileNotFoundError:
            raise ConfigError(f"Config file {path} does not exist. Pass a JSON file written by the search or by --out.") from None
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ConfigError(f"Config file {path} is not valid JSON ({type(exc).__name__}: {exc}). Fix or regenerate it.") from None
        if isinstance(values, dict) and "config" in values and "epochs" in values and isinstance(values["epochs"], list):
            values = values["config"]  # a run record: take its config
        return cls.from_dict(values, source=f"config file {path}")

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["bottleneck_dims"] = list(self.bottleneck_dims)
        return d

    def to_json(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_dict(), indent=2) + "\n")

    def replace(self, **changes: Any) -> SSOTConfig:
        """A validated copy with ``changes`` applied."""
        return self.from_dict({**self.to_dict(), **changes})

    # ------------------------------------------------------------------ validation
    def validate(self) -> None:
        """Raise :class:`ConfigError` naming the first invalid field, its value and the range."""
        _check_float(self, "lambda_ot", low=0.0)
        _check_float(self, "lambda_ent", low=0.0)
        _check_float(self, "eps", low=0.0)
        _check_int(self, "potential_width", low=1)
        _check_int(self, "epochs", low=0)
        _check_int(self, "pretrain_epochs", low=0)
        _check_int(self, "iters_per_epoch", low=0)
        _check_int(self, "batch_size", low=2)
        for name in ("lr", "lr_pretrain", "lr_g"):
            _check_float(self, name, low=0.0, open_low=True)
        _check_float(self, "backbone_lr_mult", low=0.0)
        _check_float(self, "weight_decay", low=0.0)
        _check_float(self, "mask_scale", low=0.0, open_low=True)
        _check_int(self, "g_steps", low=0)
        _check_int(self, "pt_refresh", low=0)
        for name in ("mask_grad", "use_class_weights", "use_mask", "pretrained"):
            if not isinstance(getattr(self, name), bool):
                raise ConfigError(f"The '{name}' parameter must be true or false. Got {getattr(self, name)!r} instead.")
        _check_choice(self, "backbone", BACKBONES)
        _check_choice(self, "device", DEVICES)
        _check_choice(self, "precision", PRECISIONS)
        _check_choice(self, "ot_solver", OT_SOLVERS)
        _check_float(self, "lr_vector", low=0.0, open_low=True)
        _check_int(self, "sinkhorn_iters", low=1)
        if self.ot_solver == "sinkhorn" and self.eps == 0:
            raise ConfigError("The 'eps' parameter must be a float in (0, inf) with ot_solver 'sinkhorn'. Got 0.0 instead.")
        if not (isinstance(self.bottleneck_dims, tuple) and all(isinstance(d, int) and not isinstance(d, bool) and d > 0 for d in self.bottleneck_dims)):
            raise ConfigError(f"The 'bottleneck_dims' parameter must be a list of positive ints. Got {self.bottleneck_dims!r} instead.")
        for name in ("image_size", "resize_size", "eval_batch_size"):
            _check_int(self, name, low=1)
        _check_int(self, "source_eval_samples", low=0)
        _check_float(self, "source_holdout", low=0.0)
        if self.source_holdout >= 0.9:
            raise ConfigError(f"The 'source_holdout' parameter must be a float in [0, 0.9). Got {self.source_holdout!r} instead.")
        _check_int(self, "num_workers", low=0)
        _check_int(self, "num_threads", low=0)
        _check_int(self, "seed", low=0)
        if not isinstance(self.task, str) or not self.task:
            raise ConfigError(f"The 'task' parameter must be a task name. Got {self.task!r} instead.")
        from ssot.data.printed import PRINTED_TASKS

        if (self.task == "digits" or self.task in PRINTED_TASKS) and self.backbone == "resnet50":
            raise ConfigError(f"The 'backbone' parameter 'resnet50' does not fit task {self.task!r} (8x8 images). Use backbone 'digits_cnn'.")
        if self.features_path and self.backbone != "features":
            raise ConfigError(f"The 'features_path' parameter is set but 'backbone' is {self.backbone!r}. Use backbone 'features' to train on a feature cache.")
        if self.backbone == "features" and not self.features_path:
            raise ConfigError("The 'backbone' parameter is 'features' but 'features_path' is not set. Pass the path of a feature cache.")


def _check_float(cfg: SSOTConfig, name: str, *, low: float, open_low: bool = False) -> None:
    value = getattr(cfg, name)
    interval = f"({low:g}, inf)" if open_low else f"[{low:g}, inf)"
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    ok = ok and (value > low if open_low else value >= low)
    if not ok:
        raise ConfigError(f"The '{name}' parameter must be a float in {interval}. Got {value!r} instead.")
    setattr(cfg, name, float(value))


def _check_int(cfg: SSOTConfig, name: str, *, low: int) -> None:
    value = getattr(cfg, name)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
        setattr(cfg, name, value)
    if not isinstance(value, int) or isinstance(value, bool) or value < low:
        raise ConfigError(f"The '{name}' parameter must be an int in [{low}, inf). Got {value!r} instead.")


def _check_choice(cfg: SSOTConfig, name: str, choices: tuple[str, ...]) -> None:
    value = getattr(cfg, name)
    if value not in choices:
        raise ConfigError(f"The '{name}' parameter must be one of {', '.join(map(repr, choices))}. Got {value!r} instead.")


CONFIG_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(SSOTConfig))
SEARCHED_FIELDS: tuple[str, ...] = ("lambda_ot", "lambda_ent", "eps", "potential_width")
