"""Test-session settings shared by every test module."""
import os

# Keep every Ray process the tests start (in-process, `ray start`, subprocesses) on the loopback
# address: Ray otherwise binds a single-node cluster to the machine's interface IP. The variable
# also forbids adding *other* nodes to a cluster: the multi-node tests set it to 1 for their own
# cluster (tests/ray_cluster.py).
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
