"""Typed views of the coordinator's replies (docs/protocol.md 6 and 7).

Each class reads the fields it names from the reply map, with the protocol's
defaults for missing ones, and keeps the whole map in `raw`: a newer
coordinator may add fields (3.1), and they stay reachable there.
"""
from __future__ import annotations

import dataclasses
import html
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Type, TypeVar

T = TypeVar("T")

JOB_STATES = ("Pending", "Running", "Succeeded", "Failed", "Cancelled")
TERMINAL_JOB_STATES = frozenset({"Succeeded", "Failed", "Cancelled"})
ENDED_SESSION_STATES = frozenset({"Closed", "Expired", "Preempted", "Failed"})


def _read(cls: Type[T], wire: Optional[Mapping[str, Any]], **nested: Any) -> T:
    """An instance of dataclass `cls` from a reply map: its fields by name, `nested` already converted."""
    wire = wire or {}
    values: Dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if f.name == "raw":
            values["raw"] = dict(wire)
        elif f.name in nested:
            values[f.name] = nested[f.name]
        elif f.metadata.get("wire", f.name) in wire and wire[f.metadata.get("wire", f.name)] is not None:
            values[f.name] = wire[f.metadata.get("wire", f.name)]
    return cls(**values)


def _raw() -> Any:
    return field(default_factory=dict, repr=False, compare=False)


@dataclass
class SessionInfo:
    """An rGPU session's state (7.17); on JobSummary.session for session jobs."""
    state: str = ""
    reason: str = ""
    endpoint: str = ""
    server_key: str = ""
    owner_key: str = ""
    node: str = ""
    renew_ms: int = 0
    lease_ms: int = 0
    idle_timeout_ms: int = 0
    ttl_ms: int = 0
    gpu_ms: int = 0
    raw: Dict[str, Any] = _raw()

    @property
    def ended(self) -> bool:
        return self.state in ENDED_SESSION_STATES


@dataclass
class JobSummary:
    """One job as ListJobs lists it (6.10)."""
    job_id: int = 0
    name: str = ""
    queue: str = ""
    priority: int = 0
    priority_class: str = ""
    state: str = ""
    tasks_total: int = 0
    tasks_running: int = 0
    tasks_finished: int = 0
    gpus: int = 0
    submit_ms: int = 0
    start_ms: int = 0
    finish_ms: int = 0
    reason: str = ""
    session: Optional[SessionInfo] = None
    raw: Dict[str, Any] = _raw()

    @classmethod
    def from_wire(cls, wire: Mapping[str, Any]) -> "JobSummary":
        session = wire.get("session")
        # A job that is no session carries no session map, or an empty state.
        info = _read(SessionInfo, session) if isinstance(session, Mapping) and session.get("state") else None
        return _read(cls, wire, session=info)

    @property
    def finished(self) -> bool:
        return self.state in TERMINAL_JOB_STATES

    def _repr_html_(self) -> str:
        return _table([("job", self.job_id), ("name", self.name), ("queue", self.queue), ("state", self.state),
                       ("tasks", f"{self.tasks_running} running, {self.tasks_finished}/{self.tasks_total} done"),
                       ("GPUs", self.gpus), ("reason", self.reason)])


@dataclass
class TaskInfo:
    """One task of a job (6.11)."""
    index: int = 0
    attempt: int = 0
    group: str = ""
    state: str = ""
    node: str = ""
    gpu_indices: List[int] = field(default_factory=list)
    gpu_uuids: List[str] = field(default_factory=list)
    cpu_milli: int = 0
    memory_mib: int = 0
    pid: int = 0
    exit_code: int = 0
    signal: int = 0
    start_ms: int = 0
    finish_ms: int = 0
    message: str = ""
    gpu_memory_used_mib: int = -1
    raw: Dict[str, Any] = _raw()


@dataclass
class ScaleChange:
    """One committed change of an elastic group's replica target (issue 50); time_ms 0: none yet."""
    time_ms: int = 0
    from_replicas: int = field(default=0, metadata={"wire": "from"})
    to_replicas: int = field(default=0, metadata={"wire": "to"})
    trigger: str = ""
    reason: str = ""
    raw: Dict[str, Any] = _raw()


@dataclass
class GroupScale:
    """An elastic group with scale rules as the coordinator has it (GetJobReply.scale, 7.3): its bounds,
    the replicas it may run now (`target`), its last change and the cool-down left. The rules are in
    Job.spec."""
    group: str = ""
    min: int = 0
    max: int = 0
    target: int = 0
    cooldown_ms: int = 0
    cooldown_left_ms: int = 0
    last: ScaleChange = field(default_factory=ScaleChange)
    raw: Dict[str, Any] = _raw()

    @classmethod
    def from_wire(cls, wire: Mapping[str, Any]) -> "GroupScale":
        last = wire.get("last")
        return _read(cls, wire, last=_read(ScaleChange, last if isinstance(last, Mapping) else {}))


