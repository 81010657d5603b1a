"""The machine a search runs on: the Ray instance, and how trials divide the machine.

- :func:`cpu_share`: a trial's CPUs when ``--cpus-per-trial`` is not given: one per trial, or for
  populations their share of the machine (one population on 2 cores gets both: it trains its
  members in 2 processes of one torch thread each, :mod:`ssot.shards`, instead of leaving a core
  idle). The share becomes the trial config's ``num_threads`` (:func:`tune.options.base_config`),
  which a population reads as its number of worker processes.
- :func:`connected`: the Ray instance of a search (joined with ``--address``, else a new local one
  shut down at the end, with a watchdog, :mod:`tune.reaper`, that ends its processes if the driver is
  killed), the resources checked against the request, and the environment Ray Tune reads.
"""
from __future__ import annotations

import contextlib
import logging
import math
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ssot.errors import ConfigError, SSOTError
from tune import mps, reaper
from tune.options import SearchOptions

_USER_ENV = frozenset(os.environ)  # Ray settings the user chose are left alone


def check_reachable(address: str, timeout: float = 5.0) -> None:
    """Refuse within ``timeout`` seconds an explicit ``HOST:PORT`` where nothing listens (``ray.init``
    would wait for ever, deaf to Ctrl-C); ``auto`` and ``ray://`` addresses are left to Ray."""
    import socket

    host, sep, port = address.rpartition(":")
    if address == "auto" or "://" in address or not sep or not port.isdigit():
        return
    try:
        socket.create_connection((host or "127.0.0.1", int(port)), timeout=timeout).close()
    except OSError as exc:
        raise SSOTError(f"Cannot connect to the Ray cluster at --address {address}: nothing answers there within "
                        f"{timeout:g} s ({exc}). Start it (`ray start --head --port {port}`) or check the address "
                        "(`ray status` on the head node).") from None


def trials_of(options: SearchOptions, configs: int | None = None) -> int:
    """Ray trials a search runs: one per ``--population`` members of its configs (``num_samples``, or
    ``configs`` when given, e.g. every cell of a grid)."""
    return math.ceil((configs or options.num_samples) / options.members)


