"""What a search chose for speed, and why: one owner for the defaults a user did not set.

Before its trials start, a search decides four things (:func:`choose`); each is one line printed
by the search (``<task>: <name>: <why>``) and one entry of ``experiment.json``'s ``choices``
(``{"value": ..., "why": ...}``: the same text), and each can be turned off:

``image cache``
    an image task's trials train on its decoded-image cache (:mod:`ssot.data.image_cache`),
    prepared here, in the driver, before any trial starts, so that every trial finds it ready.
    Off: ``--image-cache off`` (decode the image files every epoch), or a cache of one's own:
    ``--image-cache PATH``.
``packing``
    image trials on a local GPU machine share each GPU, with NVIDIA MPS, when their footprint fits
    (:mod:`tune.packing`, :mod:`tune.mps`). Off: ``--gpus-per-trial 1`` (one per GPU), or
    ``--no-mps`` to pack without MPS.
``precision``
    the precision of the trials' feature extractor and classifier (:data:`PRECISION_RULE`: what
    was measured decides it). Changed by ``--set precision=fp32|bf16``.
``channels_last``
    ResNet-50 and its inputs in the channels_last memory format on CUDA. Off:
    ``--set channels_last=false``.

What MPS then did (started a daemon, found one, could not) is ``experiment.json``'s ``mps`` and
the summary's line (:func:`tune.mps.describe`).
"""
from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ssot.config import SSOTConfig
from ssot.data import image_cache
from ssot.data.registry import task as task_spec
from tune import packing
from tune.cluster import trials_of
from tune.options import SearchOptions

#: The names of the choices, in the order they are printed.
NAMES = ("image cache", "packing", "precision", "channels_last")
#: The precision image trials get when the user sets none, and the measurement behind it
#: (docs/gpu.md, "Precision"; ``python benchmarks/precision.py``): bf16 would become the GPU
#: default only if it were not worse than fp32 on the embedded tasks.
PRECISION_RULE = ("fp32", "bf16 lost 2.2 points of accuracy against fp32 on P2H over 3 seeds (benchmarks/precision.py, docs/gpu.md)")


@dataclass(frozen=True)
class Choice:
    """One choice: its name (:data:`NAMES`), what was chosen (JSON), and why, in one line."""

    name: str
    value: Any
    why: str

    def line(self) -> str:
        return f"{self.name}: {self.why}"

    def record(self) -> dict[str, Any]:
        return {"value": self.value, "why": self.why}


@dataclass
class Chosen:
    """The search's options and base config with the choices applied, and the choices."""

    options: SearchOptions
    base: SSOTConfig
    choices: list[Choice] = field(default_factory=list)

    def lines(self) -> list[str]:
        return [c.line() for c in self.choices]

    def record(self) -> dict[str, Any]:
        """``experiment.json``'s ``choices``."""
        return {c.name: c.record() for c in self.choices}


def image_trials(options: SearchOptions, base: SSOTConfig) -> bool:
    """Whether the search's trials fine-tune ResNet-50 on images of a benchmark (what packing and
    the image defaults are for); trials of a feature cache, populations and embedded tasks are not."""
    return base.backbone == "resnet50" and options.members == 1 and task_spec(base.task).spec.on_disk


def choose(options: SearchOptions, base: SSOTConfig, *, cpus_per_trial: float, address: str | None = None,
           ray_running: bool = False, num_cpus: int | None = None, log: Callable[[str], None] | None = None,
           probe: bool = True) -> Chosen:
    """The choices of a search (module docstring): prepares the image cache (``log`` gets its
    progress lines; a progress bar when ``options.verbose``), decides packing (``probe``: measure
    a trial's footprint on the GPU, else compute it) and records the precision and channels_last.
    ``address`` or ``ray_running``: the search joins a Ray whose GPUs it does not know."""
    chosen = Chosen(options, base)
    cache = _cache(base, options.verbose, log)
    joined = bool(address) or ray_running
    local = None if joined else packing.local_gpus()  # this machine's GPUs: a local Ray gets them
    if options.gpus_per_trial is not None:
        on_gpu: bool | None = options.gpus_per_trial > 0
    else:
        on_gpu = None if local is None else bool(local[0])
    precision = _precision(chosen, on_gpu)  # before packing: a trial's footprint depends on it
    packed = _packing(chosen, cpus_per_trial, local, num_cpus, probe)
    chosen.choices = [cache, packed, precision, _channels_last(chosen.base, on_gpu)]
    return chosen


