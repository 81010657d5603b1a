"""Worker processes of a population: how a population uses every CPU of its slot.

On a CPU, a population trial is given several CPUs (``tune/cluster.py``'s share: one population
on a 2-core machine gets both). Torch's intra-op threads do not use them well here: the stacked
products of a small network are short, and on a shared machine every one of them waits at a
barrier for a thread the scheduler has parked (measured: two threads made a population epoch
several times slower under load, docs/screening.md). So a population of P members on ``W`` CPUs
trains ``W`` stacks of about ``P / W`` members at once, one torch thread each: the first in its
own process, the others in worker processes (:class:`Shard`), each stack training and evaluating
its members (the validators included) on the same batches. The population ranks the members at
its rungs, spreads the survivors over the workers again, and checkpoints the stacks' states,
which split into the members' states (:func:`ssot.population.member_states`), so a checkpoint
resumes with any number of workers.

A worker is ``python -c`` running a function of the population's choosing (``entry``, e.g.
``ssot.population:serve_stack``) with one end of a socket pair. Messages are ``torch.save`` bytes
of tensors and plain values, read back with ``weights_only=True``; only the first, the task data
from this process, is unpickled in full (it comes from the parent, over a socket nobody else
holds). A worker ends when it is told to (:meth:`Shard.close`) or when the population's process
ends (its socket closes); an error in a worker is raised in the population's process with the
worker's traceback.

Two waits are kept off the population's path (measured on 2 cores, a P2H population of 16: 2.3 s
and 0.9 s of a 33 s screen). The first message (megabytes of task data) is sent by a thread: a
socket holds a few hundred kilobytes, so a plain send would wait for the worker to import torch
before the population could pretrain. And a worker told to close leaves with ``os._exit`` once its
output is flushed: it holds nothing to save, and the interpreter's tear-down of torch took longer
than its work of an epoch's end.
"""
from __future__ import annotations

import io
import os
import socket
import subprocess
import sys
import threading
import traceback
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection
from typing import Any

import torch

Handler = Callable[[str, Any], Any]


def workers_for(config: Any, device: torch.device, members: int, workers: int | None = None) -> int:
    """How many processes train a population of ``members``: ``workers`` when given, else on a
    CPU the config's ``num_threads`` (the trial's CPUs; 0: torch's threads), at most one per
    member; on a GPU one."""
    if workers is None:
        workers = (config.num_threads or torch.get_num_threads()) if device.type == "cpu" else 1
    return max(1, min(int(workers), members))


def split(items: Sequence[int], parts: int, cost: Callable[[int], float] = lambda item: 1.0) -> list[list[int]]:
    """``items`` in at most ``parts`` groups of near-equal total ``cost`` (the costliest first, each
    to the group with the least so far), each group in the items' order, none empty."""
    groups: list[list[int]] = [[] for _ in range(max(1, parts))]
    loads = [0.0] * len(groups)
    for item in sorted(items, key=lambda i: -cost(i)):
        k = min(range(len(groups)), key=lambda g: (loads[g], len(groups[g])))
        groups[k].append(item)
        loads[k] += cost(item)
    order = {item: n for n, item in enumerate(items)}
    return [sorted(group, key=order.__getitem__) for group in groups if group]


def _send(conn: Connection, message: Any) -> None:
    buffer = io.BytesIO()
    torch.save(message, buffer)
    conn.send_bytes(buffer.getvalue())


def _receive(conn: Connection, *, trusted: bool = False) -> Any:
    return torch.load(io.BytesIO(conn.recv_bytes()), weights_only=not trusted)


class WorkerError(RuntimeError):
    """A worker process failed; the message holds its traceback."""


class Shard:
    """A worker process running ``entry`` (``"module:function"``, called with the socket's file
    descriptor), given ``setup`` first (unpickled in full by the worker); then :meth:`call` and
    :meth:`start`/:meth:`finish` send it operations (``(name, payload)``) to answer."""

    def __init__(self, entry: str, setup: Any):
        module, function = entry.split(":")
        mine, theirs = socket.socketpair()
        code = f"import sys; from {module} import {function}; {function}(int(sys.argv[1])); from ssot.shards import leave; leave()"
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}  # this process's imports
        self.process = subprocess.Popen([sys.executable, "-c", code, str(theirs.fileno())], pass_fds=(theirs.fileno(),), env=env)
        theirs.close()
        self.conn = Connection(mine.detach())
        self.pending = False
        buffer = io.BytesIO()
        torch.save(setup, buffer)
        self._setup_error: BaseException | None = None
        self._setup = threading.Thread(target=self._send_setup, args=(buffer.getvalue(),), name="shard-setup", daemon=True)
        self._setup.start()  # the worker reads it once it has imported torch; this process goes on meanwhile

    def _send_setup(self, data: bytes) -> None:
        try:
            self.conn.send_bytes(data)
        except BaseException as exc:  # raised where the next operation is sent (:meth:`_sent_setup`)
            self._setup_error = exc

    def _sent_setup(self) -> None:
        """Wait until the setup is sent, so that every operation follows it; raise its failure."""
        self._setup.join()
        if self._setup_error is not None:
            error, self._setup_error = self._setup_error, None
            raise WorkerError(f"a population's worker process could not be given its task ({error}); "
                              f"exit status {self.process.poll()}") from error

    def start(self, name: str, payload: Any = None) -> None:
        """Send operation ``name``; its answer is read by :meth:`finish` (the worker runs meanwhile)."""
        self._sent_setup()
        _send(self.conn, (name, payload))
        self.pending = True

    def finish(self) -> Any:
        """The answer to the operation :meth:`start` sent; a failure in the worker raises :class:`WorkerError`."""
        self.pending = False
        try:
            answer = _receive(self.conn)
        except EOFError:
            raise WorkerError(f"a population's worker process ended (exit status {self.process.wait()}); its output says why") from None
        if "error" in answer:
            raise WorkerError(f"a population's worker process failed:\n{answer['error']}")
        return answer["ok"]

    def call(self, name: str, payload: Any = None) -> Any:
        """Operation ``name`` and its answer."""
        self.start(name, payload)
        return self.finish()

    def close(self) -> None:
        """End the worker (told to; killed if it does not within 10 s)."""
        if self.process.poll() is None:
            try:
                self._sent_setup()
                _send(self.conn, ("close", None))
                self.process.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired, WorkerError):
                self.process.kill()
                self.process.wait()
        self.conn.close()

    def __del__(self) -> None:
        if getattr(self, "process", None) is not None and self.process.poll() is None:
            self.process.kill()


def leave() -> None:
    """End a worker process at once, its output flushed (``os._exit``: no interpreter tear-down)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(0)


def serve(fd: int, make: Callable[[Any], Handler]) -> None:
    """A worker's loop: ``make(setup)`` gives the handler of every later operation; answers each
    with its result or its traceback; returns on ``close`` or when the population's process ends."""
    conn = Connection(fd)
    try:
        handle = make(_receive(conn, trusted=True))
        while True:
            name, payload = _receive(conn)
            if name == "close":
                return
            try:
                answer = {"ok": handle(name, payload)}
            except Exception:
                answer = {"error": traceback.format_exc()}
            _send(conn, answer)
    except EOFError:
        return
    finally:
        conn.close()
