"""Fixtures: clusters on 127.0.0.1 started once per test module, stopped by process id afterwards."""
from __future__ import annotations

import os
import sys
import tempfile
from typing import Iterator, List

import pytest

# The package under test is the source tree's, not whatever else is installed.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from cluster import LocalCluster  # noqa: E402
from fake_coordinator import FakeCoordinator  # noqa: E402

import gpool  # noqa: E402


def _cluster(**options: object) -> Iterator[LocalCluster]:
    keep = os.environ.get("GPOOL_TEST_KEEP") == "1"
    directory = tempfile.mkdtemp(prefix="gpool-py-test.")
    # Tasks run as nobody (the worker's task isolation) and must reach their files in the workers' data dirs.
    os.chmod(directory, 0o755)
    cluster = LocalCluster(directory, **options)  # type: ignore[arg-type]
    try:
        yield cluster.start()
    except BaseException:
        sys.stderr.write(cluster.logs())
        raise
    finally:
        cluster.stop()
        if keep:
            sys.stderr.write(f"kept {directory}\n")
        else:
            import shutil
            shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture(scope="module")
def cluster() -> Iterator[LocalCluster]:
    """One coordinator, two workers of two simulated GPUs each, plaintext; sessions can open on it."""
    yield from _cluster(workers=2, sessions=True)


@pytest.fixture(scope="module")
def secure_cluster() -> Iterator[LocalCluster]:
    """One coordinator and one worker under CurveZMQ; the admin's key is admin.key."""
    yield from _cluster(workers=1, secure=True)


@pytest.fixture(scope="module")
def replicated_cluster() -> Iterator[LocalCluster]:
    """Three coordinator replicas (Raft), no workers."""
    yield from _cluster(replicas=3, workers=0)


@pytest.fixture(scope="module")
def token_cluster() -> Iterator[LocalCluster]:
    """One coordinator and one worker, plaintext with a cluster token (--token-file)."""
    yield from _cluster(workers=1, token="py-sdk-test-token")


@pytest.fixture
def client(cluster: LocalCluster) -> Iterator[gpool.Client]:
    with cluster.client() as c:
        yield c


@pytest.fixture
def fakes() -> Iterator[List[FakeCoordinator]]:
    """Scripted fake coordinators made by fake_coordinator.fake(fakes, ...), closed after the test."""
    made: List[FakeCoordinator] = []
    yield made
    for server in made:
        server.close()
