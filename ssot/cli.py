"""The command-line harness shared by every command: exit statuses, errors and Ctrl-C, flags, outputs.

Commands
--------
Every command is a ``main(argv) -> int`` with an entry point in ``pyproject.toml``
(``[project.scripts]``), and can also be run as a module or a file:

==================  =====================================  ==========================================
entry point         module / file                          what it does
==================  =====================================  ==========================================
``ssot-train``      ``python -m ssot.train``               train once, or several seeds of one config
``ssot-features``   ``python -m ssot.features``            a feature cache of a frozen backbone
``ssot-feature-maps`` ``python -m ssot.feature_maps``      t-SNE of a saved run's two models
``ssot-data``       ``python -m ssot.data``                check the data root, fetch a dataset
``ssot-search``     ``python tune/search.py``              search the hyperparameters with Ray Tune
``ssot-export``     ``python tune/export.py``              the best config of each finished search
``ssot-confirm``    ``python tune/confirm.py``             re-run the top trials over seeds
``ssot-final``      ``python tune/final.py``               multi-seed final runs, table beside the paper
``ssot-ablation``   ``python tune/ablation.py``            the paper's ablations over seeds
``ssot-solvers``    ``python tune/solvers.py``             the OT solvers compared
``ssot-transfer``   ``python tune/transfer.py``            each task's best config replayed on every task
``ssot-dashboard``  ``python analysis/sensitivity.py``     the sensitivity dashboard
``ssot-selection``  ``python analysis/selection.py``       regret of label-free selection
``ssot-proxy``      ``python analysis/proxy.py``           how screens rank configs against end-to-end runs
``ssot-paper-figures`` ``python analysis/paper_figures.py`` the paper's figures from run records
``ssot-atlas``      ``python analysis/atlas.py``           the atlas across tasks: importance, tunability, transfer
==================  =====================================  ==========================================

Exit statuses (the same for every command)
------------------------------------------
=====  ======================================================================================
 0     done.
 1     finished and wrote its results, but some runs failed: a run diverged (train, final,
       confirm, ablation, solvers), a trial errored (search: fix the cause, ``--resume``), a
       checked task cannot run (``ssot-data check``). A diverged *trial* is a result of a
       search, not a failure.
 2     bad input, the user's to fix: an argument (an ``--name`` that is not one folder name,
       ``--num-cpus 0``, more GPUs than the cluster has), a missing or unreadable file or folder,
       an unknown task or a missing dataset (also for runs on Ray), an output that exists
       already (the dashboard without ``--overwrite`` too), cannot be written or is one of the
       command's inputs (also with ``--overwrite``), a storage location that cannot be used; a
       feature or decoded-image cache whose checksum or contents do not match (damaged: rebuild
       it); a search whose experiment another driver runs (its lock), a ``--resume`` whose flags
       differ from the experiment's, whose ``experiment.json`` or Ray state is missing, truncated
       or corrupt (Ray's state without a last good copy to put back), or whose trials do not
       match it; a torch file (checkpoint, shared pretrained
       model, ``--save-model`` file, cache) that does not load as tensors (never unpickled). All
       refused before any work starts, in one line naming the problem and the fix
       (docs/reliability.md).
 3     no usable result: the command ran but nothing counts (search: every trial errored or
       diverged).
 4     an external service failed while the command worked: a download or its verification
       (``ssot-data fetch``), the object store, or the storage of a search failing mid-search
       (read-only, full: results written meanwhile are kept, ``--resume`` once it is fixed).
 130   interrupted (Ctrl-C, also while a command's modules load; or a search that did not end:
       ``--resume`` continues). Commands that keep their runs continue when run again.
=====  ======================================================================================

Every ``main`` is :func:`command`: it parses the arguments and runs the work through :func:`run`, which prints a user error
(:class:`ssot.errors.SSOTError`) as one line ``error: ...`` without a traceback and returns its
status (:func:`exit_status`), and turns Ctrl-C into ``interrupted`` and 130.

Scripts
-------
``python tune/search.py`` runs a file of the installed project (``pip install -e .``): Python puts
the file's folder first on ``sys.path``, and no folder of the project is named after a package it
imports (the Plotly figures are ``analysis/charts``, not ``analysis/plotly``), so the file finds
the project and its dependencies as an entry point does, and no module edits ``sys.path``
(``tests/ssot/test_cli.py`` runs every command both ways).

Flags
-----
The same thing has the same flag and default everywhere: :func:`add_config_flags` (every field of
:class:`ssot.config.SSOTConfig`), :func:`add_seeds`, :func:`add_device`, :func:`add_ray_flags`
(``--num-cpus``, ``--address``), :func:`add_trial_resources` (``--cpus-per-trial``,
``--gpus-per-trial``). Outputs are checked before any work by :func:`check_output`.
"""
from __future__ import annotations

