"""Nodes, queues, events, usage, status and whoami on a plaintext cluster; errors from the coordinator."""
from __future__ import annotations

import time

import pytest

import gpool
from cluster import LocalCluster, wait_for


def test_nodes(client: gpool.Client) -> None:
    nodes = client.nodes()
    assert [n.name for n in nodes] == ["node-0", "node-1"]
    assert all(n.ready and n.gpus_total == 2 and n.gpu_models == ["A100-SXM4-80GB"] for n in nodes)
    assert nodes[0].devices == []
    detailed = client.nodes(devices=True)
    assert [d["index"] for d in detailed[0].devices] == [0, 1]


def test_queues(client: gpool.Client) -> None:
    queues = client.queues()
    assert [q.name for q in queues][:2] == ["root", "default"]
    default = queues[1]
    assert default.parent == "root" and default.jobs_pending >= 0


def test_status_and_whoami(client: gpool.Client) -> None:
    status = client.status()
    assert status.role == "leader" and status.nodes_ready == 2 and status.gpus_total == 4
    assert client.whoami().kind == "insecure"


def test_events_follow_a_cordon(cluster: LocalCluster, client: gpool.Client) -> None:
    start = client.events(limit=1000)
    client.call("UpdateNode", {"node": "node-1", "op": "cordon"}, "UpdateNodeReply")
    try:
        page = wait_for("the cordon event",
                        lambda: client.events(start.last_seq, node="node-1")
                        if client.events(start.last_seq, node="node-1").events else None)
        event = page.events[0]
        assert event.kind == "node-cordoned" and event.node == "node-1" and event.seq > start.last_seq
        assert page.last_seq >= event.seq
    finally:
        client.call("UpdateNode", {"node": "node-1", "op": "uncordon"}, "UpdateNodeReply")


def test_usage_counts_a_finished_job(client: gpool.Client) -> None:
    before_ms = int(time.time() * 1000)
    job = client.run(name="py-usage", command="sleep 0.5", gpus=1, timeout_s=60)
    assert job.state == "Succeeded"
    report = client.usage(before_ms - 3600 * 1000, int(time.time() * 1000) + 1000, by="job")
    assert report.by == "job" and report.from_ms <= before_ms
    row = next(r for r in report.rows if r.job == job.job_id)
    assert row.records == 1 and row.gpu_mms > 0 and row.gpu_hours > 0
    by_queue = client.usage(by="queue")
    assert any(r.queue == "default" and r.gpu_mms >= row.gpu_mms for r in by_queue.rows)


def test_not_found(client: gpool.Client) -> None:
    with pytest.raises(gpool.NotFound) as caught:
        client.job(999999)
    assert caught.value.code == "NotFound" and "999999" in caught.value.message
    with pytest.raises(gpool.NotFound):
        client.cancel(999999)
    with pytest.raises(gpool.NotFound):
        client.explain(999999)
    job = client.run(name="py-log-range", command="true", timeout_s=60)
    with pytest.raises(gpool.NotFound):
        client.logs(job, 5)


def test_invalid_argument_from_the_coordinator(client: gpool.Client) -> None:
    with pytest.raises(gpool.InvalidArgument) as caught:
        client.submit(name="bad name with spaces", command="true")
    assert caught.value.message.startswith("spec: ")
    with pytest.raises(gpool.InvalidArgument):
        client.usage(1000, 500)


def test_failed_precondition_on_a_finished_job(client: gpool.Client) -> None:
    job = client.run(name="py-done", command="true", timeout_s=60)
    with pytest.raises(gpool.FailedPrecondition):
        client.cancel(job)


def test_bad_input_is_refused_before_sending(client: gpool.Client) -> None:
    for call in (lambda: client.job(0), lambda: client.job(-1), lambda: client.job("7"),  # type: ignore[arg-type]
                 lambda: client.job(True),  # type: ignore[arg-type]
                 lambda: client.logs(1, -1), lambda: client.cancel(1, grace_ms=-5),
                 lambda: client.jobs(limit=-1), lambda: client.events(-1),
                 lambda: client.submit(name="x"),  # no command
                 lambda: client.submit(name="x", command="true", gpu=1),  # unknown key
                 lambda: client.submit(name="x", command="true", cpus="lots"),
                 lambda: client.submit(123),  # type: ignore[arg-type]
                 lambda: client.submit(name="x", command="true", idempotency_key="k" * 257),
                 lambda: client.open_session(0), lambda: client.open_session(1, colour="red")):
        with pytest.raises(gpool.InvalidArgument):
            call()


def test_nothing_listening_is_unavailable() -> None:
    from cluster import free_ports
    port = free_ports(1)[0]
    with gpool.Client(f"127.0.0.1:{port}", insecure=True, timeout_ms=500, retries=1,
                      connect_timeout_ms=200) as c:
        started = time.monotonic()
        with pytest.raises(gpool.Unavailable):
            c.status()
        assert time.monotonic() - started < 5


def test_cli_sees_what_the_sdk_submitted(cluster: LocalCluster, client: gpool.Client) -> None:
    job = client.run(name="py-cli-check", command="echo via-sdk", timeout_s=60)
    shown = cluster.run_cli("job", str(job.job_id))
    assert shown.returncode == 0, shown.stderr
    assert "py-cli-check" in shown.stdout and "Succeeded" in shown.stdout


def test_wrong_types_are_invalid_arguments() -> None:
    bad_clients = [dict(coordinator=7), dict(coordinator=["a:1", 2]), dict(token=5), dict(timeout_ms="5"),
                   dict(retries=None), dict(key_file=3), dict(curve_keys="k", server_keys=["x"]),
                   dict(timeout_ms=0), dict(coordinator="")]
    for options in bad_clients:
        with pytest.raises(gpool.InvalidArgument):
            gpool.Client(**options)  # type: ignore[arg-type]
    with gpool.Client("tcp://127.0.0.1:9", insecure=True) as c:
        calls = [lambda: c.submit(name="x", command="true", idempotency_key=5),  # type: ignore[arg-type]
                 lambda: c.submit_spec("spec"),  # type: ignore[arg-type]
                 lambda: c.wait(1, timeout_s=-1), lambda: c.wait(1, timeout_s="1"),  # type: ignore[arg-type]
                 lambda: c.wait(1, poll_interval_s=None),  # type: ignore[arg-type]
                 lambda: c.follow_logs(1, timeout_s=-2),
                 lambda: c.usage("yesterday"),  # type: ignore[arg-type]
                 lambda: c.open_session(1, lease_ms="1h"), lambda: c.open_session(1, gpu_compute=101),
                 lambda: c.open_session(1, timeout_s=-1, wait=True)]
        for call in calls:
            with pytest.raises(gpool.InvalidArgument):
                call()