@dataclass
class Job:
    """A job in full (GetJobReply, 7.3): summary, spec as stored, tasks, reasons, and the scaling of
    its groups with scale rules."""
    summary: JobSummary
    spec: Dict[str, Any]
    tasks: List[TaskInfo]
    reasons: List[str] = field(default_factory=list)
    scale: List[GroupScale] = field(default_factory=list)
    raw: Dict[str, Any] = _raw()

    @classmethod
    def from_wire(cls, wire: Mapping[str, Any]) -> "Job":
        return cls(summary=JobSummary.from_wire(wire.get("summary") or {}), spec=dict(wire.get("spec") or {}),
                   tasks=[_read(TaskInfo, t) for t in wire.get("tasks") or []],
                   reasons=list(wire.get("reasons") or []),
                   scale=[GroupScale.from_wire(g) for g in wire.get("scale") or []], raw=dict(wire))

    @property
    def scale_target(self) -> Dict[str, int]:
        """The replicas each group with scale rules may run now, by group name; {} without rules."""
        return {g.group: g.target for g in self.scale}

    @property
    def job_id(self) -> int:
        return self.summary.job_id

    @property
    def name(self) -> str:
        return self.summary.name

    @property
    def state(self) -> str:
        return self.summary.state

    @property
    def finished(self) -> bool:
        return self.summary.finished

    @property
    def succeeded(self) -> bool:
        return self.summary.state == "Succeeded"

    def _repr_html_(self) -> str:
        rows = "".join(
            f"<tr><td>{t.index}</td><td>{_e(t.group)}</td><td>{_e(t.state)}</td><td>{_e(t.node)}</td>"
            f"<td>{_e(','.join(map(str, t.gpu_indices)))}</td><td>{t.exit_code}</td><td>{_e(t.message)}</td></tr>"
            for t in self.tasks)
        reasons = "".join(f"<li>{_e(r)}</li>" for r in self.reasons)
        return (self.summary._repr_html_() +
                "<table><tr><th>task</th><th>group</th><th>state</th><th>node</th><th>GPUs</th><th>exit</th>"
                f"<th>message</th></tr>{rows}</table>" + (f"<ul>{reasons}</ul>" if reasons else ""))


@dataclass
class SubmitResult:
    job_id: int
    duplicate: bool = False


@dataclass
class CancelResult:
    job_id: int
    state: str


@dataclass
class TaskLog:
    """The tail of a task's log (GetTaskLogReply, 7.6). `data` is raw bytes, not necessarily UTF-8."""
    data: bytes = b""
    size: int = 0
    truncated: bool = False
    dropped: int = 0

    @property
    def text(self) -> str:
        return self.data.decode("utf-8", "replace")


@dataclass
class NodeSummary:
    """One node (6.12). Devices and NUMA nodes are in raw when asked for."""
    name: str = ""
    state: str = ""
    hostname: str = ""
    gpus_total: int = 0
    gpus_used: int = 0
    cpu_milli_total: int = 0
    cpu_milli_used: int = 0
    memory_mib_total: int = 0
    memory_mib_used: int = 0
    gpu_models: List[str] = field(default_factory=list)
    tasks: int = 0
    cordoned: bool = False
    pool: str = ""
    pool_queue: str = ""
    labels: Dict[str, str] = field(default_factory=dict)
    taints: Dict[str, str] = field(default_factory=dict)
    last_seen_ms: int = 0
    devices: List[Dict[str, Any]] = field(default_factory=list)
    health: List[Dict[str, Any]] = field(default_factory=list)
    raw: Dict[str, Any] = _raw()

    @property
    def ready(self) -> bool:
        return self.state.split(",")[0] == "Ready"


@dataclass
class QueueSummary:
    """One queue with its quotas, usage and job counts (6.15, 6.16)."""
    name: str = ""
    parent: str = ""
    capability: Dict[str, int] = field(default_factory=dict)
    deserved: Dict[str, int] = field(default_factory=dict)
    guarantee: Dict[str, int] = field(default_factory=dict)
    pools: List[str] = field(default_factory=list)
    # The preemption policy (issue 50): classes of its jobs that may preempt
    # its low work, and whether other queues may reclaim that work.
    preempting_classes: List[str] = field(default_factory=lambda: ["high", "system"])
    low_reclaimable: bool = True
    allocated: Dict[str, int] = field(default_factory=dict)
    jobs_pending: int = 0
    jobs_running: int = 0
    granted_classes: List[str] = field(default_factory=list)  # classes above medium granted to it (issue 50)
    raw: Dict[str, Any] = _raw()

    @classmethod
    def from_wire(cls, wire: Mapping[str, Any]) -> "QueueSummary":
        spec = wire.get("spec") or {}
        return _read(cls, {**spec, **{k: v for k, v in wire.items() if k != "spec"}})


