"""Following a job or a task's log as it changes: wait() and follow_log().

Design: everything that needs "the job as it changes" goes through
`job_updates()`, a generator that yields the job each time it differs from the
last one seen. Today it polls GetJob every POLL_INTERVAL_S. When the
coordinator offers server-pushed updates, only job_updates() has to change:
wait() and follow_log() consume its values and never see how they arrive.
"""
from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Iterator, Optional

from .errors import DeadlineExceeded, NotFound, Unavailable
from .types import Job, TaskInfo

if TYPE_CHECKING:
    from .client import Client

POLL_INTERVAL_S = 0.2
# GetTaskLog's own cap at the default --max-frame-bytes (docs/protocol.md 7.6).
_MAX_LOG_BYTES = 4194304 - 4096
TERMINAL_TASK_STATES = frozenset({"Succeeded", "Failed", "Cancelled", "Lost"})


class _Deadline:
    def __init__(self, timeout_s: Optional[float]) -> None:
        self.end = None if timeout_s is None else time.monotonic() + timeout_s
        self.timeout_s = timeout_s

    def left(self) -> Optional[float]:
        return None if self.end is None else self.end - time.monotonic()

    def passed(self) -> bool:
        left = self.left()
        return left is not None and left <= 0

    def sleep(self, interval_s: float) -> None:
        left = self.left()
        time.sleep(interval_s if left is None else max(0.0, min(interval_s, left)))


def _fingerprint(job: Job) -> Any:
    summary = job.summary
    return (summary.state, summary.reason, summary.tasks_running, summary.tasks_finished,
            summary.session.state if summary.session else "",
            tuple((t.state, t.attempt, t.node) for t in job.tasks))


def job_updates(client: "Client", job_id: int, *, poll_interval_s: float = POLL_INTERVAL_S,
                timeout_s: Optional[float] = None) -> Iterator[Job]:
    """The job now, then again each time its state, tasks or session change; ends after a finished
    job. DeadlineExceeded once timeout_s passes without it finishing."""
    deadline = _Deadline(timeout_s)
    last: Any = None
    while True:
        job = client.job(job_id)
        fingerprint = _fingerprint(job)
        if fingerprint != last:
            last = fingerprint
            yield job
        if job.finished:
            return
        if deadline.passed():
            raise DeadlineExceeded(f"job {job_id} is still {job.state} after {timeout_s} s")
        deadline.sleep(poll_interval_s)


def wait(client: "Client", job_id: int, *, timeout_s: Optional[float] = None,
         poll_interval_s: float = POLL_INTERVAL_S) -> Job:
    """The job once it has ended."""
    final: Optional[Job] = None
    for final in job_updates(client, job_id, poll_interval_s=poll_interval_s, timeout_s=timeout_s):
        pass
    assert final is not None and final.finished
    return final


def _task(job: Job, index: int) -> TaskInfo:
    for task in job.tasks:
        if task.index == index:
            return task
    raise NotFound(f"job {job.job_id} has no task {index} (it has {len(job.tasks)})")


class _LogCursor:
    """What of one task attempt's log was yielded: the log's bytes ever written (dropped + size)."""

    def __init__(self, attempt: int) -> None:
        self.attempt = attempt
        self.seen = 0

    def new_bytes(self, client: "Client", job_id: int, index: int) -> bytes:
        """Bytes written since the last call. A reply covers [total - len(data), total); when more was
        written than it holds, ask again for exactly what is missing; past the cap, skip ahead."""
        want = 65536
        for _ in range(3):
            log = client.logs(job_id, index, max_bytes=min(want, _MAX_LOG_BYTES))
            total = log.dropped + log.size
            if total < self.seen:  # a new file (the worker started the log over)
                self.seen = 0
            start = total - len(log.data)
            if start <= self.seen or want >= _MAX_LOG_BYTES:
                chunk = log.data[max(0, self.seen - start):]
                self.seen = total
                return chunk
            want = total - self.seen
        return b""


def follow_log(client: "Client", job_id: int, index: int, *, poll_interval_s: float = 0.5,
               timeout_s: Optional[float] = None) -> Iterator[bytes]:
    """Chunks of a task's log as it grows, until the task has ended and the rest is read. A task evicted
    and started again (a new attempt) starts a new log, which is followed from its start."""
    deadline = _Deadline(timeout_s)
    cursor: Optional[_LogCursor] = None
    while True:
        task = _task(client.job(job_id), index)
        ended = task.state in TERMINAL_TASK_STATES
        if cursor is None or cursor.attempt != task.attempt:
            cursor = _LogCursor(task.attempt)
        if task.node:  # placed at least once, so it may have a log
            try:
                chunk = cursor.new_bytes(client, job_id, index)
                if chunk:
                    yield chunk
            except NotFound:
                if ended:
                    return  # it never wrote a log (e.g. could not start on its node)
            except Unavailable:
                if ended:
                    raise
        if ended:
            return
        if deadline.passed():
            raise DeadlineExceeded(f"task {job_id}.{index} is still {task.state} after {timeout_s} s")
        deadline.sleep(poll_interval_s)
