"""Remote GPU sessions (docs/protocol.md 7.17): a session is a job with session.enabled.

Open: SubmitJob with one group of one replica asking for GPUs, and the key
the session server will admit (owner_key). On a secured cluster the
coordinator puts in the caller's own key; on an insecure one a key pair is
drawn here and kept on the Session (client_keys). Renew: RenewSession before
the lease runs out. Close: CancelJob.
"""
from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Dict, Optional

from .errors import DeadlineExceeded, FailedPrecondition, InvalidArgument, NotFound, Unavailable
from .jobspec import parse_memory_mib
from .keys import KeyPair, generate_key_pair
from .types import SessionInfo
from .deadline import Deadline
from .watch import POLL_INTERVAL_S

if TYPE_CHECKING:
    from .client import Client

_OPTIONS = {"name", "queue", "priority_class", "gpu_memory", "gpu_compute", "sharing_qos", "idle_timeout_ms",
            "lease_ms", "ttl_ms", "wait", "timeout_s"}


class Session:
    """An open (or opening) session. As a context manager it closes the session on exit."""

    def __init__(self, client: "Client", job_id: int, client_keys: KeyPair, info: Optional[SessionInfo]) -> None:
        self._client = client
        self.job_id = job_id
        # The key pair the session server admits: what a data-plane client must connect with.
        self.client_keys = client_keys
        self.info = info

    def refresh(self) -> SessionInfo:
        self.info = info(self._client, self.job_id)
        return self.info

    def renew(self) -> SessionInfo:
        self.info = self._client.renew_session(self.job_id)
        return self.info

    def close(self) -> None:
        self._client.close_session(self.job_id)

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        state = self.info.state if self.info else "?"
        return f"Session(job_id={self.job_id}, state={state!r})"


def info(client: "Client", job_id: int) -> SessionInfo:
    job = client.job(job_id)
    if job.summary.session is None:
        raise NotFound(f"job {job_id} is not a session")
    return job.summary.session


def wait_open(client: "Client", job_id: int, timeout_s: Optional[float]) -> SessionInfo:
    """The session once Open; FailedPrecondition once it has ended; renews its lease while it waits."""
    deadline = Deadline(timeout_s)
    renewed_at = time.monotonic()
    while True:
        state = info(client, job_id)
        if state.state == "Open":
            return state
        if state.ended:
            raise FailedPrecondition(f"session {job_id} is {state.state}" + (f": {state.reason}" if state.reason
                                                                               else ""))
        if deadline.passed():
            raise DeadlineExceeded(f"session {job_id} is still {state.state} after {timeout_s} s")
        if state.lease_ms and (time.monotonic() - renewed_at) * 1000 >= state.lease_ms / 3:
            renewed_at = time.monotonic()
            try:
                client.renew_session(job_id)  # as the CLI: a third of the lease between renewals
            except Unavailable:
                pass  # the next poll says whether the session survived; the CLI ignores it too
        deadline.sleep(POLL_INTERVAL_S)


def _count(options: Dict[str, Any], name: str, default: int, maximum: int) -> int:
    value = options.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= maximum:
        raise InvalidArgument(f"{name}: expected an integer from 0 to {maximum}, got {value!r}")
    return value


def open_session(client: "Client", gpus: int = 1, **options: Any) -> Session:
    unknown = set(options) - _OPTIONS
    if unknown:
        raise InvalidArgument(f"open_session: unknown option(s) {', '.join(sorted(unknown))}; "
                              f"known: {', '.join(sorted(_OPTIONS))}")
    timeout_s = options.get("timeout_s", 60.0)
    Deadline(timeout_s)  # a bad timeout is refused before anything is submitted
    if isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 1:
        raise InvalidArgument(f"gpus: a session needs at least one GPU, got {gpus!r}")
    resources: Dict[str, Any] = {"gpus": gpus}
    if options.get("gpu_memory") is not None:
        resources["gpu_memory_mib"] = parse_memory_mib(options["gpu_memory"], "gpu_memory")
    if options.get("gpu_compute") is not None:
        resources["gpu_compute_pct"] = _count(options, "gpu_compute", 0, 100)
    if options.get("sharing_qos"):
        resources["sharing_qos"] = str(options["sharing_qos"])
    drawn = client.curve_keys is None
    keys = generate_key_pair() if drawn else client.curve_keys
    assert keys is not None
    session = {"enabled": True, "owner_key": keys.public_key,
               "idle_timeout_ms": _count(options, "idle_timeout_ms", 900000, (1 << 64) - 1),
               "lease_ms": _count(options, "lease_ms", 0, (1 << 64) - 1)}
    spec: Dict[str, Any] = {"name": str(options.get("name", "session")), "restart": {"policy": "never", "max_attempts": 0},
                  "tasks": [{"name": "server", "replicas": 1, "command": ["gpool-rgpu-server"],
                             "resources": resources}],
                  "session": session}
    if options.get("queue"):
        spec["queue"] = str(options["queue"])
    if options.get("priority_class"):
        spec["priority_class"] = str(options["priority_class"])
    if options.get("ttl_ms"):
        spec["max_runtime_ms"] = _count(options, "ttl_ms", 0, (1 << 64) - 1)
    job_id = client.submit_spec(spec).job_id
    opened = Session(client, job_id, keys, None)
    if not options.get("wait", True):
        return opened
    try:
        opened.info = wait_open(client, job_id, timeout_s)
    except BaseException:
        client.close_session(job_id)  # not open in time: give it back rather than leave it queued
        raise
    return opened
