"""gpool: a Python client for the gpool coordinator (docs/python.md).

    import gpool
    with gpool.Client("tcp://127.0.0.1:7400", insecure=True) as client:
        job = client.wait(client.submit(name="hello", command="echo hi"))
        print(job.state, client.logs(job).text)
"""
from .client import Client, job_id_of
from .errors import (AlreadyExists, DeadlineExceeded, FailedPrecondition, GpoolError, Internal, InvalidArgument,
                     IoError, Malformed, NotFound, NotLeader, PermissionDenied, ResourceExhausted, StaleEpoch,
                     Unauthenticated, Unavailable, UnknownType, UnsupportedVersion)
from .jobspec import job_spec, load_job_file, parse_job_yaml
from .keys import KeyPair, generate_key_pair, read_public_key_file, read_secret_key_file
from .sessions import Session
from .watch import Watch, WatchUpdate
from .types import (CancelResult, ClusterEvent, ClusterStatus, EventPage, Explanation, GroupScale, Job, JobSummary,
                    NodeSummary, QueueSummary, ScaleChange, SessionInfo, SubmitResult, TaskInfo, TaskLog, UsageReport,
                    UsageRow, WhoAmI)

__version__ = "0.1.0"

__all__ = [
    "Client", "job_id_of", "Session", "Watch", "WatchUpdate",
    "GpoolError", "InvalidArgument", "NotFound", "AlreadyExists", "FailedPrecondition", "ResourceExhausted",
    "Unavailable", "NotLeader", "StaleEpoch", "Unauthenticated", "Malformed", "UnknownType", "UnsupportedVersion",
    "Internal", "IoError", "DeadlineExceeded", "PermissionDenied",
    "job_spec", "load_job_file", "parse_job_yaml",
    "KeyPair", "generate_key_pair", "read_public_key_file", "read_secret_key_file",
    "CancelResult", "ClusterEvent", "ClusterStatus", "EventPage", "Explanation", "Job", "JobSummary", "NodeSummary",
    "QueueSummary", "SessionInfo", "SubmitResult", "TaskInfo", "TaskLog", "UsageReport", "UsageRow", "WhoAmI",
    "GroupScale", "ScaleChange",
]
