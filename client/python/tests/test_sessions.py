"""rGPU sessions: open (SubmitJob with session), renew, list, close (CancelJob)."""
from __future__ import annotations

import pytest

import gpool
from cluster import wait_for


def test_open_renew_list_close(client: gpool.Client) -> None:
    with client.open_session(1, name="py-session", lease_ms=60000, timeout_s=60) as session:
        assert session.info is not None and session.info.state == "Open"
        assert session.info.endpoint.startswith("tcp://127.0.0.1:")
        assert gpool.keys.is_z85_key(session.info.server_key)
        # On a plaintext cluster the key pair the server admits was drawn here.
        assert session.info.owner_key == session.client_keys.public_key
        renewed = session.renew()
        assert renewed.state == "Open" and renewed.renew_ms >= session.info.renew_ms
        listed = client.sessions()
        assert [j.job_id for j in listed if j.session and j.session.state == "Open"] == [session.job_id]
        assert all(j.session is not None for j in client.sessions(include_finished=True))
        assert client.session(session.job_id).node in ("node-0", "node-1")
    closed = wait_for("the session to close",
                      lambda: client.session(session.job_id) if client.session(session.job_id).ended else None)
    assert closed.state == "Closed"
    with pytest.raises(gpool.FailedPrecondition):
        client.renew_session(session.job_id)


def test_a_plain_job_is_no_session(client: gpool.Client) -> None:
    job = client.run(name="py-not-a-session", command="true", timeout_s=60)
    with pytest.raises(gpool.NotFound):
        client.session(job)
    with pytest.raises(gpool.NotFound):
        client.renew_session(job)


def test_a_session_too_big_waits_then_is_given_back(client: gpool.Client) -> None:
    with pytest.raises(gpool.DeadlineExceeded):
        client.open_session(8, name="py-session-big", timeout_s=1)
    big = next(j for j in client.sessions(include_finished=True) if j.name == "py-session-big")
    assert client.wait(big, timeout_s=30).state == "Cancelled"
