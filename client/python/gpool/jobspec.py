"""Job specs from the CLI's job-file format (client/job_spec_file.cc, client/examples/*.yaml).

The same format serves YAML files, Python dicts and keyword arguments, and
becomes the wire's JobSpec (docs/protocol.md 6.3):

    name: hello
    replicas: 2                      # one task group directly under the job,
    command: echo hi                 # or a `tasks:` list of groups
    resources: {gpus: 1, cpus: 0.5, memory: 256Mi}

Quantities take units as the CLI's do: cpus "2", "0.5" or "500m"; memory and
gpu_memory "4096" (MiB), "80Gi", "4G"; grace_period and max_runtime "90",
"90s", "5m", "2h", "250ms". A dict may also use the wire's names for them
(cpu_milli, memory_mib, gpu_memory_mib, gpu_compute_pct, grace_period_ms,
max_runtime_ms). Every mistake is an InvalidArgument naming the field; the
coordinator validates the rest (its errors start with `spec: `).
"""
from __future__ import annotations

import difflib
import os
import re
from decimal import Decimal, InvalidOperation
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple, Union

from .errors import InvalidArgument, ResourceExhausted

MAX_SPEC_FILE_BYTES = 4 << 20  # as the CLI: the coordinator takes up to --max-spec-bytes anyway
_MAX_CPU_MILLI = 1 << 40
_MAX_MEMORY_MIB = 1 << 40
_U32 = (1 << 32) - 1

# Wire names a dict may use instead of the file's, with how they are read.
_WIRE_RESOURCE_KEYS = ("cpu_milli", "memory_mib", "gpu_memory_mib", "gpu_compute_pct")
_RESOURCE_KEYS = ("gpus", "cpus", "memory", "gpu_model", "gpu_memory", "gpu_memory_pct", "gpu_compute",
                  "sharing_qos", "mig_profile", "cores") + _WIRE_RESOURCE_KEYS
_SHORTHAND_KEYS = ("command", "replicas", "min_replicas", "resources", "env", "scale")
_GROUP_KEYS = ("name", "replicas", "min_replicas", "network_tier", "command", "env", "resources", "scale")
# An elastic group's scale rules (protocol/scale_rule.h); the coordinator checks the values.
_SCALE_KEYS = ("cooldown", "cooldown_ms", "rules")
_SCALE_RULE_KEYS = ("trigger", "grow_above", "shrink_below", "queue", "window", "step")
_JOB_KEYS = ("name", "queue", "priority", "priority_class", "pool", "user", "node_selector", "prefer_labels",
             "tolerations", "numa_policy", "node_policy", "gpu_policy", "network_mode", "network_tier",
             "gpu_uuid_allow", "gpu_uuid_deny",
             "restart", "grace_period", "max_runtime", "grace_period_ms", "max_runtime_ms", "tasks") + \
    _SHORTHAND_KEYS
# A job's node_policy and gpu_policy (protocol/types.h PlacementPolicy).
PLACEMENT_POLICIES = ("default", "binpack", "spread")
# Keyword arguments of Client.submit that go to the single group's resources.
RESOURCE_KWARGS = frozenset(_RESOURCE_KEYS)

Spec = Dict[str, Any]


