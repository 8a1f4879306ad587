"""The job-file format (client/job_spec_file.cc) as the SDK reads it; no cluster needed."""
from __future__ import annotations

import glob
import os
import subprocess

import pytest

import gpool
from gpool.jobspec import parse_cpu_milli, parse_duration_ms, parse_memory_mib

EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples")


def test_units() -> None:
    assert [parse_cpu_milli(v) for v in ("2", "0.5", "500m", 3, 0.25, ".5")] == [2000, 500, 500, 3000, 250, 500]
    assert [parse_memory_mib(v) for v in ("4096", "80Gi", "4G", "512MiB", "1Ki", 256)] == \
        [4096, 81920, 3815, 512, 1, 256]
    assert [parse_duration_ms(v, "d") for v in ("90", "90s", "5m", "2h", "250ms")] == \
        [90000, 90000, 300000, 7200000, 250]
    for bad in ("", "x", "1.5m", "0.0001", "2 cores", True):
        with pytest.raises(gpool.InvalidArgument):
            parse_cpu_milli(bad)
    for bad in ("", "4 bananas", "-1", [1]):
        with pytest.raises(gpool.InvalidArgument):
            parse_memory_mib(bad)
    for bad in ("", "1d", "-5s", "1.5h", 2.0):
        with pytest.raises(gpool.InvalidArgument):
            parse_duration_ms(bad, "d")


def test_shorthand_and_groups() -> None:
    spec = gpool.job_spec({"name": "j", "command": "echo hi", "replicas": 2, "resources": {"gpus": 1, "cpus": 2},
                           "priority": -5, "max_runtime": "1h", "restart": {"policy": "never"}})
    assert spec == {"name": "j", "priority": -5, "max_runtime_ms": 3600000,
                    "restart": {"policy": "never", "max_attempts": 3},
                    "tasks": [{"name": "task", "replicas": 2, "command": ["sh", "-c", "echo hi"],
                               "resources": {"gpus": 1, "cpu_milli": 2000}}]}
    spec = gpool.job_spec({"name": "j", "tasks": [{"command": ["a"]}, {"name": "b", "command": ["b", 1]}]})
    assert [(g["name"], g["command"]) for g in spec["tasks"]] == [("task-0", ["a"]), ("b", ["b", "1"])]
    # The wire's names are accepted in a dict too.
    spec = gpool.job_spec({"name": "j", "command": ["x"], "resources": {"cpu_milli": 250, "memory_mib": 64}})
    assert spec["tasks"][0]["resources"] == {"cpu_milli": 250, "memory_mib": 64}


def test_scale_rules_take_the_file_format() -> None:
    spec = gpool.job_spec({"name": "j", "command": "x", "replicas": 4, "min_replicas": 1,
                           "scale": {"cooldown": "90s", "rules": [
                               {"trigger": "queue-depth", "grow_above": 2, "shrink_below": 1},
                               {"trigger": "time-window", "window": "22:00-06:00"}]}})
    assert spec["tasks"][0]["scale"] == {"cooldown_ms": 90000, "rules": [
        {"trigger": "queue-depth", "grow_above": 2, "shrink_below": 1},
        {"trigger": "time-window", "window": "22:00-06:00"}]}
    with pytest.raises(gpool.InvalidArgument) as caught:
        gpool.job_spec({"name": "j", "command": "x", "scale": {"rules": [{"grow_above": 1}]}})
    assert "scale.rules[0].trigger: required" in caught.value.message
    with pytest.raises(gpool.InvalidArgument) as caught:
        gpool.job_spec({"name": "j", "command": "x", "scale": {"rules": [{"trigger": "x", "treshold": 1}]}})
    assert "treshold" in caught.value.message


def test_placement_policies_travel_as_given() -> None:
    spec = gpool.job_spec({"name": "j", "command": "x", "node_policy": "spread", "gpu_policy": "binpack"})
    assert (spec["node_policy"], spec["gpu_policy"]) == ("spread", "binpack")
    assert "node_policy" not in gpool.job_spec({"name": "j", "command": "x"})  # the coordinator's default


