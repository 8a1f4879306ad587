#!/usr/bin/env python3
"""trace_variant.py on a small hand-made pod list: each option reaches the
mix it asks for and keeps what the shipped variants keep."""
import csv
import os
import subprocess
import sys
import tempfile
import unittest

TOOL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "trace_variant.py")


def pod(cpu, gpus, milli, spec=""):
    return {"name": "p", "cpu_milli": cpu, "memory_mib": 1024, "num_gpu": gpus, "gpu_milli": milli, "gpu_spec": spec}


BASE = (
    [pod(4000, 0, 0)] * 20
    + [pod(8000, 1, 1000)] * 50
    + [pod(4000, 1, 500)] * 25
    + [pod(2000, 1, 250)] * 25
    + [pod(64000, 8, 1000)] * 2
)


def demand(row):
    return int(row["num_gpu"]) * int(row["gpu_milli"])


class TraceVariantTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.base = os.path.join(self.dir.name, "default.csv")
        with open(self.base, "w", newline="") as f:
            out = csv.DictWriter(f, fieldnames=list(BASE[0]))
            out.writeheader()
            out.writerows(BASE)

    def tearDown(self):
        self.dir.cleanup()

    def run_tool(self, *args, check=True):
        out = os.path.join(self.dir.name, "variant.csv")
        done = subprocess.run([sys.executable, TOOL, "--pods", self.base, "--out", out, *args],
                              capture_output=True, text=True)
        if check:
            self.assertEqual(done.returncode, 0, done.stderr)
            with open(out, newline="") as f:
                return list(csv.DictReader(f))
        return done

    def test_cpu_permille_sets_the_cpu_only_fraction_and_keeps_gpu_pods(self):
        rows = self.run_tool("--cpu-permille", "500")
        cpu_only = [r for r in rows if r["num_gpu"] == "0"]
        self.assertEqual(len(rows) - len(cpu_only), 102)
        self.assertEqual(len(cpu_only), 102)

    def test_share_pct_sets_the_fractional_demand_and_keeps_the_pod_count(self):
        rows = self.run_tool("--share-pct", "60", "--seed", "3")
        self.assertEqual(len(rows), len(BASE))
        shared = sum(demand(r) for r in rows if int(r["gpu_milli"]) < 1000)
        self.assertAlmostEqual(shared / sum(map(demand, rows)), 0.60, delta=0.08)
        # Shares keep default's sizes.
        self.assertEqual({r["gpu_milli"] for r in rows if 0 < int(r["gpu_milli"]) < 1000}, {"500", "250"})

    def test_multi_pct_adds_multi_gpu_pods_only(self):
        rows = self.run_tool("--multi-pct", "50")
        multi = sum(demand(r) for r in rows if int(r["num_gpu"]) > 1)
        self.assertGreaterEqual(multi / sum(map(demand, rows)), 0.50)
        self.assertEqual(sum(1 for r in rows if int(r["num_gpu"]) <= 1), len(BASE) - 2)

    def test_spec_pct_pins_demand_to_models_from_the_source(self):
        source = os.path.join(self.dir.name, "specs.csv")
        with open(source, "w", newline="") as f:
            out = csv.DictWriter(f, fieldnames=list(BASE[0]))
            out.writeheader()
            out.writerow(pod(1000, 1, 1000, "T4|A10"))
        rows = self.run_tool("--spec-pct", "30", "--spec-source", source)
        pinned = sum(demand(r) for r in rows if r["gpu_spec"])
        self.assertGreaterEqual(pinned / sum(map(demand, rows)), 0.30)
        self.assertEqual({r["gpu_spec"] for r in rows if r["gpu_spec"]}, {"T4|A10"})

    def test_same_seed_same_file(self):
        self.assertEqual(self.run_tool("--share-pct", "40", "--seed", "9"), self.run_tool("--share-pct", "40", "--seed", "9"))

    def test_bad_options_are_refused_with_a_message(self):
        for args in (["--share-pct", "140"], ["--cpu-permille", "1000"], ["--spec-pct", "10"]):
            done = self.run_tool(*args, check=False)
            self.assertNotEqual(done.returncode, 0)
            self.assertIn("must" if "--spec-pct" not in args else "needs", done.stderr)


if __name__ == "__main__":
    unittest.main()
