"""A machine's rates: what each unit of a study's work costs there (the rates file's one owner).

The cost model (:mod:`tune.costs`) turns a study's work (iterations, images, runs, pages) into
seconds with these rates. They come from a short calibration on this machine
(:func:`tune.calibrate.calibrate`, on generated data of each dataset's real sizes) or from a
rates file recorded earlier (:func:`read_rates`): one JSON object,

``format``, ``machine``, ``device``, ``cpus``, ``gpus``, ``measured``
    the version of this format (:data:`FORMAT`), the machine in words, ``cpu`` or ``cuda``, its
    CPUs and GPUs, and when and how the rates were obtained;
``models``: backbone -> :class:`ModelRates`
    runs on images (confirmation, final runs) and the feature cache's encoding;
``screens``: dataset -> :class:`ScreenRates`
    a population on a feature cache of that dataset's sizes (the screen);
``report``: :class:`ReportRates`
    the dashboards, the atlas and the index page;
``ray_start_s``, ``packing``
    starting Ray once per study run; trials packed on a GPU (``{"runs_per_gpu": 4, "speedup": 2.14}``:
    the throughput of 4 runs sharing a GPU under MPS, over one run's), absent when not measured;
``sources``: a field's dotted name -> where its number comes from
    (``"models.resnet50.ssot_iter_s": "docs/gpu.md: SSOT step 2,154 images/s ..."``).

The project ships :data:`SHIPPED` files (``tune/shipped_rates/<name>.json``; ``--rates nvidia-h200``).
Files are written once (never overwritten) and atomically.
"""
from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from ssot.errors import ConfigError, ResultsError
from ssot.results import storage
from ssot.results.outputs import check_output

__all__ = ["FORMAT", "SHIPPED", "ModelRates", "ScreenRates", "ReportRates", "Rates", "read_rates", "write_rates", "rates_path"]

FORMAT = 1
#: The rates files shipped with the project, by name (``--rates NAME``).
SHIPPED: dict[str, Path] = {path.stem: path for path in sorted((Path(__file__).parent / "shipped_rates").glob("*.json"))}


@dataclass
class ModelRates:
    """Runs of one backbone on images, in seconds.

    ``ce_iter_s`` one source-pretraining iteration (``batch_size`` images, forward, backward, Adam);
    ``ssot_iter_s`` one SSOT iteration (``batch_size`` source + ``batch_size`` target images);
    ``eval_img_s`` an evaluation pass, per image: the forward pass and the epoch's validators;
    ``encode_img_s`` the feature cache's encoding, per image (reading and the frozen forward pass);
    ``prepare_img_s`` decoding an image once into the decoded-image cache (0: none is used);
    ``run_s`` a run's fixed cost in a warm worker (task, model and optimisers built);
    ``worker_s`` the start of new Ray workers (one per run at once, started together) before their
    first runs (imports, first data build);
    ``shared`` how much slower a run is while the machine runs as many as it holds at once, over a
    run alone (memory bandwidth, and on a shared machine the other users' load): 1 when one run
    holds the machine (a GPU).
    """

    ce_iter_s: float
    ssot_iter_s: float
    eval_img_s: float
    encode_img_s: float
    run_s: float
    worker_s: float
    prepare_img_s: float = 0.0
    shared: float = 1.0


@dataclass
class ScreenRates:
    """A population of ``P`` members on a feature cache of one dataset's sizes, in seconds.

    ``iter_s`` one stacked iteration, ``a + b * P`` as ``[a, b]``; ``eval_img_s`` an epoch's
    evaluation per image (target and evaluation source), ``a + b * P``; ``pretrain_iter_s`` one
    iteration of the host's source pretraining on the features; ``search_s`` a search's fixed cost
    (Ray Tune's set-up, its trials' worker starts, its outputs) beyond the populations' work.
    """

    iter_s: tuple[float, float]
    eval_img_s: tuple[float, float]
    pretrain_iter_s: float
    search_s: float

    def iteration(self, members: int) -> float:
        return self.iter_s[0] + self.iter_s[1] * members

    def evaluation(self, members: int, images: int) -> float:
        return images * (self.eval_img_s[0] + self.eval_img_s[1] * members)


@dataclass
class ReportRates:
    """The report's processes, in seconds: ``dashboard_s`` a dashboard's fixed cost (the process and
    its imports), ``dashboard_row_s`` per row of ``trials.csv`` (trial x epoch), ``dashboard_boot_s``
    per bootstrap resample and trial; ``atlas_s`` the atlas's fixed cost, ``atlas_task_s`` per task;
    ``index_s`` the index page."""

    dashboard_s: float
    dashboard_row_s: float
    dashboard_boot_s: float
    atlas_s: float
    atlas_task_s: float
    index_s: float


