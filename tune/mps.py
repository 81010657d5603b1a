"""NVIDIA MPS for trials that share a GPU (``--gpus-per-trial`` below 1).

Processes that share a GPU without MPS take turns on it (time-slicing): four ResNet-50 trials on
one H100 gave 1.06x the throughput of one. With the MPS control daemon running, their kernels
run side by side (1.97x at four trials, measured by an earlier session; ``benchmarks/gpu.py``
measures it again). A search whose trials ask for a fraction of a GPU therefore:

1. uses an MPS daemon already running on this machine (its pipe directory
   ``$CUDA_MPS_PIPE_DIRECTORY``, else ``/tmp/nvidia-mps``, holds a ``control`` pipe), or
2. starts one for the search's lifetime: ``nvidia-cuda-mps-control -d`` with its own
   ``CUDA_MPS_PIPE_DIRECTORY`` and ``CUDA_MPS_LOG_DIRECTORY`` (a new folder under the temporary
   folder), exported in this process *before Ray starts*, so the local Ray instance and every
   trial worker inherit them; stopped with ``echo quit | nvidia-cuda-mps-control`` when the
   search ends, also after an error or Ctrl-C (and at the interpreter's exit as a last resort).

It falls back with one warning line, and the search goes on time-slicing, where MPS cannot
start: the binary is not on ``PATH`` (no NVIDIA driver tools), the daemon refuses to start (no
GPU, no permission, ...). A search that joins a Ray cluster (``--address``) or a Ray started
before it does not manage MPS: the workers of ``ray start`` have the environment of that
command, so MPS is each node's, started before ``ray start`` (``docs/gpu.md``). ``--no-mps``
turns it off. ``experiment.json`` records what happened (``mps``) and the search's summary says it.
"""
from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BINARY = "nvidia-cuda-mps-control"
PIPE_ENV, LOG_ENV = "CUDA_MPS_PIPE_DIRECTORY", "CUDA_MPS_LOG_DIRECTORY"
DEFAULT_PIPE_DIR = "/tmp/nvidia-mps"
#: ``how`` of a record: a daemon started for the search, one found running, MPS off (with a reason),
#: not needed (trials do not share a GPU), or the cluster's own business.
STARTED, EXISTING, OFF, NOT_NEEDED, CLUSTER = "started", "existing", "off", "not needed", "cluster"


def shares_gpu(gpus_per_trial: float | None) -> bool:
    """Whether trials ask for a fraction of a GPU (several trials on one GPU)."""
    return gpus_per_trial is not None and 0 < gpus_per_trial < 1


@dataclass
class MPS:
    """What a search does about MPS; :meth:`stop` ends a daemon it started (once)."""

    on: bool | None
    how: str
    detail: str
    pipe_dir: str | None = None
    _folder: str | None = None
    _env: dict[str, str | None] = field(default_factory=dict)

    def record(self) -> dict[str, Any]:
        """The ``mps`` entry of ``experiment.json``."""
        return {"on": self.on, "how": self.how, "detail": self.detail}

    def stop(self) -> None:
        """Quit the daemon this search started and restore the environment; a no-op otherwise."""
        if self.how != STARTED or self._folder is None:
            return
        folder, self._folder = self._folder, None
        env = {**os.environ, PIPE_ENV: str(Path(folder) / "pipe"), LOG_ENV: str(Path(folder) / "log")}
        try:
            done = subprocess.run([BINARY], input="quit\n", env=env, capture_output=True, text=True, timeout=60)
            ok = done.returncode == 0
        except (OSError, subprocess.SubprocessError):
            ok = False
        for name, value in self._env.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        if ok:
            shutil.rmtree(folder, ignore_errors=True)
        else:
            _warn(f"the MPS daemon of the search did not quit cleanly; its pipe and log folder {folder} is kept "
                  f"(stop it with: echo quit | {PIPE_ENV}={folder}/pipe {BINARY})")


def describe(record: dict[str, Any] | None) -> str | None:
    """The summary's line on MPS (``None`` when trials did not share a GPU)."""
    if not record or record.get("how") == NOT_NEEDED:
        return None
    state = {True: "on", False: "off", None: "not managed by the search"}[record.get("on")]
    return f"  MPS {state}: {record.get('detail')}"


def _warn(text: str) -> None:
    print(f"warning: {text}", file=sys.stderr, flush=True)


def _fallback(reason: str) -> MPS:
    _warn(f"MPS not used ({reason}); trials sharing a GPU take turns on it. See docs/gpu.md, or pass --no-mps.")
    return MPS(False, OFF, reason)


def start(gpus_per_trial: float | None, *, enabled: bool = True, joined: str | None = None) -> MPS:
    """MPS for a search whose trials take ``gpus_per_trial`` GPUs (module docstring), before Ray starts.

    ``joined`` names the Ray cluster the search joins (or a Ray started before it): MPS is then
    left to its nodes.
    """
    if not shares_gpu(gpus_per_trial):
        return MPS(False, NOT_NEEDED, "trials do not share a GPU")
    if not enabled:
        return MPS(False, OFF, "turned off by --no-mps")
    if joined:
        return MPS(None, CLUSTER, f"the search joins {joined}; start MPS on each GPU node before `ray start` (docs/gpu.md)")
    pipe = os.environ.get(PIPE_ENV) or DEFAULT_PIPE_DIR
    if Path(pipe, "control").exists():
        return MPS(True, EXISTING, f"a daemon already running (pipe directory {pipe})", pipe)
    binary = shutil.which(BINARY)
    if binary is None:
        return _fallback(f"{BINARY} is not on PATH")
    folder = tempfile.mkdtemp(prefix="ssot-mps-")  # short: the pipe's path must fit a Unix socket name
    dirs = {PIPE_ENV: str(Path(folder) / "pipe"), LOG_ENV: str(Path(folder) / "log")}
    for path in dirs.values():
        Path(path).mkdir()
    try:
        done = subprocess.run([binary, "-d"], env={**os.environ, **dirs}, stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=60)
        error = (done.stderr or done.stdout).strip().splitlines()[-1:] if done.returncode else None
    except (OSError, subprocess.SubprocessError) as exc:
        error = [f"{type(exc).__name__}: {exc}"]
    if error is not None:
        shutil.rmtree(folder, ignore_errors=True)
        return _fallback(f"{BINARY} -d failed: {error[0] if error else 'exit status ' + str(done.returncode)}")
    state = MPS(True, STARTED, f"a daemon started for the search (pipe directory {dirs[PIPE_ENV]})", dirs[PIPE_ENV],
                folder, {name: os.environ.get(name) for name in dirs})
    os.environ.update(dirs)  # before ray.init: the local Ray instance and its workers inherit them
    atexit.register(state.stop)
    return state
