"""Real Ray clusters on this machine for the tests: a head and worker nodes started with
``ray start`` on 127.0.0.1, stopped by their own processes only.

``ray stop --force`` would kill every Ray process of the machine (the test session's own Ray, other
users' clusters); :func:`stop_cluster` kills only the processes that name this cluster's port, and
:meth:`Cluster.kill_node` only the process group of one worker node (each is started in a session
of its own with ``ray start --block``, so its raylet, agents and trial workers share that group).
"""
from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

RAY = str(Path(sys.executable).parent / "ray")


def free_port() -> int:
    """A TCP port nothing listens on now (the OS picks it)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def cluster_env(**extra: str) -> dict[str, str]:
    """The environment of the cluster's commands and of the search that joins it.

    An explicit address never auto-enables Ray's token authentication (Ray >= 2.5x): client and
    cluster must agree on ``RAY_AUTH_MODE``; the token is ``~/.ray/auth_token``, made by ``ray start``.
    The test session keeps its own Ray on the loopback address with
    ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`` (tests/conftest.py), which also forbids adding nodes (a
    worker node then looks for the head at the machine's interface address): a cluster sets it to 1
    and puts every node on 127.0.0.1 with ``--node-ip-address``.
    """
    return {**os.environ, "RAY_ADDRESS": "", "RAY_AUTH_MODE": "token", "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "1", **extra}


@dataclass
class Cluster:
    """A head started by :func:`ray_cluster` and the worker nodes added to it."""

    port: int
    env: dict[str, str]
    nodes: list[subprocess.Popen] = field(default_factory=list)

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def add_node(self, num_cpus: int, resources: dict[str, float], timeout: float = 90.0) -> subprocess.Popen:
        """``ray start --address`` a worker node with ``resources``; returns once the cluster has them."""
        before = self.resources()
        node = subprocess.Popen(
            [RAY, "start", "--address", self.address, "--node-ip-address", "127.0.0.1", "--num-cpus", str(num_cpus),
             "--resources", json.dumps(resources), "--block", "--disable-usage-stats"],
            env=self.env, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, start_new_session=True)
        self.nodes.append(node)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            now = self.resources()
            if all(now.get(k, 0) >= before.get(k, 0) + v for k, v in resources.items()):
                return node
            if node.poll() is not None:
                raise RuntimeError(f"ray start --address {self.address} exited with {node.returncode}")
            time.sleep(1.0)
        raise TimeoutError(f"the node with {resources} did not join {self.address} within {timeout:g} s")

    def kill_node(self, node: subprocess.Popen) -> None:
        """Kill a worker node at once (SIGKILL to its process group: raylet, agents, trial workers),
        as when a machine is lost."""
        _kill_group(node.pid, signal.SIGKILL)
        node.wait(timeout=30)

    def resources(self) -> dict[str, float]:
        """The cluster's total resources, as ``ray status`` reports them."""
        proc = subprocess.run([RAY, "status", "--address", self.address], capture_output=True, text=True,
                              env=self.env, timeout=60)
        totals = {}
        for name, value in re.findall(r"^\s*[\d.]+/([\d.]+)\s+(\w+)\s*$", proc.stdout, re.M):
            totals[value] = float(name)
        return totals


@contextmanager
def ray_cluster(num_cpus: int, resources: dict[str, float] | None = None, **env: str) -> Iterator[Cluster]:
    """A Ray head on 127.0.0.1 at a free port (``env``: extra variables, e.g. Ray's health-check
    settings); every process of the cluster and its worker nodes is stopped on exit, even on failure."""
    port = free_port()
    cluster = Cluster(port, cluster_env(**env))
    command = [RAY, "start", "--head", "--node-ip-address", "127.0.0.1", "--port", str(port), "--num-cpus", str(num_cpus),
               "--include-dashboard=false", "--disable-usage-stats"]
    if resources:
        command += ["--resources", json.dumps(resources)]
    try:
        start = subprocess.run(command, capture_output=True, text=True, env=cluster.env, timeout=120)
        assert start.returncode == 0, start.stderr[-2000:]
        yield cluster
    finally:
        for node in cluster.nodes:
            _kill_group(node.pid, signal.SIGKILL)
        stop_cluster(port)


def _kill_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        return
    deadline = time.time() + 15
    while time.time() < deadline and _group_members(pgid):
        time.sleep(0.2)


def _group_members(pgid: int) -> list[int]:
    members = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            fields = stat.rsplit(")", 1)[-1].split()
            if len(fields) > 2 and int(fields[2]) == pgid and fields[0] != "Z":
                members.append(int(entry.name))
    return members


def stop_cluster(port: int | str) -> None:
    """Stop only the cluster at ``port`` (its processes name its port in their command line), and
    forget it like ``ray stop`` does, or a later ``ray.init()`` connects to its address."""
    mine = re.compile(rf"[:=]{port}\b")
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if mine.search(cmd):
            pids.append(int(entry.name))
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.time() + 15
        while time.time() < deadline and any(Path(f"/proc/{pid}").exists() for pid in pids):
            time.sleep(0.2)
    current = Path(os.environ.get("RAY_TMPDIR", "/tmp")) / "ray" / "ray_current_cluster"
    if current.is_file() and current.read_text().strip().endswith(f":{port}"):
        current.unlink()
