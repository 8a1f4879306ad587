#!/usr/bin/env python3
"""verify_units.py fails on broken copies of the units (with /bin/true for the programs)."""
import contextlib
import io
import os
import shutil
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
MAIN_CC = os.path.join(HERE, "..", "..", "control", "main.cc")
sys.path.insert(0, HERE)
import verify_units  # noqa: E402

BINS = ["--bin", "gpool-coordinator=/bin/true", "--bin", "gpool-worker=/bin/true", "--bin", "gpool=/bin/true"]


class VerifyUnitsTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        for name in os.listdir(HERE):
            if name.endswith((".service", ".timer")):
                shutil.copy(os.path.join(HERE, name), self.dir)

    def tearDown(self):
        shutil.rmtree(self.dir)

    def run_check(self):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            status = verify_units.main(["--units", self.dir, "--main", MAIN_CC, *BINS])
        return status, out.getvalue()

    def edit(self, unit, old, new):
        path = os.path.join(self.dir, unit)
        with open(path, encoding="utf-8") as f:
            text = f.read()
        self.assertIn(old, text)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text.replace(old, new))

    def test_the_units_pass(self):
        status, out = self.run_check()
        self.assertEqual(status, 0, out)

    def test_an_unknown_key_fails(self):
        self.edit("gpool-worker.service", "KillMode=process", "KilMode=process")
        status, out = self.run_check()
        self.assertEqual(status, 1)
        self.assertIn("Unknown key 'KilMode'", out)

    def test_a_bad_value_fails(self):
        self.edit("gpool-probe.timer", "OnUnitActiveSec=6h", "OnUnitActiveSec=six hours")
        status, out = self.run_check()
        self.assertEqual(status, 1)
        self.assertIn("Failed to parse timer value, ignoring: six hours", out)

    def test_restarting_a_removed_replica_fails(self):
        self.edit("gpool-coordinator.service", "RestartPreventExitStatus=2 3 4", "RestartPreventExitStatus=2 3")
        status, out = self.run_check()
        self.assertEqual(status, 1)
        self.assertIn("RestartPreventExitStatus=[2, 3], want [2, 3, 4]", out)

    def test_restart_always_fails(self):
        self.edit("gpool-coordinator.service", "Restart=on-failure", "Restart=always")
        status, out = self.run_check()
        self.assertEqual(status, 1)
        self.assertIn("Restart=always, want on-failure", out)

    def test_a_coordinator_without_a_private_umask_fails(self):
        self.edit("gpool-coordinator.service", "UMask=0077\n", "")
        status, out = self.run_check()
        self.assertEqual(status, 1)
        self.assertIn("UMask=None, want 0077", out)


if __name__ == "__main__":
    unittest.main()
