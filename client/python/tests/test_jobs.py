"""Submit, list, get, wait, cancel, explain and logs against a running cluster."""
from __future__ import annotations

import os

import pytest

import gpool
from cluster import wait_for

EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples")


def test_submit_keywords_wait_and_logs(client: gpool.Client) -> None:
    submitted = client.submit(name="py-hello", command="echo hello from task $GPOOL_TASK_INDEX", replicas=2,
                              gpus=1, cpus=0.5, memory="256Mi", env={"GREETING": "hi"})
    assert submitted.job_id > 0 and not submitted.duplicate
    job = client.wait(submitted, timeout_s=60)
    assert job.state == "Succeeded", job.reasons
    assert [t.state for t in job.tasks] == ["Succeeded", "Succeeded"]
    assert job.spec["tasks"][0]["resources"]["cpu_milli"] == 500
    assert job.spec["tasks"][0]["resources"]["memory_mib"] == 256
    assert job.spec["tasks"][0]["env"]["GREETING"] == "hi"
    for index in (0, 1):
        log = client.logs(job, index)
        assert log.text == f"hello from task {index}\n"
        assert log.size == len(log.data) and not log.truncated


def test_submit_dict_and_yaml_file(client: gpool.Client) -> None:
    from_dict = client.submit({"name": "py-dict", "tasks": [
        {"name": "a", "command": ["true"], "resources": {"gpus": 1}},
        {"name": "b", "replicas": 2, "command": "exit 0"}]})
    job = client.wait(from_dict, timeout_s=60)
    assert job.state == "Succeeded"
    assert [t["name"] for t in job.spec["tasks"]] == ["a", "b"] and len(job.tasks) == 3

    from_file = client.submit(os.path.join(EXAMPLES, "hello.yaml"))
    job = client.wait(from_file, timeout_s=60)
    assert job.name == "hello" and job.state == "Succeeded"
    assert "GREETING=hello" in client.logs(job, 1).text


def test_idempotency_key_submits_once(client: gpool.Client) -> None:
    first = client.submit(name="py-once", command="true", idempotency_key="py-sdk-test-key-1")
    again = client.submit(name="py-once-other", command="false", idempotency_key="py-sdk-test-key-1")
    assert again.job_id == first.job_id and again.duplicate
    client.wait(first, timeout_s=60)


def test_jobs_lists_newest_first(client: gpool.Client) -> None:
    a = client.submit(name="py-list-a", command="true")
    b = client.submit(name="py-list-b", command="true")
    client.wait(b, timeout_s=60)
    client.wait(a, timeout_s=60)
    jobs = client.jobs()
    ids = [j.job_id for j in jobs]
    assert ids == sorted(ids, reverse=True)
    by_id = {j.job_id: j for j in jobs}
    assert by_id[a.job_id].name == "py-list-a" and by_id[b.job_id].state == "Succeeded"
    assert all(not j.finished for j in client.jobs(include_finished=False))
    assert len(client.jobs(limit=1)) == 1


def test_failed_job_and_reason(client: gpool.Client) -> None:
    job = client.run(name="py-fail", command="echo oops; exit 3", timeout_s=60)
    assert job.state == "Failed" and job.tasks[0].exit_code == 3
    assert "exit code 3" in job.summary.reason
    assert "oops" in client.logs(job).text


def test_cancel_and_explain(client: gpool.Client) -> None:
    running = client.submit(name="py-cancel", command="sleep 600")
    wait_for("the job to run", lambda: client.job(running).state == "Running", 30)
    cancelled = client.cancel(running, grace_ms=1000)
    assert cancelled.job_id == running.job_id
    assert client.wait(running, timeout_s=30).state == "Cancelled"
    assert client.cancel(running).state == "Cancelled"  # a retried cancel is harmless

    # More GPUs than any node has: it stays Pending and says why.
    too_big = client.submit(name="py-too-big", command="true", gpus=64)
    explanation = client.explain(too_big)
    assert explanation.job.job_id == too_big.job_id and explanation.job.state == "Pending"
    assert [q.name for q in explanation.queue_path] == ["default", "root"]
    job = wait_for("a pending reason", lambda: client.job(too_big) if client.job(too_big).reasons else None)
    assert any("64 GPUs" in r for r in job.reasons), job.reasons
    client.cancel(too_big)
    assert client.wait(too_big, timeout_s=30).state == "Cancelled"


def test_wait_times_out(client: gpool.Client) -> None:
    job = client.submit(name="py-slow", command="sleep 600")
    with pytest.raises(gpool.DeadlineExceeded):
        client.wait(job, timeout_s=0.5)
    client.cancel(job, grace_ms=0)
    client.wait(job, timeout_s=30)


def test_follow_logs_streams_a_running_task(client: gpool.Client) -> None:
    job = client.submit(name="py-follow", command="echo first; sleep 3; echo second")
    chunks = client.follow_logs(job, 0, poll_interval_s=0.1, timeout_s=60)
    first = next(chunks)
    # The first line came while the task was still running, before the second was written.
    assert first == b"first\n"
    assert client.job(job).tasks[0].state == "Running"
    rest = b"".join(chunks)
    assert rest == b"second\n"
    assert client.job(job).state == "Succeeded"


def test_jupyter_html(client: gpool.Client) -> None:
    job = client.run(name="py-html", command="true", timeout_s=60)
    html = job._repr_html_()
    assert "<table>" in html and "py-html" in html and "Succeeded" in html
    assert "py-html" in client.jobs(limit=1)[0]._repr_html_()
