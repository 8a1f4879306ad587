"""README.md's Python example, run exactly as the README shows it."""
from __future__ import annotations

import os
import re
import subprocess
import sys

from cluster import LocalCluster

README = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "README.md")
PACKAGE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def readme_example() -> str:
    with open(README, encoding="utf-8") as f:
        text = f.read()
    marker = "<!-- python-example:"
    assert marker in text, "README.md has no Python example marker"
    after = text.split(marker, 1)[1]
    match = re.match(r"[^\n]*\n```python\n(.*?)\n```\n", after, re.S)
    assert match, "the Python example marker is not followed by a ```python block"
    return match.group(1) + "\n"


def test_readme_example_is_short() -> None:
    assert len(readme_example().splitlines()) == 5


def test_readme_example_runs(cluster: LocalCluster, tmp_path: "os.PathLike[str]") -> None:
    # As a user would run it: the endpoint from the environment, no key files in HOME (plaintext).
    env = {**os.environ, "GPOOL_COORDINATOR": ",".join(cluster.client_endpoints), "HOME": str(tmp_path),
           "PYTHONPATH": os.path.abspath(PACKAGE_DIR)}
    for name in ("XDG_CONFIG_HOME", "GPOOL_KEY_FILE", "GPOOL_COORDINATOR_KEY", "GPOOL_TOKEN"):
        env.pop(name, None)
    done = subprocess.run([sys.executable, "-c", readme_example()], env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert re.fullmatch(r"Succeeded hello from node-[01]", lines[0]), done.stdout
    assert lines[1] == "[('node-0', 0, 2), ('node-1', 0, 2)]", done.stdout
