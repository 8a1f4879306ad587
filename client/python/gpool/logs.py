"""Following a task's log as it grows (Client.follow_logs), over GetJob and GetTaskLog."""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterator, Optional

from .deadline import Deadline
from .errors import DeadlineExceeded, NotFound, Unavailable
from .types import Job, TaskInfo

if TYPE_CHECKING:
    from .client import Client

# GetTaskLog's own cap at the default --max-frame-bytes (docs/protocol.md 7.6).
_MAX_LOG_BYTES = 4194304 - 4096
TERMINAL_TASK_STATES = frozenset({"Succeeded", "Failed", "Cancelled", "Lost"})


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
    deadline = Deadline(timeout_s)
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
