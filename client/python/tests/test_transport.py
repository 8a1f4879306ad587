"""The transport against a scripted fake coordinator (a ROUTER on 127.0.0.1): framing, ids, redirects,
and replies that a real coordinator would not send."""
from __future__ import annotations

from typing import List

import msgpack  # type: ignore[import]
import pytest

import gpool
from fake_coordinator import FakeCoordinator, Reply, envelope, fake, ok_jobs
from gpool.transport import Connection


def test_one_frame_per_request_and_fresh_ids(fakes: List[FakeCoordinator]) -> None:
    server = fake(fakes, ok_jobs, ok_jobs)
    connection = Connection([server.endpoint], token="t0k", timeout_ms=2000)
    try:
        assert connection.call("ListJobs", {}, "ListJobsReply")["jobs"][0]["job_id"] == 3
        connection.call("ListJobs", {"limit": 1}, "ListJobsReply")
    finally:
        connection.close()
    assert server.frame_counts == [1, 1]
    first, second = server.requests
    assert (first["v"], first["type"], first["token"], first["epoch"], first["body"]) == (1, "ListJobs", "t0k", 0, {})
    assert first["id"] >= 1 and second["id"] > first["id"]


def test_late_replies_are_dropped_and_id_zero_errors_count(fakes: List[FakeCoordinator]) -> None:
    late_then_right: Reply = lambda r: [envelope(r, "ListJobsReply", {"jobs": []}, request_id=r["id"] + 100),
                                        *ok_jobs(r)]
    unattributed: Reply = lambda r: [envelope(r, "ErrorReply", {"code": "Malformed", "message": "bad"}, 0)]
    server = fake(fakes, late_then_right, unattributed)
    with gpool.Client(server.endpoint, insecure=True, timeout_ms=2000) as c:
        assert [j.job_id for j in c.jobs()] == [3]
        with pytest.raises(gpool.Malformed):
            c.jobs()


def test_replies_that_do_not_fit(fakes: List[FakeCoordinator]) -> None:
    server = fake(fakes, lambda r: [b"\xc1 not msgpack"], lambda r: [envelope(r, "GetJobReply", {})],
                  lambda r: [envelope(r, "ErrorReply", {"code": "Teapot", "message": "short and stout"})],
                  lambda r: [msgpack.packb([1, 2])])
    with gpool.Client(server.endpoint, insecure=True, timeout_ms=2000, retries=0) as c:
        with pytest.raises(gpool.Malformed):
            c.jobs()
        with pytest.raises(gpool.Malformed, match="expected ListJobsReply, got GetJobReply"):
            c.jobs()
        with pytest.raises(gpool.Internal, match="unknown error code 'Teapot'"):
            c.jobs()
        with pytest.raises(gpool.Malformed):
            c.jobs()


def test_every_code_is_its_own_exception(fakes: List[FakeCoordinator]) -> None:
    codes = sorted(gpool.errors.ERRORS_BY_CODE)
    assert len(codes) == 16
    server = fake(fakes, *[(lambda code: (lambda r: [envelope(r, "ErrorReply", {"code": code, "message": "m"})]))(c)
                           for c in codes if c != "NotLeader"])
    with gpool.Client(server.endpoint, insecure=True, timeout_ms=2000, retries=0) as c:
        for code in codes:
            if code == "NotLeader":
                continue
            with pytest.raises(gpool.GpoolError) as caught:
                c.jobs()
            assert type(caught.value).__name__ == code and caught.value.code == code
            assert caught.value.message == "m" and str(caught.value) == f"{code}: m"


def test_not_leader_without_a_leader_tries_the_next(fakes: List[FakeCoordinator]) -> None:
    follower = fake(fakes, lambda r: [envelope(r, "ErrorReply", {"code": "NotLeader", "message": "election",
                                                                  "leader": ""}, 0)])
    leader = fake(fakes, ok_jobs)
    with gpool.Client([follower.endpoint, leader.endpoint], insecure=True, timeout_ms=2000) as c:
        assert [j.job_id for j in c.jobs()] == [3]
        assert c.endpoint == leader.endpoint


def test_not_leader_after_every_retry_is_raised(fakes: List[FakeCoordinator]) -> None:
    not_leader: Reply = lambda r: [envelope(r, "ErrorReply", {"code": "NotLeader", "message": "no", "leader": ""})]
    server = fake(fakes, not_leader, not_leader)
    with gpool.Client(server.endpoint, insecure=True, timeout_ms=2000, retries=1) as c:
        with pytest.raises(gpool.NotLeader):
            c.jobs()


def test_a_silent_coordinator_is_unavailable(fakes: List[FakeCoordinator]) -> None:
    server = fake(fakes, lambda r: [], lambda r: [])
    with gpool.Client(server.endpoint, insecure=True, timeout_ms=300, retries=1) as c:
        with pytest.raises(gpool.Unavailable, match="did not answer within 300 ms"):
            c.jobs()
    assert len(server.requests) == 2
    assert server.requests[1]["id"] != server.requests[0]["id"]  # a resend has a new id


def test_submit_resends_the_same_idempotency_key(fakes: List[FakeCoordinator]) -> None:
    server = fake(fakes, lambda r: [], lambda r: [envelope(r, "SubmitJobReply", {"job_id": 9, "duplicate": True})])
    with gpool.Client(server.endpoint, insecure=True, timeout_ms=300, retries=1) as c:
        result = c.submit(name="j", command="true")
    assert (result.job_id, result.duplicate) == (9, True)
    keys = [r["body"]["idempotency_key"] for r in server.requests]
    assert len(keys) == 2 and keys[0] == keys[1] and len(keys[0]) == 32


def test_log_bytes_need_not_be_utf8(fakes: List[FakeCoordinator]) -> None:
    server = fake(fakes, lambda r: [envelope(r, "GetTaskLogReply", {"data": b"\xff\xfeok\n", "size": 5})])
    with gpool.Client(server.endpoint, insecure=True, timeout_ms=2000) as c:
        log = c.logs(1, 0)
    assert log.data == b"\xff\xfeok\n" and log.size == 5 and log.text.endswith("ok\n")


def test_oversized_requests_are_not_sent() -> None:
    with gpool.Client("tcp://127.0.0.1:9", insecure=True) as c:
        with pytest.raises(gpool.ResourceExhausted, match="no coordinator reads requests over"):
            c.submit(name="big", command="true", env={"X": "y" * (65 * 1024 * 1024)})


def test_endpoint_lists() -> None:
    from gpool.transport import parse_endpoints
    assert parse_endpoints(" a:1, tcp://b:2 ,") == ["tcp://a:1", "tcp://b:2"]
    for bad in ("", " , ", "nohost"):
        with pytest.raises(gpool.InvalidArgument):
            parse_endpoints(bad)
