"""Three coordinator replicas: a client that starts at a follower follows NotLeader to the leader."""
from __future__ import annotations

from typing import Optional

import gpool
from cluster import LocalCluster, wait_for
from gpool.transport import Connection


def _named_leader(endpoint: str) -> Optional[str]:
    """The leader a replica names in its NotLeader, or None; one attempt, no redirect followed."""
    connection = Connection([endpoint], timeout_ms=1000, retries=0)
    try:
        connection.call("ListJobs", {}, "ListJobsReply")
        return endpoint  # it answered: it leads
    except gpool.NotLeader as e:
        return e.leader or None
    finally:
        connection.close()


def test_follows_not_leader_redirects(replicated_cluster: LocalCluster) -> None:
    endpoints = replicated_cluster.client_endpoints
    with replicated_cluster.client() as c:
        status = c.status()
    leader = endpoints[int(status.replica_id) - 1]
    followers = [e for e in endpoints if e != leader]
    for follower in followers:
        wait_for(f"{follower} to name the leader", lambda: _named_leader(follower) == leader, 15)

    # Followers first: the first request lands on a follower, which names the leader.
    with replicated_cluster.client(endpoints=followers + [leader]) as c:
        assert c.endpoint == followers[0]
        submitted = c.submit(name="py-redirect", command="true")
        assert c.endpoint == leader
        assert c.job(submitted).name == "py-redirect"
        assert c.status().role == "leader"

    # Only a follower listed: the leader it names is added and used.
    with replicated_cluster.client(endpoints=[followers[1]]) as c:
        assert c.job(submitted).name == "py-redirect"
        assert c.endpoint == leader
