"""Typed views of replies read from their wire maps alone (no coordinator)."""
from __future__ import annotations

import gpool


def test_job_exposes_each_scaled_groups_target_and_last_change() -> None:
    job = gpool.Job.from_wire({
        "summary": {"job_id": 7, "name": "elastic", "state": "Running"},
        "spec": {"tasks": [{"name": "main", "replicas": 4, "min_replicas": 1,
                            "scale": {"rules": [{"trigger": "queue-depth", "grow_above": 0}]}}]},
        "tasks": [],
        "scale": [{"group": "main", "min": 1, "max": 4, "target": 3, "cooldown_ms": 60000,
                   "cooldown_left_ms": 45000,
                   "last": {"time_ms": 1700000000000, "from": 2, "to": 3, "trigger": "queue-depth",
                            "reason": "queue default: 1 pending"}}],
    })
    assert job.scale_target == {"main": 3}
    group = job.scale[0]
    assert (group.min, group.max, group.cooldown_left_ms) == (1, 4, 45000)
    assert (group.last.from_replicas, group.last.to_replicas, group.last.trigger) == (2, 3, "queue-depth")
    assert group.last.reason == "queue default: 1 pending"


def test_a_job_without_scale_rules_or_from_an_older_coordinator_has_no_target() -> None:
    job = gpool.Job.from_wire({"summary": {"job_id": 8, "state": "Running"}, "spec": {}, "tasks": []})
    assert job.scale == []
    assert job.scale_target == {}
    never = gpool.GroupScale.from_wire({"group": "main", "target": 1})
    assert never.last.time_ms == 0