def cpu_share(options: SearchOptions, address: str | None, num_cpus: int | None) -> tuple[float, str]:
    """A trial's CPUs and why: ``--cpus-per-trial`` when given; else 1, or for populations on a local
    Ray the machine's CPUs divided among the populations that can run at once (a cluster's nodes
    are not known before joining it: there populations get 1 CPU unless ``--cpus-per-trial`` says)."""
    if options.cpus_per_trial is not None:
        return float(options.cpus_per_trial), "--cpus-per-trial"
    if options.members == 1:
        return 1.0, "one CPU per trial (--cpus-per-trial to change)"
    if address:
        return 1.0, "one CPU per population on a cluster (--cpus-per-trial gives each more)"
    machine = num_cpus or os.cpu_count() or 1
    at_once = min(trials_of(options), options.max_concurrent or machine, machine)
    share = max(1, machine // at_once)
    return float(share), f"the {machine} CPUs shared by {at_once} population(s) at a time"


def check_resources(options: SearchOptions, cpus_per_trial: float) -> float:
    """Refuse, within seconds, a request the Ray cluster cannot ever satisfy; returns GPUs per trial."""
    import ray

    total = ray.cluster_resources()
    gpus, cpus = total.get("GPU", 0.0), total.get("CPU", 0.0)
    want = options.gpus_per_trial if options.gpus_per_trial is not None else (1.0 if gpus >= 1 else 0.0)
    if want > gpus:
        fix = (f"a value <= {gpus:g} (fractions such as 0.5 pack several trials per GPU), or 0 for CPUs" if gpus > 0
               else "0: the cluster has no GPU, trials run on CPUs")
        raise ConfigError(f"--gpus-per-trial {want:g} asks for more GPUs than the Ray cluster has ({gpus:g}); "
                          f"trials would stay PENDING forever. Use --gpus-per-trial {fix}.")
    if cpus_per_trial > cpus:
        if cpus < 1:  # e.g. a head node started with --num-cpus 0 and no worker node yet
            raise ConfigError(f"The Ray cluster has no CPU ({cpus:g}): no trial can run. Add nodes with CPUs "
                              "(`ray start --address ...`), or drop --address to start a local Ray.")
        raise ConfigError(f"--cpus-per-trial {cpus_per_trial:g} exceeds the {cpus:g} CPUs of the Ray cluster. "
                          f"Use a value <= {cpus:g}.")
    for name, amount in options.trial_resources.items():
        if amount > total.get(name, 0.0):
            raise ConfigError(f"--trial-resources asks for {amount:g} {name!r} per trial but the Ray cluster has "
                              f"{total.get(name, 0.0):g}; trials would stay PENDING forever. Start a node with "
                              f"`ray start --address ... --resources '{{\"{name}\": N}}'` or drop it.")
    return want


def runnable_slots(options: SearchOptions, cpus_per_trial: float, gpus_per_trial: float) -> int:
    """How many trials can run at once: the cluster's CPUs (and GPUs) over a trial's request,
    capped by ``max_concurrent``; at least 1. Nodes added later by an autoscaler are not counted."""
    import ray

    total = ray.cluster_resources()
    slots = int(total.get("CPU", 0.0) // cpus_per_trial)
    if gpus_per_trial > 0:
        slots = min(slots, int(total.get("GPU", 0.0) // gpus_per_trial))
    for name, amount in options.trial_resources.items():
        slots = min(slots, int(total.get(name, 0.0) // amount))
    if options.max_concurrent:
        slots = min(slots, options.max_concurrent)
    return max(1, slots)


@dataclass
class Cluster:
    """The Ray instance a search runs on and how its trials divide it."""

    cpus_per_trial: float
    gpus_per_trial: float
    slots: int  # trials that run at once
    mps: dict[str, Any] | None  # what MPS did (tune.mps), for experiment.json

    def describe(self, options: SearchOptions, why: str) -> str:
        """One line: the machine and how the trials share it."""
        import ray

        total = ray.cluster_resources()
        unit = f"population(s) of up to {options.members} configs" if options.members > 1 else "trial(s)"
        gpus = f", {self.gpus_per_trial:g} GPU" if self.gpus_per_trial else ""
        workers = int(self.cpus_per_trial)
        # ssot.shards: on CPUs a population trains its members in one process per CPU, one torch thread each
        how = (f"; each trains its members in {min(workers, options.members)} process(es) of one torch thread"
               if options.members > 1 and not self.gpus_per_trial and workers > 1 else "")
        return (f"machine: {total.get('CPU', 0):g} CPUs, {total.get('GPU', 0):g} GPUs; {self.slots} {unit} at a time, "
                f"{self.cpus_per_trial:g} CPU{gpus} each ({why}){how}")


def quiet_ray(verbose: int) -> None:
    """The environment Ray Tune reads, set before it starts (a user's own settings are kept)."""
    os.environ.setdefault("TUNE_WARN_EXCESSIVE_EXPERIMENT_CHECKPOINT_SYNC_THRESHOLD_S", "0")
    if verbose < 2:  # one line per errored trial (TrialLines), not Ray's whole traceback
        os.environ.setdefault("TUNE_PRINT_ALL_TRIAL_ERRORS", "0")
        # a failing storage: the one line of the search (and of its live files), not Ray's traceback every 5 s
        for name in ("ray.train._internal.syncer", "ray.tune.execution.experiment_state"):
            logging.getLogger(name).setLevel(logging.CRITICAL)


@contextlib.contextmanager
def connected(options: SearchOptions, cpus_per_trial: float, *, address: str | None = None,
              num_cpus: int | None = None) -> Iterator[Cluster]:
    """The Ray instance of a search, its resources checked: joined at ``address`` (``"auto"`` for the
    one ``ray start`` runs here), else a new local one (``num_cpus`` CPUs, default all) that is shut
    down at the end, its processes ended by :mod:`tune.reaper` if this driver is killed."""
    import ray

    quiet_ray(options.verbose)
    started_ray = not ray.is_initialized()
    # MPS for trials that share a GPU: found or started before Ray, whose workers inherit its environment
    sharing = mps.start(options.gpus_per_trial, enabled=options.mps,
                        joined=(f"the Ray cluster at {address}" if address else None) or (None if started_ray else "a Ray started before the search"))
    watchdog = reaper.start() if started_ray and not address else reaper.Reaper(None)
    try:
        if started_ray:
            try:
                # without --address, always a new local instance: never join whatever cluster Ray last
                # recorded on this machine (/tmp/ray/ray_current_cluster), which may be unrelated or stale
                ray.init(address=address or "local", num_cpus=None if address else num_cpus, include_dashboard=False,
                         ignore_reinit_error=True, log_to_driver=options.verbose > 1)
            except ConnectionError as exc:
                raise SSOTError(
                    f"Cannot connect to the Ray cluster at --address {address} ({exc}). Check that it runs (`ray status`); "
                    "a cluster with token authentication needs RAY_AUTH_MODE=token and its token "
                    "(~/.ray/auth_token or RAY_AUTH_TOKEN) when the address is explicit, or use --address auto on the head node."
                ) from None
        try:
            gpus = check_resources(options, cpus_per_trial)
            slots = runnable_slots(options, cpus_per_trial, gpus)
            # Ray keeps a single trial pending by default with searchers, so trials started one at a
            # time, each waiting for the previous one's worker to boot; more pending trials than
            # slots made TPE sample ahead blindly (random search). Exactly as many as can run.
            if "TUNE_MAX_PENDING_TRIALS_PG" not in _USER_ENV:
                os.environ["TUNE_MAX_PENDING_TRIALS_PG"] = str(slots)
            yield Cluster(cpus_per_trial, gpus, slots, sharing.record())
        finally:
            if started_ray:
                ray.shutdown()
    finally:
        watchdog.release()
        sharing.stop()
