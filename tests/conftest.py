"""Settings and fixtures shared by every test package (helpers that are not fixtures: :mod:`tests.fixtures`)."""
from __future__ import annotations

import os
import signal
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from tests.fixtures import QUICK

# Keep every Ray process the tests start (in-process, `ray start`, subprocesses) on the loopback
# address: Ray otherwise binds a single-node cluster to the machine's interface IP. The variable
# also forbids adding *other* nodes to a cluster: the multi-node tests set it to 1 for their own
# cluster (tests/fixtures/ray_cluster.py).
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")

# The tests that press Ctrl-C on a command (SIGINT) need it handled as in a terminal. A test run
# started in the background without job control ignores SIGINT, and every process it starts
# inherits that (the command then never sees the Ctrl-C): restore Python's handler here, so that
# the commands the tests start get the default disposition.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)
signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGINT])

# One compute thread per test process, and for every process the tests start (commands, Ray's
# workers, servers): the suite runs in two processes on two cores, and each test's searches start
# more processes. With torch's default (a thread per core) they oversubscribe the cores, and
# OpenMP's threads then wait for each other: a 11 s test took 168 s in the suite. A test that
# wants more threads says so itself.
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The files of the long tests first (those with a test marked ``slow``, then the other files
    of ``tests/tune`` and ``tests/benchmarks``: real searches), each file's tests in their order:
    the two processes of ``-n 2 --dist loadfile`` take whole files as they free up, and a long
    file taken last kept one process busy alone for the suite's last two minutes."""
    slow = {item.path for item in items if item.get_closest_marker("slow")}
    heavy = {item.path for item in items if item.path.parent.name in ("tune", "benchmarks")}
    items.sort(key=lambda item: (item.path not in slow, item.path not in heavy))  # stable: a file's tests stay together


@pytest.fixture(scope="session", autouse=True)
def one_torch_thread():
    """The test process's own torch computations on one thread (see OMP_NUM_THREADS above)."""
    try:
        import torch
    except ImportError:
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def ray_local():
    """A local Ray of 2 CPUs for the module's tests (never another test's cluster)."""
    ray = pytest.importorskip("ray")
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


@pytest.fixture(scope="session")
def digits_task():
    """The embedded digits task (read-only: shared by the whole session)."""
    from ssot.data.digits import build_digits_task

    return build_digits_task()


@pytest.fixture
def quick_config() -> Callable[..., Any]:
    """``quick_config(**overrides)``: the digits config of a quick run (:data:`tests.fixtures.QUICK`) with
    ``overrides`` (:func:`tests.fixtures.experiments.quick_config`)."""
    from tests.fixtures import experiments

    return experiments.quick_config


@pytest.fixture
def quick_flags() -> list[str]:
    """The command-line flags of a quick run (:data:`tests.fixtures.QUICK`), without a progress bar."""
    return [arg for name, value in QUICK.items() for arg in (f"--{name.replace('_', '-')}", str(value))] + ["--quiet"]


@pytest.fixture
def a_file(tmp_path: Path) -> Path:
    """A regular file where an output folder could be asked for."""
    path = tmp_path / "regular-file"
    path.write_text("in the way")
    return path


@pytest.fixture(scope="session")
def finished_search(tmp_path_factory: pytest.TempPathFactory) -> SimpleNamespace:
    """A real finished TPE search of 3 digits trials x 2 epochs (local Ray, 2 CPUs), its Optuna study
    in sqlite, and what its files held each time a trial ended (``snapshots``)."""
    pytest.importorskip("ray")
    from tests.fixtures.live import Snapshots
    from tune.experiment import run_search
    from tune.options import SearchOptions

    root = tmp_path_factory.mktemp("finished-search")
    epochs = 2
    snapshots = Snapshots(root / "runs" / "live" / "digits")
    options = SearchOptions(task="digits", num_samples=3, base={**QUICK, "epochs": epochs}, storage_path=str(root / "runs"),
                            name="live", early_stop=False, max_concurrent=2, verbose=0,
                            optuna_storage=f"sqlite:///{root}/optuna.db", callbacks=[snapshots])
    outcome = run_search(options, num_cpus=2)
    return SimpleNamespace(root=root, results=root / "runs", folder=Path(outcome.path), outcome=outcome,
                           snapshots=snapshots.seen, storage=options.optuna_storage, epochs=epochs)


@pytest.fixture(scope="module")
def s3_server():
    """A moto S3 server on 127.0.0.1 (moto[server], the test extra) and the standard AWS variables
    that point pyarrow (and Ray) at it."""
    moto_server = pytest.importorskip("moto.server")
    from tests.fixtures.servers import free_port

    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=free_port(), verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    env = {"AWS_ENDPOINT_URL": f"http://{host}:{port}", "AWS_ACCESS_KEY_ID": "testing",
           "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1"}
    yield env
    server.stop()


@pytest.fixture
def s3(s3_server, monkeypatch, request):
    """A new bucket (named after the test) in the server, with the AWS variables set."""
    import boto3

    for key, value in s3_server.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("AWS_ENDPOINT_URL_S3", raising=False)
    bucket = request.node.name.replace("_", "-")[:50].strip("-")
    boto3.client("s3", endpoint_url=s3_server["AWS_ENDPOINT_URL"]).create_bucket(Bucket=bucket)
    return bucket
