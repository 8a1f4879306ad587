"""A deadline for the SDK's waiting loops (wait, follow_logs, sessions, watches): None means no limit."""
from __future__ import annotations

import time
from typing import Any, Optional

from .errors import InvalidArgument


def check_seconds(value: Any, name: str) -> float:
    """A non-negative number of seconds, else InvalidArgument naming `name`."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
        raise InvalidArgument(f"{name}: expected a non-negative number of seconds, got {value!r}")
    return float(value)


class Deadline:
    def __init__(self, timeout_s: Optional[float]) -> None:
        if timeout_s is not None:
            check_seconds(timeout_s, "timeout_s")
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

    def cap(self, seconds: float) -> float:
        """`seconds`, or less when the deadline comes sooner."""
        left = self.left()
        return seconds if left is None else max(0.0, min(seconds, left))
