"""A CurveZMQ cluster: users by key, a viewer's PermissionDenied, a key the cluster does not know."""
from __future__ import annotations

import os

import pytest

import gpool
from cluster import LocalCluster


def test_admin_key_is_the_bootstrap_admin(secure_cluster: LocalCluster) -> None:
    with secure_cluster.client() as admin:
        me = admin.whoami()
        assert me.kind == "user" and me.name == "admin"
        job = admin.run(name="py-secure", command="echo secret", timeout_s=60)
        assert job.state == "Succeeded" and admin.logs(job).text == "secret\n"


def test_viewer_may_read_but_not_cancel(secure_cluster: LocalCluster) -> None:
    viewer_key = secure_cluster.make_key("viv")
    with secure_cluster.client() as admin:
        admin.call("UpdateUser", {"op": "create", "spec": {"name": "viv", "keys": [viewer_key],
                                                           "roles": [{"role": "viewer"}]}}, "UpdateUserReply")
        job = admin.submit(name="py-admins", command="sleep 600")
        try:
            with secure_cluster.client("viv") as viewer:
                assert viewer.whoami().name == "viv"
                assert viewer.job(job).name == "py-admins"  # read-job: a viewer has it
                with pytest.raises(gpool.PermissionDenied) as caught:
                    viewer.cancel(job)
                assert caught.value.code == "PermissionDenied" and "cancel-job" in caught.value.message
                with pytest.raises(gpool.PermissionDenied):
                    viewer.submit(name="py-viewer", command="true")
        finally:
            admin.cancel(job, grace_ms=0)
            admin.wait(job, timeout_s=30)


def test_unknown_key_fails_the_handshake(secure_cluster: LocalCluster) -> None:
    secure_cluster.make_key("stranger")
    with secure_cluster.client("stranger", timeout_ms=500, retries=0, connect_timeout_ms=500) as stranger:
        # ZAP refuses the key during the handshake: nothing is read, nothing answered (protocol.md 2.6).
        with pytest.raises(gpool.Unavailable):
            stranger.status()


def test_plaintext_client_cannot_talk_to_a_secured_cluster(secure_cluster: LocalCluster) -> None:
    with gpool.Client(secure_cluster.client_endpoints, insecure=True, timeout_ms=500, retries=0,
                      connect_timeout_ms=500) as plain:
        with pytest.raises(gpool.Unavailable):
            plain.status()


def test_keys_from_the_environment(secure_cluster: LocalCluster, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPOOL_COORDINATOR", ",".join(secure_cluster.client_endpoints))
    monkeypatch.setenv("GPOOL_KEY_FILE", secure_cluster.path("admin.key"))
    monkeypatch.setenv("GPOOL_COORDINATOR_KEY", ",".join(secure_cluster.coordinator_key_files))
    with gpool.Client() as c:
        assert c.whoami().name == "admin"


def test_a_readable_secret_key_is_refused(secure_cluster: LocalCluster) -> None:
    secure_cluster.make_key("loose")
    path = secure_cluster.path("loose.key")
    os.chmod(path, 0o644)
    with pytest.raises(gpool.FailedPrecondition):
        gpool.Client(secure_cluster.client_endpoints, key_file=path,
                     coordinator_key=secure_cluster.coordinator_key_files)
    with pytest.raises(gpool.NotFound):
        gpool.Client(secure_cluster.client_endpoints, key_file=secure_cluster.path("missing.key"),
                     coordinator_key=secure_cluster.coordinator_key_files)