def _cache(base: SSOTConfig, verbose: int, log: Callable[[str], None] | None) -> Choice:
    if image_cache.applies(base):
        prepared = image_cache.ensure(base, progress=verbose > 0, log=log)
        return Choice("image cache", {"mode": "auto", **prepared.record()},
                      f"decoded images {prepared.detail}; --image-cache off decodes the image files every epoch")
    if base.image_cache_path:
        return Choice("image cache", {"mode": "path", "path": base.image_cache_path},
                      f"decoded images {base.image_cache_path} (--image-cache)")
    if base.backbone == "features":
        return Choice("image cache", {"mode": "not used"}, "not used: the trials train on a feature cache")
    if not task_spec(base.task).spec.on_disk:
        return Choice("image cache", {"mode": "not used"}, f"not used: task {base.task} holds its images in memory")
    return Choice("image cache", {"mode": "off"}, "off (--image-cache off): the trials decode the image files every epoch")


def _packing(chosen: Chosen, cpus_per_trial: float, local: tuple[list[packing.GPU] | None, str] | None,
             num_cpus: int | None, probe: bool) -> Choice:
    """``local``: this machine's GPUs and where they were read (``None``: the search joins a Ray
    cluster, whose GPUs are not known before joining it)."""
    options, base = chosen.options, chosen.base
    with_mps = "with MPS" if options.mps else "without MPS (--no-mps)"
    given = options.gpus_per_trial
    if given is not None:
        k = int(1 / given) if 0 < given < 1 else 1
        how = f"{k} trials per GPU {with_mps}" if k > 1 else ("one trial per GPU" if given >= 1 else "trials on CPUs")
        return Choice("packing", {"gpus_per_trial": given, "trials_per_gpu": k}, f"{how} (--gpus-per-trial {given:g})")
    if local is None:
        why = ("their memory is not known before joining it (--gpus-per-trial packs them; MPS is started on each node: "
               "docs/gpu.md)" if image_trials(options, base) else "--gpus-per-trial packs them")
        return Choice("packing", {"gpus_per_trial": None}, f"one GPU per trial where the cluster has GPUs: {why}")
    gpus, source = local
    if not gpus:
        why = "no GPU visible" if gpus is not None else f"no GPU known ({source})"
        return Choice("packing", {"gpus_per_trial": None}, f"trials run on CPUs: {why}")
    if not image_trials(options, base):
        return Choice("packing", {"gpus_per_trial": None}, "one trial per GPU: trials of feature caches, populations and "
                      "embedded tasks keep that rule (--gpus-per-trial packs them)")
    num_classes = task_spec(base.task).spec.num_classes
    footprint, how = packing.measure_footprint(base, num_classes) if probe else (None, "the probe is off")
    if footprint is None:
        footprint, how = packing.estimate_footprint(base, num_classes), f"computed from the config ({how})"
    cpus = num_cpus or os.cpu_count() or 1
    k, why = packing.pack(gpus, footprint, cpus=cpus, cpus_per_trial=cpus_per_trial, trials=trials_of(options))
    value = {"gpus_per_trial": 1.0, "trials_per_gpu": k, "footprint_gib": round(footprint / 2**30, 2), "footprint": how,
             "gpus": [dataclasses.asdict(g) for g in gpus]}
    if k < 2:
        chosen.options = dataclasses.replace(options, gpus_per_trial=1.0)
        return Choice("packing", value, f"{why} (footprint {how})")
    share = packing.gpus_per_trial(k)
    chosen.options = dataclasses.replace(options, gpus_per_trial=share)
    value["gpus_per_trial"] = share
    return Choice("packing", value, f"{why}, {with_mps}: --gpus-per-trial {share:g} (footprint {how}); --gpus-per-trial 1 "
                  "runs one per GPU")


def _precision(chosen: Chosen, on_gpu: bool | None) -> Choice:
    base = chosen.base
    if "precision" in chosen.options.base:
        return Choice("precision", base.precision, f"{base.precision} (--set precision={base.precision})")
    default, measured = PRECISION_RULE
    if default == "fp32" or not image_trials(chosen.options, base):
        return Choice("precision", base.precision, f"{base.precision}, the default: {measured}; --set precision=bf16 changes it")
    if not on_gpu:
        where = "the trials run on CPUs" if on_gpu is False else "a cluster's GPUs are not known before joining it"
        return Choice("precision", base.precision, f"{base.precision}: bf16 is the default of image trials on GPUs, and {where}; "
                      "--set precision=bf16 changes it")
    chosen.base = base.replace(precision="bf16")
    return Choice("precision", "bf16", f"bf16 on the GPU: {measured}; --set precision=fp32 turns it off")


def _channels_last(base: SSOTConfig, on_gpu: bool | None) -> Choice:
    if base.backbone != "resnet50":
        return Choice("channels_last", False, f"not used: backbone {base.backbone} (ResNet-50 on CUDA only)")
    if not base.channels_last:
        return Choice("channels_last", False, "off (--set channels_last=false)")
    if on_gpu is False:
        return Choice("channels_last", False, "not used: the trials run on CPUs (ResNet-50 on CUDA only)")
    where = "on CUDA" if on_gpu else "on CUDA, where the cluster gives trials a GPU"
    return Choice("channels_last", True, f"on: ResNet-50 and its inputs in channels_last {where}; "
                  "--set channels_last=false turns it off")

