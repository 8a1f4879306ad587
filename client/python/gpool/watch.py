"""Watching: server-pushed updates (docs/protocol.md 7.19), and wait() built on them.

A Watch is the Clone pattern of the ZeroMQ guide from the client's side: `Watch`
answers with a snapshot or the changes since a position, then the serving
leader pushes each committed change as a WatchUpdate (envelope id 0) with a seq
per watch (1, 2, ...) and a position. The client keeps the last position it
applied, and makes the watch again from it with a new `Watch` whenever it may
have missed something:

- a seq gap (pushes dropped on the way);
- WatchRenew (every 5 s; a watch lives 30 s unrenewed) naming it `unknown`
  (expired, or held by a replica that stopped leading);
- the transport opened a new socket (a timeout or a NotLeader redirect): pushes
  go to the connection that made the watch, so one made on the old socket is
  gone with it.

Nothing is lost that way: a reply with `reset` false holds every change after
the position; `reset` true is the current state, to replace what one holds. A
state already returned for a job or a node is not returned again (a replica
that restarted may publish one twice).

wait() follows one job through job_updates(), which uses a `job` watch and
falls back to polling GetJob every POLL_INTERVAL_S when the coordinator
predates the watch API (UnknownType for `Watch`).
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Dict, Iterator, List, Mapping, Optional

from .deadline import Deadline
from .errors import DeadlineExceeded, GpoolError, InvalidArgument, Unavailable, UnknownType
from .types import ClusterEvent, Job, JobSummary, NodeSummary, read

if TYPE_CHECKING:
    from .client import Client

POLL_INTERVAL_S = 0.2
RENEW_INTERVAL_S = 5.0
TOPICS = ("job", "jobs", "nodes", "events")


@dataclass
class WatchUpdate:
    """A WatchReply (seq 0) or a pushed WatchUpdate. `reset`: the items are the current state (replace what
    you hold); otherwise they are the changes after the previous update, in order."""
    watch_id: int
    seq: int
    position: int
    reset: bool = False
    jobs: List[JobSummary] = field(default_factory=list)
    nodes: List[NodeSummary] = field(default_factory=list)
    events: List[ClusterEvent] = field(default_factory=list)

    @classmethod
    def from_wire(cls, wire: Mapping[str, Any], seq: int, reset: bool) -> "WatchUpdate":
        return cls(watch_id=int(wire.get("watch_id", 0)), seq=seq, position=int(wire.get("position", 0)),
                   reset=reset, jobs=[JobSummary.from_wire(j) for j in wire.get("jobs") or []],
                   nodes=[read(NodeSummary, n) for n in wire.get("nodes") or []],
                   events=[read(ClusterEvent, e) for e in wire.get("events") or []])

    @property
    def empty(self) -> bool:
        return not (self.jobs or self.nodes or self.events)


class Watch:
    """An iterator over the updates of one topic: `job` (key: the job id), `jobs` (key "", "user:NAME" or
    "queue:NAME"), `nodes` (key "" or a node name) or `events`. Iterating makes the watch; `close()` (or
    leaving a `with` block) ends it. Uses the client's connection: iterate one watch at a time per client,
    and do not send requests on that client from another thread meanwhile."""

    def __init__(self, client: "Client", topic: str, key: str = "", *, after: int = 0,
                 timeout_s: Optional[float] = None) -> None:
        if topic not in TOPICS:
            raise InvalidArgument(f"topic: expected one of {', '.join(TOPICS)}, got {topic!r}")
        if isinstance(after, bool) or not isinstance(after, int) or after < 0:
            raise InvalidArgument(f"after: expected a non-negative integer, got {after!r}")
        self._client, self._connection = client, client._connection
        self.topic, self.key = topic, str(key)
        self.position = after  # the last position applied: where a new Watch resumes
        self.watch_id = 0
        self._next_seq = 1
        self._generation = -1
        self._renew_at = 0.0
        self._deadline = Deadline(timeout_s)
        # What was returned last per job and per node, and the last event seq: a replica that restarted may
        # publish a state twice, and a state is returned once.
        self._job_prints: Dict[int, str] = {}
        self._node_prints: Dict[str, str] = {}
        self._last_event_seq = 0

    def subscribe(self) -> WatchUpdate:
        """Makes (or makes again) the watch from `position`; its reply as an update of seq 0."""
        if self.watch_id:
            self._connection.watch_ended(self.watch_id)
        reply = self._client.call("Watch", {"topic": self.topic, "key": self.key, "after": self.position},
                                  "WatchReply")
        self.watch_id = int(reply["watch_id"])
        self._connection.watch_started(self.watch_id)
        self._generation = self._connection.generation  # the socket the reply came on holds the watch
        self._next_seq = 1
        self.position = int(reply.get("position", self.position))
        self._renew_at = time.monotonic() + RENEW_INTERVAL_S
        return WatchUpdate.from_wire(reply, 0, bool(reply.get("reset", False)))

    def _renew(self) -> Optional[WatchUpdate]:
        """WatchRenew; the watch made again when the coordinator no longer holds it, or did not answer."""
        try:
            reply = self._client.call("WatchRenew", {"watch_ids": [self.watch_id]}, "WatchRenewReply")
        except Unavailable:
            return self.subscribe()  # raises in turn when no replica answers at all
        self._renew_at = time.monotonic() + RENEW_INTERVAL_S
        if self.watch_id in (reply.get("unknown") or []) or self._connection.generation != self._generation:
            return self.subscribe()
        return None

    def __iter__(self) -> Iterator[WatchUpdate]:
        first = self.subscribe() if self._generation < 0 else None
        if first is not None and self._fresh(first):
            yield first
        while True:
            if self._deadline.passed():
                raise DeadlineExceeded(f"nothing ended the {self.topic} watch within {self._deadline.timeout_s} s")
            if self._connection.generation != self._generation:
                update: Optional[WatchUpdate] = self.subscribe()  # the socket that held the watch is gone
            else:
                wait_s = self._deadline.cap(max(0.0, self._renew_at - time.monotonic()))
                push = self._connection.next_push(self.watch_id, int(wait_s * 1000))
                update = self._apply(push) if push is not None else None
                if push is None and time.monotonic() >= self._renew_at:
                    update = self._renew()
            if update is not None and self._fresh(update):
                yield update

    def _fresh(self, update: WatchUpdate) -> bool:
        """Drops items already returned in the same state; whether anything (or a reset) is left."""
        def unseen(prints: Dict[Any, str], key: Any, raw: Mapping[str, Any]) -> bool:
            text = json.dumps(raw, sort_keys=True, default=repr)
            if prints.get(key) == text and not update.reset:
                return False
            prints[key] = text
            return True
        update.jobs = [j for j in update.jobs if unseen(self._job_prints, j.job_id, j.raw)]
        update.nodes = [n for n in update.nodes if unseen(self._node_prints, n.name, n.raw)]
        if not update.reset:
            update.events = [e for e in update.events if e.seq > self._last_event_seq]
        self._last_event_seq = max([self._last_event_seq] + [e.seq for e in update.events])
        return update.reset or not update.empty

    def _apply(self, push: Dict[str, Any]) -> Optional[WatchUpdate]:
        seq = int(push.get("seq", 0))
        if seq != self._next_seq:
            return self.subscribe()  # pushes were lost: catch up from the last position applied
        self._next_seq += 1
        self.position = int(push.get("position", self.position))
        return WatchUpdate.from_wire(push, seq, False)

    def close(self) -> None:
        if not self.watch_id:
            return
        watch_id, self.watch_id = self.watch_id, 0
        self._connection.watch_ended(watch_id)
        try:
            self._client.call("Unwatch", {"watch_id": watch_id}, "Ack")
        except GpoolError:
            pass  # it expires by itself 30 s after its last renewal

    def __enter__(self) -> "Watch":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _fingerprint(job: Job) -> Any:
    summary = job.summary
    return (summary.state, summary.reason, summary.tasks_running, summary.tasks_finished,
            summary.session.state if summary.session else "",
            tuple((t.state, t.attempt, t.node) for t in job.tasks))


def _polled_job_updates(client: "Client", job_id: int, poll_interval_s: float,
                        deadline: Deadline) -> Iterator[Job]:
    last: Any = None
    while True:
        job = client.job(job_id)
        if _fingerprint(job) != last:
            last = _fingerprint(job)
            yield job
        if job.finished:
            return
        if deadline.passed():
            raise DeadlineExceeded(f"job {job_id} is still {job.state} after {deadline.timeout_s} s")
        deadline.sleep(poll_interval_s)


def job_updates(client: "Client", job_id: int, *, poll_interval_s: float = POLL_INTERVAL_S,
                timeout_s: Optional[float] = None) -> Iterator[Job]:
    """The job now, then again each time it changes; ends after a finished job. DeadlineExceeded once
    timeout_s passes without it finishing. Pushed by a `job` watch; polled from an older coordinator."""
    deadline = Deadline(timeout_s)
    watch = Watch(client, "job", str(job_id), timeout_s=timeout_s)
    try:
        watch.subscribe()
    except UnknownType:
        yield from _polled_job_updates(client, job_id, poll_interval_s, deadline)
        return
    try:
        # The whole job (tasks, reasons) by GetJob, a read at least as new as the push that prompted it;
        # a push of a state that read already showed is not yielded twice.
        job = client.job(job_id)
        last = _fingerprint(job)
        yield job
        if job.finished:
            return
        for update in watch:
            if not any(summary.job_id == job_id for summary in update.jobs):
                continue
            job = client.job(job_id)
            if _fingerprint(job) != last:
                last = _fingerprint(job)
                yield job
            if job.finished:
                return
    except DeadlineExceeded:
        raise DeadlineExceeded(f"job {job_id} is still {job.state} after {timeout_s} s") from None
    finally:
        watch.close()


def wait(client: "Client", job_id: int, *, timeout_s: Optional[float] = None,
         poll_interval_s: float = POLL_INTERVAL_S) -> Job:
    """The job once it has ended."""
    final: Optional[Job] = None
    for final in job_updates(client, job_id, poll_interval_s=poll_interval_s, timeout_s=timeout_s):
        pass
    assert final is not None and final.finished
    return final