import argparse
import sys
import typing
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ssot.errors import ExternalError, ResultsError, SSOTError, one_line
from ssot.results import storage

__all__ = ["EXIT_OK", "EXIT_FAILED", "EXIT_USAGE", "EXIT_NO_RESULT", "EXIT_EXTERNAL", "EXIT_INTERRUPTED", "exit_status",
           "run", "command", "runs_status", "check_output", "add_config_flags", "config_from_args", "add_seeds", "check_seeds", "add_device",
           "add_ray_flags", "add_trial_resources", "check_resources_args"]

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_NO_RESULT, EXIT_EXTERNAL, EXIT_INTERRUPTED = 0, 1, 2, 3, 4, 130


def exit_status(exc: BaseException) -> int:
    """The status of a command that stopped on ``exc``: 4 for an external service
    (:class:`ssot.errors.ExternalError`), 130 for Ctrl-C, 2 for any other user error."""
    if isinstance(exc, KeyboardInterrupt):
        return EXIT_INTERRUPTED
    return EXIT_EXTERNAL if isinstance(exc, ExternalError) else EXIT_USAGE


def run(body: Callable[[], int], *, interrupted: str | Callable[[], str] = "") -> int:
    """Run a command's work: its status, or the status of the error that stopped it.

    A :class:`ssot.errors.SSOTError` is printed as one line ``error: <message>`` on stderr (no
    traceback); Ctrl-C prints ``interrupted`` (then ``; <interrupted>`` when given, e.g. what is
    kept and how to continue; a function giving it when the work learnt it).
    """
    try:
        return body()
    except SSOTError as exc:
        print(f"error: {one_line(exc)}", file=sys.stderr)
        return exit_status(exc)
    except KeyboardInterrupt:
        said = interrupted() if callable(interrupted) else interrupted
        print("interrupted" + (f"; {said}" if said else ""), file=sys.stderr)
        return EXIT_INTERRUPTED


def runs_status(records: Iterable[Any]) -> int:
    """0 when every run record completed, else 1 (some runs failed: :data:`EXIT_FAILED`)."""
    return EXIT_OK if all(getattr(r, "completed", None) or (isinstance(r, dict) and r.get("status") == "completed")
                          for r in records) else EXIT_FAILED


def command(parser: argparse.ArgumentParser | Callable[[], argparse.ArgumentParser], work: Callable[[argparse.Namespace], int],
            argv: Sequence[str] | None = None, *, interrupted: str = "", kept: Callable[[argparse.Namespace], Any] | None = None) -> int:
    """A command's ``main``: parse ``argv`` with ``parser``, then :func:`run` ``work(args)``.

    ``parser`` may be a function that builds it: a command whose imports are slow (the dashboard's
    figures) imports them there and in ``work``, so that Ctrl-C during those imports is
    ``interrupted`` too, not a traceback. ``interrupted`` is what Ctrl-C adds to ``interrupted``;
    a command that keeps its finished runs where ``kept(args)`` says (and continues there when run
    again) says so instead.
    """
    said = [interrupted]

    def body() -> int:
        args = (parser if isinstance(parser, argparse.ArgumentParser) else parser()).parse_args(argv)
        if kept is not None:
            said[0] = f"finished runs are kept in {kept(args)}, rerun the same command to continue"
        return work(args)

    return run(body, interrupted=lambda: said[0])


# ------------------------------------------------------------------------------------ outputs
#: Refuse, before any work, an output location that cannot be used (by trying to create it) or a
#: result file that exists: every command checks its outputs with it. Owned by the module of
#: output locations, :mod:`ssot.results.storage` (local paths and URIs).
check_output = storage.check_output


