"""Watches (docs/protocol.md 7.19) against a scripted fake coordinator, and wait() on a real cluster."""
from __future__ import annotations

from typing import Any, Dict, List

import pytest

import gpool
import gpool.watch
from cluster import LocalCluster
from fake_coordinator import FakeCoordinator, Reply, envelope, fake


def summary(job_id: int, state: str) -> Dict[str, Any]:
    return {"job_id": job_id, "name": "w", "state": state}


def watch_reply(watch_id: int, position: int, jobs: List[Dict[str, Any]], reset: bool) -> Reply:
    return lambda r: [envelope(r, "WatchReply", {"watch_id": watch_id, "position": position, "reset": reset,
                                                 "jobs": jobs})]


def push(watch_id: int, seq: int, position: int, jobs: List[Dict[str, Any]]) -> bytes:
    return envelope({"id": 0}, "WatchUpdate", {"watch_id": watch_id, "seq": seq, "position": position,
                                               "jobs": jobs}, 0)


def get_job(state: str) -> Reply:
    return lambda r: [envelope(r, "GetJobReply", {"summary": summary(7, state), "spec": {"name": "w"},
                                                  "tasks": [{"index": 0, "state": state}]})]


def test_snapshot_then_pushes_in_order(fakes: List[FakeCoordinator]) -> None:
    def reply_and_push(r: Dict[str, Any]) -> List[bytes]:
        return watch_reply(4, 40, [summary(7, "Pending")], True)(r) + [
            push(4, 1, 41, [summary(7, "Running")]), push(4, 2, 45, [summary(7, "Succeeded")])]
    server = fake(fakes, reply_and_push, lambda r: [envelope(r, "Ack", {})])
    with gpool.Client(server.endpoint, insecure=True, timeout_ms=2000) as c:
        with c.watch("job", "7", timeout_s=10) as w:
            updates = []
            for update in w:
                updates.append(update)
                if len(updates) == 3:
                    break
            assert w.position == 45
    assert [(u.seq, u.reset, u.position, [j.state for j in u.jobs]) for u in updates] == [
        (0, True, 40, ["Pending"]), (1, False, 41, ["Running"]), (2, False, 45, ["Succeeded"])]
    assert server.requests[0]["body"] == {"topic": "job", "key": "7", "after": 0}
    assert server.requests[1]["type"] == "Unwatch" and server.requests[1]["body"] == {"watch_id": 4}


def test_a_seq_gap_watches_again_from_the_last_position(fakes: List[FakeCoordinator]) -> None:
    def reply_then_gap(r: Dict[str, Any]) -> List[bytes]:
        return watch_reply(4, 40, [], False)(r) + [push(4, 1, 41, [summary(7, "Running")]),
                                                    push(4, 3, 50, [summary(7, "Failed")])]
    server = fake(fakes, reply_then_gap, watch_reply(5, 50, [summary(7, "Failed")], False))
    with gpool.Client(server.endpoint, insecure=True, timeout_ms=2000) as c:
        w = c.watch("job", "7", after=39, timeout_s=10)
        got = []
        for update in w:
            got.append(update)
            if len(got) == 2:
                break
    assert [(u.watch_id, u.seq, u.position) for u in got] == [(4, 1, 41), (5, 0, 50)]
    assert [r["body"]["after"] for r in server.requests] == [39, 41]


def test_a_renewal_the_coordinator_does_not_know_watches_again(fakes: List[FakeCoordinator],
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gpool.watch, "RENEW_INTERVAL_S", 0.2)
    server = fake(fakes, watch_reply(4, 40, [], False),
                  lambda r: [envelope(r, "WatchRenewReply", {"unknown": []})],
                  lambda r: [envelope(r, "WatchRenewReply", {"unknown": [4]})],
                  lambda r: watch_reply(9, 60, [summary(7, "Succeeded")], False)(r))
    with gpool.Client(server.endpoint, insecure=True, timeout_ms=2000) as c:
        w = c.watch("job", "7", timeout_s=10)
        update = next(iter(w))
    assert (update.watch_id, update.position, update.jobs[0].state) == (9, 60, "Succeeded")
    assert [r["type"] for r in server.requests] == ["Watch", "WatchRenew", "WatchRenew", "Watch"]
    assert server.requests[1]["body"] == {"watch_ids": [4]} and server.requests[3]["body"]["after"] == 40


def test_pushes_that_arrive_during_a_request_are_kept(fakes: List[FakeCoordinator]) -> None:
    # wait(): the watch, then GetJob (a push rides along with its reply), then GetJob for the pushed change.
    def job_with_push(r: Dict[str, Any]) -> List[bytes]:
        return [push(4, 1, 41, [summary(7, "Succeeded")])] + get_job("Running")(r)
    server = fake(fakes, watch_reply(4, 40, [summary(7, "Running")], True), job_with_push, get_job("Succeeded"),
                  lambda r: [envelope(r, "Ack", {})])
    with gpool.Client(server.endpoint, insecure=True, timeout_ms=2000) as c:
        job = c.wait(7, timeout_s=10)
    assert job.state == "Succeeded" and job.tasks[0].state == "Succeeded"
    assert [r["type"] for r in server.requests] == ["Watch", "GetJob", "GetJob", "Unwatch"]


def test_wait_polls_a_coordinator_without_watches(fakes: List[FakeCoordinator]) -> None:
    unknown: Reply = lambda r: [envelope(r, "ErrorReply", {"code": "UnknownType",
                                                           "message": "unknown message type 'Watch'"}, 0)]
    server = fake(fakes, unknown, get_job("Running"), get_job("Succeeded"))
    with gpool.Client(server.endpoint, insecure=True, timeout_ms=2000) as c:
        assert c.wait(7, timeout_s=10, poll_interval_s=0.05).state == "Succeeded"
    assert [r["type"] for r in server.requests] == ["Watch", "GetJob", "GetJob"]


def test_bad_watch_arguments(fakes: List[FakeCoordinator]) -> None:
    with gpool.Client("tcp://127.0.0.1:9", insecure=True) as c:
        for bad in (lambda: c.watch("everything"), lambda: c.watch("job", "7", after=-1)):
            with pytest.raises(gpool.InvalidArgument):
                bad()


def test_wait_on_the_real_coordinator(cluster: LocalCluster) -> None:
    """Whichever way this coordinator supports: a job watch, or (UnknownType) polling."""
    with cluster.client() as c:
        job = c.submit(name="py-watched", command="sleep 0.3")
        try:
            with c.watch("job", str(job.job_id), timeout_s=30) as w:
                first = next(iter(w))
                assert first.jobs and first.jobs[0].job_id == job.job_id
        except gpool.UnknownType:
            pass  # a coordinator that predates watches; wait() polls it
        assert c.wait(job, timeout_s=60).state == "Succeeded"


def test_a_state_pushed_twice_is_returned_once(fakes: List[FakeCoordinator]) -> None:
    def reply_and_pushes(r: Dict[str, Any]) -> List[bytes]:
        return watch_reply(4, 40, [summary(7, "Running")], True)(r) + [
            push(4, 1, 41, [summary(7, "Running")]), push(4, 2, 42, [summary(7, "Succeeded")])]
    server = fake(fakes, reply_and_pushes)
    with gpool.Client(server.endpoint, insecure=True, timeout_ms=2000) as c:
        w = c.watch("job", "7", timeout_s=10)
        updates = iter(w)
        first, second = next(updates), next(updates)
    assert [j.state for j in first.jobs] == ["Running"] and first.reset
    assert (second.seq, [j.state for j in second.jobs]) == (2, ["Succeeded"])
    assert w.position == 42
