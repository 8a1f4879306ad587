"""The package's type hints hold (mypy --strict), where mypy is installed (Debian: python3-mypy)."""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

import pytest

PACKAGE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "gpool")


@pytest.mark.skipif(importlib.util.find_spec("mypy") is None, reason="mypy is not installed (python3-mypy)")
def test_mypy_strict() -> None:
    done = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--no-incremental", PACKAGE],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