# ------------------------------------------------------------------------------------ flags
def add_config_flags(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """One flag per field of :class:`ssot.config.SSOTConfig` (``--lambda-ot``, ``--no-use-mask``,
    ...), typed and explained by the field's metadata; read back by :func:`config_from_args`."""
    from ssot.config import SSOTConfig

    group = parser.add_argument_group("config fields (ssot.config.SSOTConfig; default: the task's)")
    for f in typing.cast(Any, SSOTConfig).__dataclass_fields__.values():
        meta = f.metadata
        names = ["--" + f.name.replace("_", "-"), *([meta["flag"]] if meta["flag"] else [])]
        default = list(f.default) if isinstance(f.default, tuple) else f.default
        group.add_argument(*names, dest=f.name, default=None, help=f"{meta['help']} (config default: {default})".replace("%", "%%"),
                           **meta["constraint"].flag())
    return parser


def config_from_args(args: argparse.Namespace) -> Any:
    """The :class:`ssot.config.SSOTConfig` of parsed flags: the task's defaults <- ``--config``
    file (when the parser has it) <- explicit flags; ``--features PATH`` (a feature cache) implies
    ``--backbone features``."""
    from ssot.config import CONFIG_FIELDS, SSOTConfig

    overrides = {name: getattr(args, name) for name in CONFIG_FIELDS if getattr(args, name) is not None}
    if overrides.get("features_path") and "backbone" not in overrides:
        overrides["backbone"] = "features"  # --features PATH: train on the cache
    config_file = getattr(args, "config", None)
    if config_file is not None:
        base = SSOTConfig.from_json(config_file).to_dict()
        return SSOTConfig.from_dict({**base, **overrides}, source=f"config file {config_file} with flags")
    task = overrides.pop("task", "digits")
    return SSOTConfig.for_task(task, **overrides)


def add_seeds(parser: argparse.ArgumentParser, default: Sequence[int] | None = (0, 1, 2), help: str = "") -> None:
    """``--seeds S [S ...]``: one run per seed (checked by :func:`check_seeds`)."""
    shown = " ".join(map(str, default)) if default else "the config's seed"
    parser.add_argument("--seeds", type=int, nargs="+", default=None if default is None else list(default),
                        help=f"{help or 'seeds, one run each'} (default: {shown})")


def check_seeds(seeds: Sequence[int] | None) -> None:
    """Refuse repeated seeds (each seed is one run record)."""
    if seeds is not None and len(set(seeds)) != len(seeds):
        raise ResultsError(f"The '--seeds' argument has repeated seeds. Got {' '.join(map(str, seeds))} instead.")


def add_device(parser: argparse.ArgumentParser) -> None:
    """``--device``: override the configs' device (the config's own choices)."""
    from ssot.config import DEVICES

    parser.add_argument("--device", choices=DEVICES, help="override the configs' device")


def add_ray_flags(parser: argparse.ArgumentParser | Any) -> None:
    """``--num-cpus`` (CPUs of the local Ray instance, default all) and ``--address``."""
    parser.add_argument("--num-cpus", type=int, help="CPUs of the local Ray instance (default: all)")
    parser.add_argument("--address", help="join an existing Ray cluster ('auto' or host:port)")


def add_trial_resources(parser: argparse.ArgumentParser | Any, what: str = "trial", cpus_default: float | None = 1.0,
                        cpus_auto: str = "") -> None:
    """``--gpus-per-trial`` and ``--cpus-per-trial``: each run's resource request (``cpus_default``
    None: decided by the command, as ``cpus_auto`` says)."""
    parser.add_argument("--gpus-per-trial", type=float, help=f"GPUs per {what}, fractions allowed (0.25 packs 4 per GPU); "
                        "default 1 if the cluster has GPUs else 0")
    shown = f"default {cpus_default:g}" if cpus_default is not None else f"default: {cpus_auto}"
    parser.add_argument("--cpus-per-trial", type=float, default=cpus_default, help=f"CPUs per {what} ({shown})")


def check_resources_args(args: argparse.Namespace) -> None:
    """Refuse ``--num-cpus`` < 1, a ``--cpus-per-trial`` that is not a number > 0 and a
    ``--gpus-per-trial`` that is not a number >= 0 (NaN and infinity included), for the flags the
    parser has."""
    import math

    num_cpus = getattr(args, "num_cpus", None)
    if num_cpus is not None and num_cpus < 1:
        raise ResultsError(f"The '--num-cpus' argument must be an int in [1, inf). Got {num_cpus} instead.")
    cpus, gpus = getattr(args, "cpus_per_trial", None), getattr(args, "gpus_per_trial", None)
    if cpus is not None and not (math.isfinite(cpus) and cpus > 0):
        raise ResultsError(f"The '--cpus-per-trial' argument must be a number > 0. Got {cpus:g} instead.")
    if gpus is not None and not (math.isfinite(gpus) and gpus >= 0):
        raise ResultsError(f"The '--gpus-per-trial' argument must be a number >= 0 (fractions pack trials on a GPU). "
                           f"Got {gpus:g} instead.")