@pytest.mark.parametrize("spec, names", [
    (None, "empty"),
    ([], "expected a map"),
    ({"command": "x"}, "name: required"),
    ({"name": "j"}, "tasks: required"),
    ({"name": "j", "command": "x", "tasks": []}, "command: cannot be combined"),
    ({"name": "j", "tasks": []}, "at least one task group"),
    ({"name": "j", "tasks": "x"}, "expected a list of task groups"),
    ({"name": "j", "command": ""}, "command: must not be empty"),
    ({"name": "j", "command": []}, "must name a program"),
    ({"name": "j", "comand": "x"}, "did you mean 'command'"),
    ({"name": "j", "command": "x", "replicas": -1}, "replicas: expected a non-negative integer"),
    ({"name": "j", "command": "x", "replicas": 1.5}, "replicas: expected a non-negative integer"),
    ({"name": "j", "command": "x", "priority": 2**31}, "priority: out of range"),
    ({"name": "j", "command": "x", "resources": {"gpu": 1}}, "resources.gpu: unknown key"),
    ({"name": "j", "command": "x", "resources": {"cpus": 1, "cpu_milli": 5}}, "given twice"),
    ({"name": "j", "command": "x", "resources": {"gpu_compute": 101}}, "must be at most 100"),
    ({"name": "j", "command": "x", "env": ["A=1"]}, "env: expected a map"),
    ({"name": "j", "command": "x", "env": {"A": {"b": 1}}}, "env.A: expected a string"),
    ({"name": "j", "command": "x", "restart": {"policy": "never", "tries": 1}}, "restart.tries: unknown key"),
    ({"name": "j", "command": "x", "grace_period": "soon"}, "grace_period: 'soon' is not a duration"),
    ({"name": "j", "command": "x", "node_policy": "pack"}, "node_policy: 'pack' is not default, binpack or spread"),
    ({"name": "j", "command": "x", "gpu_policy": ["spread"]}, "gpu_policy: expected a string"),
])
def test_bad_specs_name_the_field(spec: object, names: str) -> None:
    with pytest.raises(gpool.InvalidArgument) as caught:
        gpool.job_spec(spec)
    assert names in caught.value.message


def test_examples_read_as_the_cli_reads_them() -> None:
    files = sorted(glob.glob(os.path.join(EXAMPLES, "*.yaml")))
    jobs = [f for f in files if not f.endswith("topology.yaml")]
    assert len(jobs) >= 5
    for path in jobs:
        spec = gpool.load_job_file(path)
        assert spec["name"] and spec["tasks"], path
    hello = gpool.load_job_file(os.path.join(EXAMPLES, "hello.yaml"))
    assert hello["tasks"][0]["resources"] == {"gpus": 1, "cpu_milli": 500, "memory_mib": 256}
    assert hello["tasks"][0]["replicas"] == 2 and hello["tasks"][0]["env"] == {"GREETING": "hello"}


def test_yaml_scalars_are_text(tmp_path: "os.PathLike[str]") -> None:
    # yaml-cpp hands the CLI every scalar as written: `on` stays "on", 010 stays "010".
    spec = gpool.parse_job_yaml("name: j\ncommand: [echo, on, 010]\nenv: {A: yes, B: 1.50}\n")
    assert spec["tasks"][0]["command"] == ["echo", "on", "010"]
    assert spec["tasks"][0]["env"] == {"A": "yes", "B": "1.50"}
    with pytest.raises(gpool.InvalidArgument) as caught:
        gpool.parse_job_yaml("name: [unclosed\n", "x.yaml")
    assert caught.value.message.startswith("x.yaml: not valid YAML")
    with pytest.raises(gpool.InvalidArgument):
        gpool.load_job_file(os.path.join(str(tmp_path), "missing.yaml"))


def test_generated_secrets_hold_no_percent_sign() -> None:
    # The secret is an HTTP bearer credential too (gpool/keys.py).
    for _ in range(500):
        assert "%" not in gpool.generate_key_pair().secret_key


def test_keys_round_trip(tmp_path: "os.PathLike[str]") -> None:
    base = os.path.join(str(tmp_path), "me")
    pair = gpool.generate_key_pair()
    gpool.keys.write_key_pair(base, pair)
    assert gpool.read_secret_key_file(base + ".key") == pair
    assert gpool.read_public_key_file(base + ".pub") == pair.public_key
    assert pair.secret_key not in repr(pair)
    with open(base + ".bare.pub", "w") as f:
        f.write(pair.public_key + "\n")
    assert gpool.read_public_key_file(base + ".bare.pub") == pair.public_key
    other = gpool.generate_key_pair()
    mixed = os.path.join(str(tmp_path), "mixed.key")
    with open(os.open(mixed, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
        f.write(f'public-key = "{other.public_key}"\nsecret-key = "{pair.secret_key}"\n')
    with pytest.raises(gpool.InvalidArgument):
        gpool.read_secret_key_file(mixed)


def test_cli_keygen_files_are_read(tmp_path: "os.PathLike[str]") -> None:
    cli = os.environ.get("GPOOL_CLI_BIN")
    if not cli:
        pytest.fail("GPOOL_CLI_BIN is not set (client/python/CMakeLists.txt sets it)")
    base = os.path.join(str(tmp_path), "user")
    subprocess.run([cli, "admin", "keygen", "--out", base], check=True, capture_output=True)
    pair = gpool.read_secret_key_file(base + ".key")
    assert gpool.read_public_key_file(base + ".pub") == pair.public_key
