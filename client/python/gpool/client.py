"""gpool.Client: one method per client request of docs/protocol.md 7, as client/client.h.

    with gpool.Client("tcp://127.0.0.1:7400", insecure=True) as c:
        job = c.wait(c.submit(name="hello", command="echo hi"))

Connection settings come from the arguments, else the environment the CLI
reads (GPOOL_COORDINATOR, GPOOL_TOKEN, GPOOL_KEY_FILE, GPOOL_COORDINATOR_KEY),
else the CLI's defaults (tcp://127.0.0.1:7400; ~/.config/gpool/user.key and
coordinator.pub when both exist, else plaintext).
"""
from __future__ import annotations

import os
import secrets
import time
from datetime import datetime
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence, Union

from . import keys as keyfiles
from . import logs as logfollow
from . import sessions
from . import watch as watching
from .deadline import Deadline, check_seconds
from .errors import InvalidArgument
from .jobspec import RESOURCE_KWARGS, Spec, job_spec, load_job_file
from .transport import Connection, parse_endpoints
from .types import (CancelResult, ClusterEvent, ClusterStatus, EventPage, Explanation, Job, JobSummary, NodeSummary,
                    QueueSummary, SessionInfo, SubmitResult, TaskLog, UsageReport, WhoAmI, read)

JobRef = Union[int, SubmitResult, JobSummary, Job]
PathLike = Union[str, "os.PathLike[str]"]
_U32 = (1 << 32) - 1


def job_id_of(job: JobRef) -> int:
    """The id of a job given as an id, a SubmitResult, a JobSummary or a Job."""
    if isinstance(job, (SubmitResult, JobSummary)):
        return job.job_id
    if isinstance(job, Job):
        return job.job_id
    if isinstance(job, bool) or not isinstance(job, int):
        raise InvalidArgument(f"expected a job id, got {job!r}")
    if not 0 < job < (1 << 64):
        raise InvalidArgument(f"a job id is a positive integer, got {job}")
    return job


