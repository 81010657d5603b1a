"""The command-line flags of the commands that run on Ray (search, confirm, ablation, solvers,
transfer): the Ray instance (``--num-cpus``, ``--address``) and each run's resources
(``--cpus-per-trial``, ``--gpus-per-trial``), added and checked the same way everywhere. The
command-line harness itself (parsers, exit statuses, errors) is :mod:`ssot.cli`.
"""
from __future__ import annotations

import argparse
import math
from typing import Any

from ssot.errors import ResultsError

__all__ = ["add_ray_flags", "add_trial_resources", "check_resources_args"]


def add_ray_flags(parser: argparse.ArgumentParser | Any) -> None:
    """``--num-cpus`` (CPUs of the local Ray instance, default all) and ``--address``."""
    parser.add_argument("--num-cpus", type=int, help="CPUs of the local Ray instance (default: all)")
    parser.add_argument("--address", help="join an existing Ray cluster: 'auto' or host:port (default: start a local one)")


def add_trial_resources(parser: argparse.ArgumentParser | Any, what: str = "trial", cpus_default: float | None = 1.0,
                        cpus_auto: str = "") -> None:
    """``--gpus-per-trial`` and ``--cpus-per-trial``: each run's resource request (``cpus_default``
    None: decided by the command, as ``cpus_auto`` says)."""
    parser.add_argument("--gpus-per-trial", type=float, help=f"GPUs per {what}, fractions allowed (0.25 packs 4 per GPU) "
                        "(default: 1 if the cluster has GPUs, else 0)")
    parser.add_argument("--cpus-per-trial", type=float, default=cpus_default,
                        help=f"CPUs per {what}" + (f" (default: {cpus_auto})" if cpus_default is None else ""))


def check_resources_args(args: argparse.Namespace) -> None:
    """Refuse ``--num-cpus`` < 1, a ``--cpus-per-trial`` that is not a number > 0 and a
    ``--gpus-per-trial`` that is not a number >= 0 (NaN and infinity included), for the flags the
    parser has."""
    num_cpus = getattr(args, "num_cpus", None)
    if num_cpus is not None and num_cpus < 1:
        raise ResultsError(f"The '--num-cpus' argument must be an int in [1, inf). Got {num_cpus} instead.")
    cpus, gpus = getattr(args, "cpus_per_trial", None), getattr(args, "gpus_per_trial", None)
    if cpus is not None and not (math.isfinite(cpus) and cpus > 0):
        raise ResultsError(f"The '--cpus-per-trial' argument must be a number > 0. Got {cpus:g} instead.")
    if gpus is not None and not (math.isfinite(gpus) and gpus >= 0):
        raise ResultsError(f"The '--gpus-per-trial' argument must be a number >= 0 (fractions pack trials on a GPU). "
                           f"Got {gpus:g} instead.")
