"""The one typed configuration of an SSOT run.

Every hyperparameter of the method lives here with its paper default. The search space
(``tune/``), the exported best configs and the ``python -m ssot.train`` command all speak these
field names.

Each field is declared once, with its default, its constraint, its groups and its help, as
``dataclasses.field`` metadata (:func:`param`, in the spirit of scikit-learn's
``_parameter_constraints``). Everything else is derived from the declarations: validation
(:meth:`SSOTConfig.validate`, called by :meth:`SSOTConfig.from_dict`, with messages of the form
``The 'eps' parameter must be a float in [0, inf). Got -1.0 instead.``), the command-line flags
and their help (:func:`ssot.cli.add_config_flags`), the ``Parameters`` section of
:class:`SSOTConfig`'s docstring, and the field groups (:func:`fields_in`):

``searched``
    the paper's searched hyperparameters, in display order (:data:`SEARCHED_FIELDS`);
``pretraining``
    what source pretraining depends on: runs that agree on them share one pretrained model
    (:data:`PRETRAINING_FIELDS`, the trainer's cache key);
``task``
    what the task data depends on: a worker reuses the data of a trial of the same task
    (:data:`TASK_FIELDS`);
``path``
    local paths, made absolute before a search sends them to other nodes (:data:`PATH_FIELDS`);
``runtime``
    where or how fast a run executes, not what it computes: a reused run record may differ in
    them (:data:`RUNTIME_FIELDS`).

Adding a field is one declaration. Cross-field rules (the ``sinkhorn`` solver needs ``eps > 0``;
``features_path`` goes with the ``features`` backbone; ResNet-50 does not fit a dataset of 8x8
images) are explicit checks at the end of :meth:`SSOTConfig.validate`; a task's defaults come
from its dataset's spec (:mod:`ssot.data.registry`).

Decisions on the points the paper leaves open (see the manual, docs/method.md):

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
import os
from dataclasses import dataclass, fields
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal

from ssot.data import registry
from ssot.errors import ConfigError
from ssot.results.record import is_run_record

#: Backbones the model factory knows (``"features"``: inputs are precomputed backbone features).
BACKBONES = ("resnet50", "digits_cnn", "features")
DEVICES = ("auto", "cpu", "cuda")
PRECISIONS = ("fp32", "bf16")
#: Values of ``ot_solver`` (the solvers live in :mod:`ssot.solvers`; kept here so config stays torch-free).
OT_SOLVERS = ("net", "vector", "sinkhorn")
#: Values of ``transform``, the image transforms (:mod:`ssot.data.benchmarks` for JPEGs,
#: :mod:`ssot.data.augment` for a decoded-image cache): ``default`` random resized crop + flip for
#: training, resize + centre crop for evaluation; ``paper`` the paper's "224x224 center crops of
#: 256x256 resized images" for both.
TRANSFORMS = ("default", "paper")
#: The words ``image_cache`` takes besides a path: ``auto`` (an image task's decoded-image cache,
#: prepared on first use, :mod:`ssot.data.image_cache`) and ``off`` (read the image files).
IMAGE_CACHE_MODES = ("auto", "off")
#: The field groups (module docstring).
GROUPS = ("searched", "pretraining", "task", "path", "runtime")


# ------------------------------------------------------------------------------------ constraints
@dataclass(frozen=True)
class Interval:
    """A number of ``kind`` (int or float) in an interval; ``None`` bounds are infinite."""

    kind: type
    low: float | None = None
    high: float | None = None
    closed: Literal["both", "left", "right", "neither"] = "left"

    def describe(self) -> str:
        name = "an int" if self.kind is int else "a float"
        left = "[" if self.closed in ("both", "left") and self.low is not None else "("
        right = "]" if self.closed in ("both", "right") and self.high is not None else ")"
        low = "-inf" if self.low is None else f"{self.low:g}"
        high = "inf" if self.high is None else f"{self.high:g}"
        return f"{name} in {left}{low}, {high}{right}"

    def check(self, name: str, value: Any) -> Any:
        if self.kind is int and isinstance(value, float) and value.is_integer():
            value = int(value)
        ok = isinstance(value, (int, float) if self.kind is float else int) and not isinstance(value, bool)
        ok = ok and math.isfinite(value)
        if ok and self.low is not None:
            ok = value >= self.low if self.closed in ("both", "left") else value > self.low
        if ok and self.high is not None:
            ok = value <= self.high if self.closed in ("both", "right") else value < self.high
        if not ok:
            raise ConfigError(f"The '{name}' parameter must be {self.describe()}. Got {value!r} instead.")
        return self.kind(value)

    def flag(self) -> dict[str, Any]:
        return {"type": self.kind}


@dataclass(frozen=True)
class Options:
    """One of a few strings."""

    values: tuple[str, ...]

    def describe(self) -> str:
        return f"one of {', '.join(map(repr, self.values))}"

    def check(self, name: str, value: Any) -> Any:
        if value not in self.values:
            raise ConfigError(f"The '{name}' parameter must be {self.describe()}. Got {value!r} instead.")
        return value

    def flag(self) -> dict[str, Any]:
        return {"type": str, "choices": self.values}


@dataclass(frozen=True)
class Boolean:
    """``True`` or ``False`` (a ``--flag`` / ``--no-flag`` pair on the command line)."""

    def describe(self) -> str:
        return "true or false"

    def check(self, name: str, value: Any) -> Any:
        if not isinstance(value, bool):
            raise ConfigError(f"The '{name}' parameter must be true or false. Got {value!r} instead.")
        return value

    def flag(self) -> dict[str, Any]:
        import argparse

        return {"action": argparse.BooleanOptionalAction}


@dataclass(frozen=True)
class PositiveInts:
    """A non-empty-or-empty sequence of positive ints (kept as a tuple)."""

    def describe(self) -> str:
        return "a list of positive ints"

    def check(self, name: str, value: Any) -> Any:
        if isinstance(value, list):
            value = tuple(value)
        if not (isinstance(value, tuple) and all(isinstance(d, int) and not isinstance(d, bool) and d > 0 for d in value)):
            raise ConfigError(f"The '{name}' parameter must be {self.describe()}. Got {value!r} instead.")
        return value

    def flag(self) -> dict[str, Any]:
        return {"type": int, "nargs": "+"}


@dataclass(frozen=True)
class OptionalPath:
    """A path (kept as text) or ``None``."""

    def describe(self) -> str:
        return "a path or null"

    def check(self, name: str, value: Any) -> Any:
        if value is None or isinstance(value, str):
            return value
        if isinstance(value, os.PathLike):
            return os.fspath(value)
        raise ConfigError(f"The '{name}' parameter must be {self.describe()}. Got {value!r} instead.")

    def flag(self) -> dict[str, Any]:
        return {"type": str, "metavar": "PATH"}


@dataclass(frozen=True)
class TaskName:
    """A task's name (known tasks: :mod:`ssot.data.registry`; an unknown one is refused when its
    data is built, naming every valid task)."""

    def describe(self) -> str:
        return "a task name"

    def check(self, name: str, value: Any) -> Any:
        if not isinstance(value, str) or not value:
            raise ConfigError(f"The '{name}' parameter must be {self.describe()}. Got {value!r} instead.")
        return value

    def flag(self) -> dict[str, Any]:
        return {"type": str}


@dataclass(frozen=True)
class ImageCache:
    """``auto``, ``off`` or the path of a decoded-image cache (kept as text); ``None``, what
    configs written before ``auto`` existed hold, is ``off`` (they read the image files)."""

    def describe(self) -> str:
        return "'auto', 'off' or the path of a decoded-image cache"

    def check(self, name: str, value: Any) -> Any:
        if value is None:
            return "off"
        if isinstance(value, os.PathLike):
            value = os.fspath(value)
        if not isinstance(value, str) or not value:
            raise ConfigError(f"The '{name}' parameter must be {self.describe()}. Got {value!r} instead.")
        return value

    def flag(self) -> dict[str, Any]:
        return {"type": str, "metavar": "auto|off|PATH"}


Constraint = Interval | Options | Boolean | PositiveInts | OptionalPath | TaskName | ImageCache


def param(default: Any, constraint: Constraint, help: str, *groups: str, flag: str | None = None) -> Any:
    """Declare a config field: its default, constraint, help and groups (:data:`GROUPS`);
    ``flag`` is its command-line flag when not its name's (``--source`` for ``source_dir``;
    :func:`ssot.cli.config_flag`)."""
    unknown = set(groups) - set(GROUPS)
    if unknown:
        raise ValueError(f"Unknown field group(s) {sorted(unknown)}; the groups are {', '.join(GROUPS)}.")
    metadata = MappingProxyType({"constraint": constraint, "help": help, "groups": frozenset(groups), "flag": flag})
    return dataclasses.field(default=default, metadata=metadata)


# ------------------------------------------------------------------------------------ the config
_FLOAT0, _FLOAT_POS = Interval(float, 0.0), Interval(float, 0.0, closed="neither")
_INT0, _INT1 = Interval(int, 0), Interval(int, 1)


@dataclass
class SSOTConfig:
    """Every setting of one SSOT training run (paper defaults unless noted).

    Build one with :meth:`for_task` (the task's defaults) or :meth:`from_dict` / :meth:`from_json`;
    both validate it.
    """

    task: str = param("digits", TaskName(), "task name: digits, P2H, H2P (embedded, no download; H2H and P2P are "
                      "their target-supervised references), custom (--source/--target folders) or a paper task such "
                      "as A2W, P2I, Ar2Cl, S2R", "pretraining", "task")
    # --- the searched hyperparameters ---
    lambda_ot: float = param(1.0, _FLOAT0, "weight of the OT loss L_OT", "searched")
    lambda_ent: float = param(1.0, _FLOAT0, "weight of the target entropy loss L_Ent (0 = ablation 'w/o Ent')", "searched")
    eps: float = param(1.0, _FLOAT0, "entropic regularisation of the semi-dual (paper: 1); 0 gives the hard c-transform",
                       "searched")
    potential_width: int = param(256, _INT1, "hidden width of the potential network g (paper: 256)", "searched")
    # --- schedule ---
    epochs: int = param(15, _INT0, "adaptation epochs after source pretraining")
    pretrain_epochs: int = param(8, _INT0, "source-only cross-entropy epochs before adaptation", "pretraining")
    iters_per_epoch: int = param(0, _INT0, "adaptation iterations per epoch; 0 = len(source) // batch_size")
    batch_size: int = param(32, Interval(int, 2), "source and target mini-batch size b_s = b_t (paper: 32)", "pretraining")
    lr: float = param(1e-4, _FLOAT_POS, "Adam learning rate of the bottleneck and classifier during adaptation")
    lr_pretrain: float = param(1e-3, _FLOAT_POS, "Adam learning rate during source pretraining", "pretraining")
    backbone_lr_mult: float = param(0.1, _FLOAT0, "multiplier of lr for a pretrained backbone (ResNet-50)", "pretraining")
    lr_g: float = param(1e-3, _FLOAT_POS, "Adam learning rate of the potential network g")
    g_steps: int = param(1, _INT0, "ascent steps of g per iteration")
    weight_decay: float = param(0.0, _FLOAT0, "Adam weight decay of f and eta", "pretraining")
    # --- open points of the paper and ablations ---
    pt_refresh: int = param(0, _INT0, "iterations between re-estimations of p_t; 0 = once per epoch")
    mask_grad: bool = param(True, Boolean(), "let gradients flow through the soft mask in the feature step")
    mask_scale: float = param(1.0, _FLOAT_POS, "factor applied to the soft mask (1 = the paper's row-stochastic mask)")
    use_class_weights: bool = param(True, Boolean(), "estimate importance weights m (false: m = 1)")
    use_mask: bool = param(True, Boolean(), "use the soft mask (false: S = 1)")
    ot_solver: str = param("net", Options(OT_SOLVERS), "net (potential network, the paper's method), vector (a free "
                           "potential per target sample, SGD) or sinkhorn (entropic OT per mini-batch); see ssot.solvers")
    lr_vector: float = param(0.5, _FLOAT_POS, "step size of the vector solver's per-sample ascent")
    sinkhorn_iters: int = param(100, _INT1, "maximum Sinkhorn iterations per mini-batch of the sinkhorn solver")
    # --- model ---
    backbone: str = param("digits_cnn", Options(BACKBONES), "resnet50, digits_cnn or features (precomputed features)",
                          "pretraining")
    pretrained: bool = param(True, Boolean(), "load ImageNet weights for ResNet-50 (from pretrained_path or the torch cache)",
                             "pretraining")
    pretrained_path: str | None = param(None, OptionalPath(), "explicit path of a ResNet-50 ImageNet state dict",
                                        "pretraining", "path")
    bottleneck_dims: tuple[int, ...] = param((256,), PositiveInts(), "hidden sizes of the bottleneck after the backbone "
                                             "(paper: 1024 512)", "pretraining")
    # --- data ---
    data_root: str | None = param(None, OptionalPath(), "root folder of the benchmark datasets, else $SSOT_DATA_ROOT",
                                  "pretraining", "task", "path", "runtime")
    features_path: str | None = param(None, OptionalPath(), "a .pt feature cache to train on instead of images (python -m "
                                      "ssot.features; implies backbone features)", "pretraining", "task", "path",
                                      flag="--features")
    source_dir: str | None = param(None, OptionalPath(), "task custom: source folder with one sub-folder per class",
                                   "task", "path", flag="--source")
    target_dir: str | None = param(None, OptionalPath(), "task custom: target folder with class sub-folders, or a flat "
                                   "folder of unlabeled images", "task", "path", flag="--target")
    image_cache: str = param("auto", ImageCache(), "the decoded-image cache of an image task (crops, flips and normalisation "
                             "run on the device): auto (the task's cache, prepared on first use in $SSOT_CACHE_DIR, else "
                             "<data root>/decoded, and shared by every later run; nothing for tasks that are not image "
                             "benchmarks), off (decode the image files every epoch) or the path of a cache (python -m "
                             "ssot.data prepare)", "pretraining", "task", "path")
    transform: str = param("default", Options(TRANSFORMS), "image transforms: default (random resized crop + flip for "
                           "training) or paper (224x224 centre crops of 256x256 resized images, training and evaluation)",
                           "pretraining", "task")
    image_size: int = param(224, _INT1, "crop size of the image transforms (paper: 224)", "pretraining", "task")
    resize_size: int = param(256, _INT1, "resize before the centre crop at evaluation (paper: 256)", "pretraining", "task")
    eval_batch_size: int = param(256, _INT1, "batch size of the no-gradient evaluation passes", "runtime")
    source_eval_samples: int = param(2000, _INT0, "size of the fixed source subset used for source accuracy (0 = all)",
                                     "pretraining")
    source_holdout: float = param(0.0, Interval(float, 0.0, 0.9), "fraction of the source set held out from training "
                                  "(0 = the paper's protocol: train on all source samples); the held-out samples are the "
                                  "ones source_acc, the DEV validator and the source-only evaluation use", "pretraining")
    dev_every: int = param(1, _INT1, "adaptation epochs between computations of the DEV validator (its 15 cross-fitted "
                           "domain classifiers, most of an epoch's evaluation on a CPU): every this many epochs and at "
                           "the last, the other epochs record none (1: every epoch)")
    num_workers: int = param(0, _INT0, "processes decoding images besides the main one (DataLoader workers of image "
                             "tasks; 0: the main process decodes)", "runtime")
    # --- execution ---
    num_threads: int = param(0, _INT0, "torch CPU threads (0: torch's default, all cores); results depend on it, so it "
                             "is recorded: a search's trials run with their CPU share")
    device: str = param("auto", Options(DEVICES), "auto (CUDA when available), cpu or cuda", "runtime")
    precision: str = param("fp32", Options(PRECISIONS), "fp32 or bf16 (autocast of f and eta; the OT maths stays in fp32)",
                           "pretraining")
    channels_last: bool = param(True, Boolean(), "ResNet-50 and its inputs in the channels_last memory format on CUDA "
                                "(faster convolutions; ignored on a CPU and for other backbones)", "runtime")
    compile: bool = param(False, Boolean(), "torch.compile the feature extractor on CUDA (ignored on CPU; "
                          "benchmarks/gpu.py measures whether it helps)", "runtime")
    seed: int = param(0, _INT0, "seed of every random number generator of the run", "pretraining")

    # ------------------------------------------------------------------ construction
    @classmethod
    def for_task(cls, task: str, **overrides: Any) -> SSOTConfig:
        """The defaults for ``task`` (its dataset's spec, :func:`ssot.data.registry.task_defaults`:
        the paper's settings for an image task, the small CNN for the embedded ones); ``overrides`` win.

        Raises
        ------
        ConfigError
            For an unknown task (naming every valid one) or an invalid value.
        """
        return cls.from_dict({"task": task, **registry.task_defaults(task), **overrides})

    @classmethod
    def from_dict(cls, values: dict[str, Any], *, source: str = "config") -> SSOTConfig:
        """Build and validate a config; unknown keys are refused with the list of valid ones."""
        if not isinstance(values, dict):
            raise ConfigError(f"The {source} must be a JSON object of config fields. Got {type(values).__name__}.")
        unknown = sorted(set(values) - set(CONFIG_FIELDS))
        if unknown:
            raise ConfigError(
                f"Unknown field(s) {', '.join(repr(u) for u in unknown)} in the {source}. "
                f"Valid fields: {', '.join(sorted(CONFIG_FIELDS))}."
            )
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
        if is_run_record(values):
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

    @property
    def image_cache_path(self) -> str | None:
        """The path ``image_cache`` names, ``None`` for ``auto`` and ``off`` (:data:`IMAGE_CACHE_MODES`)."""
        return None if self.image_cache in IMAGE_CACHE_MODES else self.image_cache

    # ------------------------------------------------------------------ validation
    def validate(self) -> None:
        """Check every field against its constraint (in declaration order, values converted to the
        field's type), then the cross-field rules; raise :class:`ConfigError` naming the first
        invalid field, its value and the valid range."""
        for f in fields(self):
            setattr(self, f.name, f.metadata["constraint"].check(f.name, getattr(self, f.name)))
        if self.ot_solver == "sinkhorn" and self.eps == 0:
            raise ConfigError("The 'eps' parameter must be a float in (0, inf) with ot_solver 'sinkhorn'. Got 0.0 instead.")
        dataset = registry.dataset_of(self.task)
        pixels = registry.DATASETS[dataset].image_pixels if dataset else None
        if pixels is not None and self.backbone == "resnet50":
            raise ConfigError(f"The 'backbone' parameter 'resnet50' does not fit task {self.task!r} ({pixels}x{pixels} "
                              "images). Use backbone 'digits_cnn'.")
        if self.features_path and self.backbone != "features":
            raise ConfigError(f"The 'features_path' parameter is set but 'backbone' is {self.backbone!r}. Use backbone 'features' to train on a feature cache.")
        if self.backbone == "features" and not self.features_path:
            raise ConfigError("The 'backbone' parameter is 'features' but 'features_path' is not set. Pass the path of a feature cache.")
        if self.image_cache_path and (self.backbone == "features" or not registry.task(self.task).spec.on_disk):
            raise ConfigError(f"The 'image_cache' parameter is set to a cache, but task {self.task!r} with backbone "
                              f"{self.backbone!r} does not read images of a benchmark. Use --image-cache auto (or off), or "
                              "pass the cache with an image task such as A2W.")


def _parameters_section() -> str:
    lines = ["", "    Parameters", "    ----------"]
    for f in fields(SSOTConfig):
        meta = f.metadata
        groups = f"; groups: {', '.join(sorted(meta['groups']))}" if meta["groups"] else ""
        lines.append(f"    {f.name} : {meta['constraint'].describe()}, default {f.default!r}{groups}")
        lines.append(f"        {meta['help']}.")
    return "\n".join(lines) + "\n"


SSOTConfig.__doc__ = (SSOTConfig.__doc__ or "").rstrip() + "\n" + _parameters_section()

#: Every field, in declaration order.
CONFIG_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(SSOTConfig))


def fields_in(group: str) -> tuple[str, ...]:
    """The fields of ``group`` (:data:`GROUPS`), in declaration order."""
    if group not in GROUPS:
        raise ValueError(f"The 'group' parameter must be one of {', '.join(GROUPS)}. Got {group!r} instead.")
    return tuple(f.name for f in fields(SSOTConfig) if group in f.metadata["groups"])


SEARCHED_FIELDS: tuple[str, ...] = fields_in("searched")
PRETRAINING_FIELDS: tuple[str, ...] = fields_in("pretraining")
TASK_FIELDS: tuple[str, ...] = fields_in("task")
PATH_FIELDS: tuple[str, ...] = fields_in("path")
RUNTIME_FIELDS: tuple[str, ...] = fields_in("runtime")


def defaults(names: tuple[str, ...] | list[str] = SEARCHED_FIELDS) -> dict[str, Any]:
    """The default of each field of ``names`` (the paper's, :class:`SSOTConfig`'s declarations;
    default: the searched hyperparameters, lambda_OT = lambda_Ent = eps = 1 and width 256)."""
    declared = {f.name: f.default for f in fields(SSOTConfig)}
    return {name: declared[name] for name in names if name in declared}