@dataclass
class Rates:
    """A machine's rates (module docstring)."""

    machine: str
    device: str
    cpus: int
    gpus: int
    measured: str
    models: dict[str, ModelRates]
    screens: dict[str, ScreenRates]
    report: ReportRates
    ray_start_s: float
    packing: dict[str, float] | None = None
    sources: dict[str, str] = field(default_factory=dict)

    def model(self, backbone: str) -> ModelRates:
        if backbone not in self.models:
            raise ConfigError(f"The rates of {self.machine} have no rates for the {backbone} backbone (they have "
                              f"{', '.join(self.models) or 'none'}). Calibrate on this machine (drop --rates).")
        return self.models[backbone]

    def screen(self, dataset: str) -> ScreenRates:
        if dataset not in self.screens:
            raise ConfigError(f"The rates of {self.machine} have no screen rates for {dataset} (they have "
                              f"{', '.join(self.screens) or 'none'}). Calibrate on this machine (drop --rates).")
        return self.screens[dataset]

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out = {"format": FORMAT, **out}
        for screen in out["screens"].values():
            screen["iter_s"], screen["eval_img_s"] = list(screen["iter_s"]), list(screen["eval_img_s"])
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str) -> Rates:
        """The rates of ``data`` (a parsed file), checked: every rate a finite number >= 0."""
        if not isinstance(data, Mapping) or data.get("format") != FORMAT:
            raise ResultsError(f"{where} is not a rates file of format {FORMAT} (tune/rates.py).")
        try:
            models = {k: ModelRates(**v) for k, v in data["models"].items()}
            screens = {k: ScreenRates(**{**v, "iter_s": tuple(v["iter_s"]), "eval_img_s": tuple(v["eval_img_s"])})
                       for k, v in data["screens"].items()}
            rates = cls(machine=str(data["machine"]), device=str(data["device"]), cpus=int(data["cpus"]), gpus=int(data["gpus"]),
                        measured=str(data["measured"]), models=models, screens=screens, report=ReportRates(**data["report"]),
                        ray_start_s=float(data["ray_start_s"]), packing=data.get("packing"), sources=dict(data.get("sources") or {}))
        except (KeyError, TypeError, ValueError) as exc:
            raise ResultsError(f"{where} is not a complete rates file ({type(exc).__name__}: {exc}); see tune/rates.py.") from None
        bad = [name for name, value in _numbers(rates) if not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0)]
        if bad:
            raise ResultsError(f"{where}: {bad[0]} must be a finite number >= 0.")
        return rates


def _numbers(rates: Rates) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = [("ray_start_s", rates.ray_start_s)]
    for name, model in rates.models.items():
        out += [(f"models.{name}.{f.name}", getattr(model, f.name)) for f in fields(model)]
    for name, screen in rates.screens.items():
        out += [(f"screens.{name}.iter_s", v) for v in screen.iter_s] + [(f"screens.{name}.eval_img_s", v) for v in screen.eval_img_s]
        out += [(f"screens.{name}.pretrain_iter_s", screen.pretrain_iter_s), (f"screens.{name}.search_s", screen.search_s)]
    out += [(f"report.{f.name}", getattr(rates.report, f.name)) for f in fields(rates.report)]
    return out


def rates_path(name: str) -> Path:
    """The file ``--rates NAME`` names: a shipped file's name (:data:`SHIPPED`) or a path."""
    if name in SHIPPED:
        return SHIPPED[name]
    path = Path(name)
    if not path.is_file():
        raise ConfigError(f"--rates {name} is neither a file nor a shipped rates file ({', '.join(SHIPPED) or 'none'}). "
                          "Drop --rates to calibrate on this machine.")
    return path


def read_rates(name: str) -> Rates:
    """The rates of ``--rates NAME`` (:func:`rates_path`), checked."""
    path = rates_path(name)
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise ResultsError(f"--rates {path} cannot be read as JSON ({exc}).") from None
    return Rates.from_dict(data, f"--rates {path}")


def write_rates(rates: Rates, path: str | Path) -> Path:
    """Write ``rates`` to a new file ``path`` (never overwritten; written whole)."""
    path = Path(path)
    check_output(path, "--save-rates", folder=False)
    storage.write_text(str(path), json.dumps(rates.to_dict(), indent=2) + "\n")
    return path