@dataclass
class Explanation:
    """Why a job is where it is (ExplainJobReply, 7.12)."""
    job: JobSummary
    reasons: List[str] = field(default_factory=list)
    queue_path: List[QueueSummary] = field(default_factory=list)
    jobs_ahead: int = 0
    raw: Dict[str, Any] = _raw()

    @classmethod
    def from_wire(cls, wire: Mapping[str, Any]) -> "Explanation":
        return cls(job=JobSummary.from_wire(wire.get("job") or {}), reasons=list(wire.get("reasons") or []),
                   queue_path=[QueueSummary.from_wire(q) for q in wire.get("queue_path") or []],
                   jobs_ahead=int(wire.get("jobs_ahead") or 0), raw=dict(wire))


@dataclass
class ClusterEvent:
    """One committed cluster event (7.13)."""
    seq: int = 0
    time_ms: int = 0
    kind: str = ""
    node: str = ""
    job: int = 0
    task: int = 0
    attempt: int = 0
    severity: str = ""
    reason: str = ""
    actor: str = ""
    message: str = ""
    dedupe_key: str = ""
    raw: Dict[str, Any] = _raw()


@dataclass
class EventPage:
    """ListEventsReply: `last_seq` is where the next request continues."""
    events: List[ClusterEvent]
    last_seq: int = 0
    first_kept_seq: int = 0


@dataclass
class UsageRow:
    """One line of a usage report (7.18). gpu_mms is milli-GPU x ms: 3.6e9 is one GPU-hour."""
    user: str = ""
    queue: str = ""
    pool: str = ""
    model: str = ""
    priority_class: str = field(default="", metadata={"wire": "class"})
    job: int = 0
    records: int = 0
    running: int = 0
    gpu_mms: int = 0
    share_gpu_mms: int = 0
    running_gpu_mms: int = 0
    cpu_core_ms: int = 0
    memory_mib_s: int = 0
    estimated: int = 0
    raw: Dict[str, Any] = _raw()

    @property
    def gpu_hours(self) -> float:
        return self.gpu_mms / 3.6e9


@dataclass
class UsageReport:
    from_ms: int = 0
    to_ms: int = 0
    now_ms: int = 0
    by: str = ""
    records_kept_from_ms: int = 0
    rows: List[UsageRow] = field(default_factory=list)
    raw: Dict[str, Any] = _raw()

    @classmethod
    def from_wire(cls, wire: Mapping[str, Any]) -> "UsageReport":
        return _read(cls, wire, rows=[_read(UsageRow, r) for r in wire.get("rows") or []])


@dataclass
class WhoAmI:
    """Who the coordinator takes the caller for: kind user, job, bootstrap or insecure (7.16)."""
    kind: str = ""
    name: str = ""
    roles: List[Dict[str, str]] = field(default_factory=list)
    raw: Dict[str, Any] = _raw()

    @classmethod
    def from_wire(cls, wire: Mapping[str, Any]) -> "WhoAmI":
        user = wire.get("user") or {}
        return cls(kind=str(wire.get("kind", "")), name=str(user.get("name", "")),
                   roles=list(user.get("roles") or []), raw=dict(wire))


@dataclass
class ClusterStatus:
    """The answering replica's view (7.7)."""
    replica_id: str = ""
    role: str = ""
    term: int = 0
    commit_index: int = 0
    applied_index: int = 0
    replicas: List[Dict[str, Any]] = field(default_factory=list)
    nodes_ready: int = 0
    nodes_total: int = 0
    jobs_pending: int = 0
    jobs_running: int = 0
    gpus_total: int = 0
    gpus_used: int = 0
    disk_full: bool = False
    raw: Dict[str, Any] = _raw()


def read(cls: Type[T], wire: Optional[Mapping[str, Any]]) -> T:
    """A reply map as `cls` (for the classes without nested structures)."""
    return _read(cls, wire)


def _e(value: Any) -> str:
    return html.escape(str(value))


def _table(rows: List[Any]) -> str:
    return "<table>" + "".join(f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>" for k, v in rows) + "</table>"