def _where(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _error(path: str, problem: str) -> InvalidArgument:
    return InvalidArgument(f"{path}: {problem}" if path else problem)


def _check_keys(node: Any, path: str, allowed: Tuple[str, ...]) -> Mapping[str, Any]:
    if not isinstance(node, Mapping):
        raise _error(path or "job spec", f"expected a map, got {node!r}")
    for key in node:
        if not isinstance(key, str):
            raise _error(path or "job spec", "keys must be plain strings")
        if key not in allowed:
            near = difflib.get_close_matches(key.lower(), allowed, n=1, cutoff=0.6)
            hint = f" (did you mean '{near[0]}'?)" if near else ""
            raise _error(_where(path, key), f"unknown key{hint}; allowed keys: {', '.join(allowed)}")
    return node


def _scalar(value: Any, path: str, what: str) -> str:
    """A scalar as text, as yaml-cpp hands it to the CLI's parser."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, int, float)):
        return str(value)
    raise _error(path, f"expected {what}, got {value!r}")


def _string(value: Any, path: str) -> str:
    return _scalar(value, path, "a string")


def _unsigned(value: Any, path: str, maximum: int) -> int:
    text = _scalar(value, path, "a non-negative integer").strip()
    if isinstance(value, (bool, float)) or not re.fullmatch(r"[0-9]{1,20}", text):
        raise _error(path, f"expected a non-negative integer, got {value!r}")
    if int(text) > maximum:
        raise _error(path, f"must be at most {maximum}, got {value!r}")
    return int(text)


def _int32(value: Any, path: str) -> int:
    text = _scalar(value, path, "an integer").strip()
    if isinstance(value, (bool, float)) or not re.fullmatch(r"[+-]?[0-9]{1,11}", text):
        raise _error(path, f"expected an integer, got {value!r}")
    number = int(text)
    if not -(1 << 31) <= number < (1 << 31):
        raise _error(path, f"out of range, got {value!r}")
    return number


def _decimal_prefix(text: str) -> "tuple[Optional[Decimal], str]":
    match = re.match(r"([0-9]*\.?[0-9]*)", text)
    number = match.group(1) if match else ""
    if not any(c.isdigit() for c in number) or sum(c.isdigit() for c in number) > 24:
        return None, text
    try:
        return Decimal(number), text[len(number):]
    except InvalidOperation:
        return None, text


def parse_cpu_milli(value: Any, path: str = "cpus") -> int:
    """'2', '0.5', '500m' (or 2, 0.5) -> milli-CPU."""
    text = _scalar(value, path, "a number of cores").strip()
    number, unit = _decimal_prefix(text)
    bad = _error(path, f"'{text[:40]}' is not a CPU count (use cores such as 2 or 0.5, or milli-cores such as 500m)")
    if number is None or isinstance(value, bool):
        raise bad
    unit = unit.strip()
    if unit == "":
        milli = number * 1000
        if milli != milli.to_integral_value():
            raise _error(path, f"'{text[:40]}' is finer than 1/1000 of a core")
    elif unit == "m":
        if "." in text:
            raise _error(path, f"'{text[:40]}' is not a CPU count (milli-cores are whole)")
        milli = number
    else:
        raise bad
    if milli > _MAX_CPU_MILLI:
        raise _error(path, f"'{text[:40]}' is too large")
    return int(milli)


_MEMORY_UNITS = {"": 1 << 20, "ki": 1 << 10, "mi": 1 << 20, "gi": 1 << 30, "ti": 1 << 40, "pi": 1 << 50,
                 "k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12, "p": 10**15}


def parse_memory_mib(value: Any, path: str = "memory") -> int:
    """'4096' (MiB), '80Gi', '4G', '512MiB' -> MiB, rounded up (a task gets at least what it asks)."""
    text = _scalar(value, path, "a size like 4Gi").strip()
    number, unit = _decimal_prefix(text)
    unit = unit.strip().lower()
    if len(unit) > 1 and unit.endswith("b"):
        unit = unit[:-1]
    if number is None or isinstance(value, bool) or unit not in _MEMORY_UNITS:
        raise _error(path, f"'{text[:40]}' is not a memory size (use MiB such as 4096, or a number with Ki, Mi, "
                           f"Gi, Ti, Pi or K, M, G, T, P such as 80Gi)")
    num, den = number.as_integer_ratio()
    numerator = num * _MEMORY_UNITS[unit]
    denominator = den << 20
    mib = -(-numerator // denominator)
    if mib > _MAX_MEMORY_MIB:
        raise _error(path, f"'{text[:40]}' is too large")
    return mib


def parse_duration_ms(value: Any, path: str) -> int:
    """'90' (seconds), '90s', '5m', '2h', '250ms' -> ms."""
    text = _scalar(value, path, "a duration")
    bad = _error(path, f"'{text[:64]}' is not a duration (like 90, 90s, 5m, 2h or 250ms)")
    unit_ms = 1000
    for suffix, ms in (("ms", 1), ("s", 1000), ("m", 60_000), ("h", 3_600_000)):
        if len(text) > len(suffix) and text.endswith(suffix):
            text, unit_ms = text[:-len(suffix)], ms
            break
    if isinstance(value, (bool, float)) or not re.fullmatch(r"[0-9]{1,10}", text) or int(text) > 1_000_000_000:
        raise bad
    return int(text) * unit_ms


def _command(value: Any, path: str) -> List[str]:
    if isinstance(value, str):
        if not value.strip():
            raise _error(path, "must not be empty")
        return ["sh", "-c", value]
    if not isinstance(value, (list, tuple)):
        raise _error(path, f"expected a list of strings or one string, got {value!r}")
    argv = [_string(arg, f"{path}[{i}]") for i, arg in enumerate(value)]
    if not argv:
        raise _error(path, "must name a program to run")
    return argv


def _string_map(value: Any, path: str, what: str) -> Dict[str, str]:
    if not isinstance(value, Mapping):
        raise _error(path, f"expected a map of {what}: value, got {value!r}")
    out = {}
    for key, item in value.items():
        if not isinstance(key, str):
            raise _error(path, "keys must be plain strings")
        out[key] = _string(item, _where(path, key))
    return out


def _string_list(value: Any, path: str) -> List[str]:
    if not isinstance(value, (list, tuple)):
        raise _error(path, f"expected a list of strings, got {value!r}")
    return [_string(item, f"{path}[{i}]") for i, item in enumerate(value)]


def _resources(node: Any, path: str) -> Dict[str, Any]:
    node = _check_keys(node, path, _RESOURCE_KEYS)
    out: Dict[str, Any] = {}
    readers: Dict[str, Callable[[Any, str], Any]] = {
        "gpus": lambda v, p: _unsigned(v, p, _U32),
        "cpus": parse_cpu_milli, "cpu_milli": lambda v, p: _unsigned(v, p, _MAX_CPU_MILLI),
        "memory": parse_memory_mib, "memory_mib": lambda v, p: _unsigned(v, p, _MAX_MEMORY_MIB),
        "gpu_memory": parse_memory_mib, "gpu_memory_mib": lambda v, p: _unsigned(v, p, _MAX_MEMORY_MIB),
        "gpu_memory_pct": lambda v, p: _unsigned(v, p, 100),
        "gpu_compute": lambda v, p: _unsigned(v, p, 100), "gpu_compute_pct": lambda v, p: _unsigned(v, p, 100),
        "gpu_model": _string, "sharing_qos": _string, "mig_profile": _string,
        "cores": lambda v, p: _unsigned(v, p, 1024),
    }
    wire_name = {"cpus": "cpu_milli", "memory": "memory_mib", "gpu_memory": "gpu_memory_mib",
                 "gpu_compute": "gpu_compute_pct"}
    for key, value in node.items():
        name = wire_name.get(key, key)
        if name in out:
            raise _error(_where(path, key), f"given twice (as {name} too)")
        out[name] = readers[key](value, _where(path, key))
    return out


def _group(node: Mapping[str, Any], path: str, group: Dict[str, Any]) -> Dict[str, Any]:
    if "replicas" in node:
        group["replicas"] = _unsigned(node["replicas"], _where(path, "replicas"), _U32)
    if "command" not in node:
        raise _error(_where(path, "command"), "required")
    group["command"] = _command(node["command"], _where(path, "command"))
    if "min_replicas" in node:
        group["min_replicas"] = _unsigned(node["min_replicas"], _where(path, "min_replicas"), _U32)
    if "network_tier" in node:
        group["network_tier"] = _unsigned(node["network_tier"], _where(path, "network_tier"), 8)
    if "env" in node:
        group["env"] = _string_map(node["env"], _where(path, "env"), "NAME")
    if "resources" in node:
        group["resources"] = _resources(node["resources"], _where(path, "resources"))
    if "scale" in node:
        group["scale"] = _scale(node["scale"], _where(path, "scale"))
    return group


def _scale(node: Any, path: str) -> Dict[str, Any]:
    node = _check_keys(node, path, _SCALE_KEYS)
    scale: Dict[str, Any] = {}
    if "cooldown" in node and "cooldown_ms" in node:
        raise _error(_where(path, "cooldown"), "given twice (as cooldown_ms too)")
    if "cooldown" in node:
        scale["cooldown_ms"] = parse_duration_ms(node["cooldown"], _where(path, "cooldown"))
    if "cooldown_ms" in node:
        scale["cooldown_ms"] = _unsigned(node["cooldown_ms"], _where(path, "cooldown_ms"), (1 << 64) - 1)
    rules = node.get("rules")
    if not isinstance(rules, list):
        raise _error(_where(path, "rules"), f"expected a list of rules, got {rules!r}")
    scale["rules"] = []
    for i, entry in enumerate(rules):
        where = f"{path}.rules[{i}]"
        entry = _check_keys(entry, where, _SCALE_RULE_KEYS)
        if "trigger" not in entry:
            raise _error(_where(where, "trigger"), "required")
        rule: Dict[str, Any] = {"trigger": _string(entry["trigger"], _where(where, "trigger"))}
        for key in ("grow_above", "shrink_below", "step"):
            if key in entry:
                rule[key] = _unsigned(entry[key], _where(where, key), _U32)
        for key in ("queue", "window"):
            if key in entry:
                rule[key] = _string(entry[key], _where(where, key))
        scale["rules"].append(rule)
    return scale


def _policy(root: Mapping[str, Any], spec: Spec) -> None:
    for key in ("priority_class", "pool", "user", "numa_policy", "network_mode"):
        if key in root:
            spec[key] = _string(root[key], key)
    for key in ("node_policy", "gpu_policy"):
        if key in root:
            spec[key] = _string(root[key], key)
            if spec[key] not in PLACEMENT_POLICIES:
                raise _error(key, f"'{spec[key]}' is not default, binpack or spread")
    for key in ("node_selector", "prefer_labels"):
        if key in root:
            spec[key] = _string_map(root[key], key, "KEY")
    for key in ("tolerations", "gpu_uuid_allow", "gpu_uuid_deny"):
        if key in root:
            spec[key] = _string_list(root[key], key)
    if "network_tier" in root:
        spec["network_tier"] = _unsigned(root["network_tier"], "network_tier", 8)
    if "grace_period" in root and "grace_period_ms" in root:
        raise _error("grace_period", "given twice (as grace_period_ms too)")
    if "grace_period" in root:
        spec["grace_period_ms"] = parse_duration_ms(root["grace_period"], "grace_period")
        if spec["grace_period_ms"] > _U32:
            raise _error("grace_period", f"'{root['grace_period']}' is too long")
    if "grace_period_ms" in root:
        spec["grace_period_ms"] = _unsigned(root["grace_period_ms"], "grace_period_ms", _U32)
    if "max_runtime" in root and "max_runtime_ms" in root:
        raise _error("max_runtime", "given twice (as max_runtime_ms too)")
    if "max_runtime" in root:
        spec["max_runtime_ms"] = parse_duration_ms(root["max_runtime"], "max_runtime")
    if "max_runtime_ms" in root:
        spec["max_runtime_ms"] = _unsigned(root["max_runtime_ms"], "max_runtime_ms", (1 << 64) - 1)
    if "restart" in root:
        restart = _check_keys(root["restart"], "restart", ("policy", "max_attempts"))
        spec["restart"] = {"policy": "on-node-loss", "max_attempts": 3}
        if "policy" in restart:
            spec["restart"]["policy"] = _string(restart["policy"], "restart.policy")
        if "max_attempts" in restart:
            spec["restart"]["max_attempts"] = _unsigned(restart["max_attempts"], "restart.max_attempts", 100)


def job_spec(root: Any) -> Spec:
    """The wire JobSpec for a job in the job-file format (a dict, or what a YAML file holds)."""
    if root is None:
        raise InvalidArgument("job spec is empty")
    root = _check_keys(root, "", _JOB_KEYS)
    if "name" not in root:
        raise _error("name", "required")
    spec: Spec = {"name": _string(root["name"], "name")}
    if "queue" in root:
        spec["queue"] = _string(root["queue"], "queue")
    if "priority" in root:
        spec["priority"] = _int32(root["priority"], "priority")
    _policy(root, spec)
    shorthand = [key for key in _SHORTHAND_KEYS if key in root]
    if shorthand and "tasks" in root:
        raise _error(shorthand[0], "cannot be combined with 'tasks'; use either a tasks list or the single-group "
                                   "shorthand (command/replicas/min_replicas/resources/env under the job)")
    if shorthand:
        spec["tasks"] = [_group(root, "", {"name": "task"})]
        return spec
    if "tasks" not in root:
        raise _error("tasks", "required (or give 'command' directly under the job for one task group)")
    tasks = root["tasks"]
    if not isinstance(tasks, (list, tuple)):
        raise _error("tasks", f"expected a list of task groups, got {tasks!r}")
    if not tasks:
        raise _error("tasks", "at least one task group is required")
    spec["tasks"] = []
    for i, entry in enumerate(tasks):
        path = f"tasks[{i}]"
        entry = _check_keys(entry, path, _GROUP_KEYS)
        group = {"name": "task" if len(tasks) == 1 else f"task-{i}"}
        if "name" in entry:
            group["name"] = _string(entry["name"], _where(path, "name"))
        spec["tasks"].append(_group(entry, path, group))
    return spec


def parse_job_yaml(text: str, source: str = "job spec") -> Spec:
    """The wire JobSpec for a YAML document in the job-file format."""
    import yaml  # type: ignore[import]  # only YAML job files need python3-yaml (it has no stubs)

    try:
        # Every scalar as text, as yaml-cpp gives it to the CLI: `on`, `1e3` and `0x10` mean what they say.
        root = yaml.load(text, Loader=yaml.BaseLoader)
    except yaml.YAMLError as e:
        raise InvalidArgument(f"{source}: not valid YAML: {e}") from None
    try:
        return job_spec(root)
    except InvalidArgument as e:
        raise InvalidArgument(f"{source}: {e.message}") from None


def load_job_file(path: Union[str, "os.PathLike[str]"]) -> Spec:
    """The wire JobSpec for a job file such as client/examples/hello.yaml."""
    path = os.fspath(path)
    try:
        size = os.path.getsize(path)
        if size > MAX_SPEC_FILE_BYTES:
            raise ResourceExhausted(f"{path}: the job spec is {size} bytes; spec files are limited to "
                                    f"{MAX_SPEC_FILE_BYTES} bytes")
        with open(path, encoding="utf-8", errors="surrogateescape") as f:
            text = f.read()
    except OSError as e:
        raise InvalidArgument(f"cannot read job spec file {path}: {e.strerror}") from None
    return parse_job_yaml(text, path)
