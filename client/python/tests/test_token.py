"""A plaintext cluster with a cluster token (--insecure --token-file): the token is every request's key."""
from __future__ import annotations

import pytest

import gpool
from cluster import LocalCluster


def test_token_is_required(token_cluster: LocalCluster) -> None:
    with token_cluster.client() as c:
        assert c.whoami().kind == "insecure"
        assert c.run(name="py-token", command="echo ok", timeout_s=60).state == "Succeeded"
    for wrong in ("", "not-the-token"):
        with token_cluster.client(token=wrong) as c:
            with pytest.raises(gpool.Unauthenticated) as caught:
                c.jobs()
            assert caught.value.message == "wrong or missing token"


def test_token_from_the_environment(token_cluster: LocalCluster, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPOOL_TOKEN", "py-sdk-test-token")
    with gpool.Client(token_cluster.client_endpoints, insecure=True) as c:
        assert [n.name for n in c.nodes()] == ["node-0"]
