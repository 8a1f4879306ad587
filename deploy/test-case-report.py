#!/usr/bin/env python3
"""Counts the test cases that ran inside sharded ctest entries.

A unit test binary runs as a few ctest entries (gpool_add_test in the
top-level CMakeLists.txt), each writing gtest's XML report into
BUILD_DIR/test-results/. ctest counts entries; this counts the cases in them
and names every failed one, so a shard's failure reads like a test's.

  deploy/test-case-report.py BUILD_DIR
"""
import glob
import os
import sys
import xml.etree.ElementTree as ElementTree


def main() -> int:
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    reports = sorted(glob.glob(os.path.join(build, "test-results", "*.xml")))
    ran = skipped = 0
    failed = []
    for report in reports:
        try:
            root = ElementTree.parse(report).getroot()
        except ElementTree.ParseError as error:  # a shard that crashed mid-write
            failed.append(f"{os.path.basename(report)} (unreadable: {error})")
            continue
        for case in root.iter("testcase"):
            name = f"{case.get('classname')}.{case.get('name')}"
            if case.get("result") == "skipped" or case.find("skipped") is not None:
                skipped += 1
            elif case.find("failure") is not None or case.find("error") is not None:
                failed.append(name)
            else:
                ran += 1
    print(f"  {ran} unit test cases passed, {len(failed)} failed, {skipped} skipped, in {len(reports)} shards")
    for name in failed:
        print(f"  FAILED {name}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