def _u32(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= _U32:
        raise InvalidArgument(f"{what}: expected an integer from 0 to {_U32}, got {value!r}")
    return value


def _ms(value: Union[int, float, datetime], what: str) -> int:
    if isinstance(value, datetime):
        return int(value.timestamp() * 1000)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidArgument(f"{what}: expected milliseconds since the epoch or a datetime, got {value!r}")
    return int(value)


def _env(name: str) -> Optional[str]:
    value = os.environ.get(name)
    return value if value else None


def _split(value: Union[str, Sequence[str]]) -> List[str]:
    return [v for v in value.split(",")] if isinstance(value, str) else list(value)


class Client:
    def __init__(self, coordinator: Union[str, Sequence[str], None] = None, *, token: Optional[str] = None,
                 key_file: Optional[PathLike] = None,
                 coordinator_key: Union[PathLike, Sequence[PathLike], None] = None,
                 curve_keys: Optional[keyfiles.KeyPair] = None, server_keys: Sequence[str] = (),
                 insecure: bool = False, timeout_ms: int = 5000, retries: int = 3,
                 connect_timeout_ms: int = 1000) -> None:
        """`coordinator`: endpoints ("a:7400,tcp://b:7400" or a list). CurveZMQ: `key_file` (your secret key
        file) with `coordinator_key` (the coordinator's public key file, one or one per endpoint), or
        `curve_keys` with `server_keys` (Z85). `insecure`: plaintext, for a coordinator run with --insecure;
        `token` is then its cluster token (--token-file)."""
        if coordinator is None:
            coordinator = _env("GPOOL_COORDINATOR") or "tcp://127.0.0.1:7400"
        if not isinstance(coordinator, str) and not (isinstance(coordinator, (list, tuple)) and
                                                     all(isinstance(e, str) for e in coordinator)):
            raise InvalidArgument(f"coordinator: expected endpoints as a string or a list of strings, "
                                  f"got {coordinator!r}")
        endpoints = parse_endpoints(coordinator if isinstance(coordinator, str) else ",".join(coordinator))
        token = token if token is not None else (_env("GPOOL_TOKEN") or "")
        if not isinstance(token, str):
            raise InvalidArgument("token: expected a string")
        for name, value in (("timeout_ms", timeout_ms), ("retries", retries),
                            ("connect_timeout_ms", connect_timeout_ms)):
            if isinstance(value, bool) or not isinstance(value, int):
                raise InvalidArgument(f"{name}: expected an integer, got {value!r}")
        for name, path in (("key_file", key_file), ("coordinator_key", coordinator_key)):
            paths = path if isinstance(path, (list, tuple)) else [path]
            if path is not None and not all(isinstance(p, (str, os.PathLike)) for p in paths):
                raise InvalidArgument(f"{name}: expected a file path, got {path!r}")
        if curve_keys is not None and not isinstance(curve_keys, keyfiles.KeyPair):
            raise InvalidArgument("curve_keys: expected a gpool.KeyPair")
        if isinstance(server_keys, str) or not all(keyfiles.is_z85_key(k) if isinstance(k, str) else False
                                                   for k in server_keys):
            raise InvalidArgument("server_keys: expected a list of 40-character Z85 public keys")
        if insecure and (key_file or coordinator_key or curve_keys):
            raise InvalidArgument("insecure=True is plaintext: give no keys with it")
        if curve_keys is None and not insecure:
            curve_keys, server_keys = self._keys_from_files(key_file, coordinator_key)
        elif curve_keys is not None and not server_keys:
            raise InvalidArgument("curve_keys needs server_keys: the coordinator's public key(s)")
        self._connection = Connection(endpoints, token=token, timeout_ms=timeout_ms, retries=retries,
                                      connect_timeout_ms=connect_timeout_ms, curve_keys=curve_keys,
                                      server_keys=server_keys)
        self.curve_keys = curve_keys

    @staticmethod
    def _keys_from_files(key_file: Optional[PathLike], coordinator_key: Any) -> "tuple[Optional[keyfiles.KeyPair], List[str]]":
        """The CLI's rules (client/cli.cc ApplySecurity): an explicit key file must work; the default
        files are used when both exist; a task's own exec key when it runs inside a secured job."""
        key_path = os.fspath(key_file) if key_file is not None else _env("GPOOL_KEY_FILE")
        server_paths = ([os.fspath(p) for p in _split(coordinator_key)] if isinstance(coordinator_key, (list, tuple))
                        else _split(os.fspath(coordinator_key)) if coordinator_key is not None
                        else _split(_env("GPOOL_COORDINATOR_KEY") or "") or None)
        explicit = key_path is not None
        if not explicit and coordinator_key is None:
            token, coordinator_keys = _env("GPOOL_EXEC_TOKEN"), (_env("GPOOL_COORDINATOR_PUBLIC_KEY") or "")
            task_keys = [k for k in coordinator_keys.split(",")] if coordinator_keys else []
            if token and task_keys and keyfiles.is_z85_key(token) and all(map(keyfiles.is_z85_key, task_keys)):
                return keyfiles.key_pair_of_secret(token), task_keys
        config = _env("XDG_CONFIG_HOME")
        directory = os.path.join(config, "gpool") if config else (
            os.path.join(os.environ["HOME"], ".config", "gpool") if _env("HOME") else "")
        if key_path is None and directory:
            key_path = os.path.join(directory, "user.key")
        if server_paths is None and directory:
            server_paths = [os.path.join(directory, "coordinator.pub")]
        if not explicit and (key_path is None or not os.path.exists(key_path) or not server_paths
                             or not all(os.path.exists(p) for p in server_paths)):
            return None, []  # no keys set up: plaintext
        assert key_path is not None
        if not server_paths:
            raise InvalidArgument("key_file needs coordinator_key (or GPOOL_COORDINATOR_KEY)")
        return keyfiles.read_secret_key_file(key_path), [keyfiles.read_public_key_file(p) for p in server_paths]

    # --- lifecycle ---------------------------------------------------------------------------------------

    def close(self) -> None:
        self._connection.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    @property
    def endpoint(self) -> str:
        """Where requests go now: the replica that last answered (the leader)."""
        return self._connection.endpoint

    def call(self, msg_type: str, body: Mapping[str, Any], reply_type: str,
             timeout_ms: Optional[int] = None) -> Dict[str, Any]:
        """Any client request by its type name; the reply's body as a dict. Resent on timeouts and
        redirects, so send only what 2.7 says is safe to resend."""
        return self._connection.call(msg_type, dict(body), reply_type, timeout_ms)

    # --- jobs --------------------------------------------------------------------------------------------

    def submit(self, spec: Union[Mapping[str, Any], PathLike, None] = None, *, idempotency_key: str = "",
               **fields: Any) -> SubmitResult:
        """Submits a job: a dict in the job-file format, a path to a YAML job file, or keyword
        arguments (name=, command=, replicas=, gpus=, cpus=, memory=, env=, queue=, ...), which also
        override a dict's top-level fields. Retries reuse one idempotency key, so a
        lost reply never makes a second job."""
        if spec is not None and not isinstance(spec, Mapping):
            if not isinstance(spec, (str, os.PathLike)):
                raise InvalidArgument(f"spec: expected a dict or a job file path, got {spec!r}")
            if fields:
                raise InvalidArgument("a job file takes no keyword fields: edit the file, or load it with "
                                      "gpool.load_job_file and submit_spec the result")
            return self.submit_spec(load_job_file(spec), idempotency_key=idempotency_key)
        root: Dict[str, Any] = dict(spec or {})
        resources = {k: fields.pop(k) for k in list(fields) if k in RESOURCE_KWARGS}
        root.update(fields)
        if resources:
            if "tasks" in root:
                raise InvalidArgument(f"{', '.join(resources)}: resources of a job with a tasks list go in its "
                                      f"groups")
            given = root.get("resources") or {}
            if not isinstance(given, Mapping):
                raise InvalidArgument(f"resources: expected a map, got {given!r}")
            root["resources"] = {**given, **resources}
        return self.submit_spec(job_spec(root), idempotency_key=idempotency_key)

    def submit_spec(self, spec: Spec, *, idempotency_key: str = "") -> SubmitResult:
        """Submits a JobSpec already in the wire's form (docs/protocol.md 6.3)."""
        if not isinstance(idempotency_key, str):
            raise InvalidArgument(f"idempotency_key: expected a string, got {idempotency_key!r}")
        if not isinstance(spec, Mapping):
            raise InvalidArgument(f"spec: expected a JobSpec dict, got {spec!r}")
        key = idempotency_key or secrets.token_hex(16)
        if len(key.encode("utf-8", "surrogateescape")) > 256:
            raise InvalidArgument("idempotency_key: longer than 256 bytes")
        reply = self.call("SubmitJob", {"spec": spec, "idempotency_key": key}, "SubmitJobReply")
        return SubmitResult(int(reply["job_id"]), bool(reply.get("duplicate", False)))

    def run(self, spec: Union[Mapping[str, Any], PathLike, None] = None, *, timeout_s: Optional[float] = None,
            **fields: Any) -> Job:
        """Submits a job and waits for it to end; the final job."""
        return self.wait(self.submit(spec, **fields), timeout_s=timeout_s)

    def jobs(self, include_finished: bool = True, limit: int = 1000, *,
             sessions_only: bool = False) -> List[JobSummary]:
        """Newest first; `limit` 0: every job. sessions_only: rGPU sessions only (the limit counts those)."""
        body = {"include_finished": bool(include_finished), "limit": _u32(limit, "limit")}
        if sessions_only:
            body["sessions_only"] = True  # a field of protocol/messages_client.h ListJobs
        reply = self.call("ListJobs", body, "ListJobsReply")
        return [JobSummary.from_wire(j) for j in reply.get("jobs") or []]

    def job(self, job: JobRef) -> Job:
        return Job.from_wire(self.call("GetJob", {"job_id": job_id_of(job)}, "GetJobReply"))

    def cancel(self, job: JobRef, grace_ms: int = 10000) -> CancelResult:
        """SIGTERM to its tasks, SIGKILL after grace_ms (0: the coordinator's --preempt-grace-ms). Answered
        once the cancel is committed; wait() for the final state."""
        reply = self.call("CancelJob", {"job_id": job_id_of(job), "grace_ms": _u32(grace_ms, "grace_ms")},
                          "CancelJobReply")
        return CancelResult(int(reply["job_id"]), str(reply["state"]))

    def explain(self, job: JobRef) -> Explanation:
        return Explanation.from_wire(self.call("ExplainJob", {"job_id": job_id_of(job)}, "ExplainJobReply"))

    def wait(self, job: JobRef, *, timeout_s: Optional[float] = None,
             poll_interval_s: float = watching.POLL_INTERVAL_S) -> Job:
        """Blocks until the job has ended (Succeeded, Failed or Cancelled); the final job.
        DeadlineExceeded after timeout_s (None: no limit). Follows a `job` watch; from a coordinator
        without watches, polls GetJob every poll_interval_s."""
        check_seconds(poll_interval_s, "poll_interval_s")
        return watching.wait(self, job_id_of(job), timeout_s=timeout_s, poll_interval_s=poll_interval_s)

    def logs(self, job: JobRef, task: int = 0, *, max_bytes: int = 65536) -> TaskLog:
        """The last max_bytes of a task's combined stdout and stderr."""
        reply = self.call("GetTaskLog", {"job_id": job_id_of(job), "task_index": _u32(task, "task"),
                                         "max_bytes": _u32(max_bytes, "max_bytes")}, "GetTaskLogReply",
                          timeout_ms=max(self._connection.timeout_ms, 5000))
        data = reply.get("data", b"")
        if isinstance(data, str):  # an older coordinator's str
            data = data.encode("utf-8", "surrogateescape")
        return TaskLog(bytes(data), int(reply.get("size", 0)), bool(reply.get("truncated", False)),
                       int(reply.get("dropped", 0)))

    def follow_logs(self, job: JobRef, task: int = 0, *, poll_interval_s: float = 0.5,
                    timeout_s: Optional[float] = None) -> Iterator[bytes]:
        """Yields a task's log as it grows, from its start, until the task has ended and its log is read."""
        check_seconds(poll_interval_s, "poll_interval_s")
        Deadline(timeout_s)  # checks it now rather than at the first next()
        return logfollow.follow_log(self, job_id_of(job), _u32(task, "task"), poll_interval_s=poll_interval_s,
                                timeout_s=timeout_s)

    def watch(self, topic: str, key: str = "", *, after: int = 0,
              timeout_s: Optional[float] = None) -> "watching.Watch":
        """Server-pushed updates of a topic (protocol.md 7.19): `job` (key: the job id), `jobs` (key "",
        "user:NAME" or "queue:NAME"), `nodes` (key "" or a node name) or `events`. Iterate it for
        WatchUpdates; the first is the snapshot (reset) or the changes after `after`. Close it when done
        (or use it in a `with` block). UnknownType from a coordinator that predates watches."""
        return watching.Watch(self, topic, key, after=after, timeout_s=timeout_s)

    # --- cluster -----------------------------------------------------------------------------------------

    def nodes(self, devices: bool = False) -> List[NodeSummary]:
        reply = self.call("ListNodes", {"devices": bool(devices)}, "ListNodesReply")
        return [read(NodeSummary, n) for n in reply.get("nodes") or []]

    def queues(self) -> List[QueueSummary]:
        return [QueueSummary.from_wire(q) for q in self.call("ListQueues", {}, "ListQueuesReply").get("queues") or []]

    def events(self, after_seq: int = 0, *, node: str = "", job: Optional[JobRef] = None,
               limit: int = 100) -> EventPage:
        """Committed cluster events after after_seq, oldest first; ask again from page.last_seq."""
        if isinstance(after_seq, bool) or not isinstance(after_seq, int) or after_seq < 0:
            raise InvalidArgument(f"after_seq: expected a non-negative integer, got {after_seq!r}")
        body = {"after_seq": after_seq, "node": str(node), "job": job_id_of(job) if job is not None else 0,
                "limit": _u32(limit, "limit")}
        reply = self.call("ListEvents", body, "ListEventsReply")
        return EventPage([read(ClusterEvent, e) for e in reply.get("events") or []],
                         int(reply.get("last_seq", 0)), int(reply.get("first_kept_seq", 0)))

    def usage(self, from_ms: Union[int, float, datetime, None] = None, to_ms: Union[int, float, datetime, None] = None,
              *, by: str = "user", queue: str = "", include_running: bool = True) -> UsageReport:
        """Usage over [from_ms, to_ms) (hour-aligned by the coordinator; default: the last 24 hours), summed by
        user, queue, model, pool, job, class or detail, of what the caller may see."""
        now = int(time.time() * 1000)
        body = {"from_ms": _ms(from_ms, "from_ms") if from_ms is not None else now - 24 * 3600 * 1000,
                "to_ms": _ms(to_ms, "to_ms") if to_ms is not None else now, "by": str(by),
                "include_running": bool(include_running)}
        if queue:
            body["queue"] = str(queue)
        return UsageReport.from_wire(self.call("GetUsage", body, "GetUsageReply"))

    def status(self) -> ClusterStatus:
        return read(ClusterStatus, self.call("ClusterStatus", {}, "ClusterStatusReply"))

    def whoami(self) -> WhoAmI:
        return WhoAmI.from_wire(self.call("WhoAmI", {}, "WhoAmIReply"))

    # --- rGPU sessions (7.17) ----------------------------------------------------------------------------

    def open_session(self, gpus: int = 1, **options: Any) -> "sessions.Session":
        """Opens a remote GPU session (a job with session.enabled) and, unless wait=False, waits until it is
        Open. Options: name, queue, priority_class, gpu_memory, gpu_compute, sharing_qos, idle_timeout_ms,
        lease_ms, ttl_ms, wait, timeout_s. Use it as a context manager to close it."""
        return sessions.open_session(self, gpus, **options)

    def session(self, session: JobRef) -> SessionInfo:
        return sessions.info(self, job_id_of(session))

    def renew_session(self, session: JobRef) -> SessionInfo:
        reply = self.call("RenewSession", {"job_id": job_id_of(session)}, "RenewSessionReply")
        return read(SessionInfo, reply.get("session"))

    def close_session(self, session: JobRef) -> CancelResult:
        return self.cancel(session, grace_ms=0)

    def sessions(self, include_finished: bool = False, limit: int = 1000) -> List[JobSummary]:
        """rGPU sessions, newest first (JobSummary.session holds each one's state)."""
        return self.jobs(include_finished, limit, sessions_only=True)
