"""Exceptions named after the protocol's status codes (docs/protocol.md 5.2).

Every failure the SDK reports is a GpoolError: the coordinator's ErrorReply,
a timeout (Unavailable), or bad input caught before anything is sent
(InvalidArgument). Catch a subclass to branch on the code; `message` is for
people and is not stable.
"""
from __future__ import annotations

from typing import Dict, Type


class GpoolError(Exception):
    """A failed gpool call: `code` is the protocol's error code name."""

    code = "Internal"

    def __init__(self, message: str, *, leader: str = "") -> None:
        super().__init__(f"{self.code}: {message}")
        self.message = message
        # Only NotLeader fills it: the leader's client endpoint, when known.
        self.leader = leader


class InvalidArgument(GpoolError):
    code = "InvalidArgument"


class NotFound(GpoolError):
    code = "NotFound"


class AlreadyExists(GpoolError):
    code = "AlreadyExists"


class FailedPrecondition(GpoolError):
    code = "FailedPrecondition"


class ResourceExhausted(GpoolError):
    code = "ResourceExhausted"


class Unavailable(GpoolError):
    code = "Unavailable"


class NotLeader(GpoolError):
    code = "NotLeader"


class StaleEpoch(GpoolError):
    code = "StaleEpoch"


class Unauthenticated(GpoolError):
    code = "Unauthenticated"


class Malformed(GpoolError):
    code = "Malformed"


class UnknownType(GpoolError):
    code = "UnknownType"


class UnsupportedVersion(GpoolError):
    code = "UnsupportedVersion"


class Internal(GpoolError):
    code = "Internal"


class IoError(GpoolError):
    code = "IoError"


class DeadlineExceeded(GpoolError):
    code = "DeadlineExceeded"


class PermissionDenied(GpoolError):
    code = "PermissionDenied"


ERRORS_BY_CODE: Dict[str, Type[GpoolError]] = {
    cls.code: cls
    for cls in (InvalidArgument, NotFound, AlreadyExists, FailedPrecondition, ResourceExhausted, Unavailable,
                NotLeader, StaleEpoch, Unauthenticated, Malformed, UnknownType, UnsupportedVersion, Internal,
                IoError, DeadlineExceeded, PermissionDenied)
}


def error_from_reply(code: str, message: str, leader: str = "") -> GpoolError:
    """The exception for an ErrorReply. An unknown code is Internal, as the C++ client does (5.2)."""
    cls = ERRORS_BY_CODE.get(code)
    if cls is None:
        return Internal(f"peer sent unknown error code '{code}': {message}")
    return cls(message, leader=leader)
