#!/usr/bin/env bash
# Ranks what a build compiled by time, from ninja's log of its last build
# (.ninja_log: start and end of every output, in ms), so that a commit that
# makes the build slower shows which target and which file it made slower.
#
#   deploy/build-report.sh [BUILD_DIR=build-asan] [ROWS=10]
#
# Prints the targets by compile+link seconds (summed over their outputs;
# with -j2 that is about twice the wall time they held), then the slowest
# single outputs. Needs a Ninja build (deploy/test.sh uses one when ninja
# is installed); a Makefile build keeps no such log.
set -euo pipefail
build=${1:-build-asan}
rows=${2:-10}
log="$build/.ninja_log"
if [ ! -f "$log" ]; then
  echo "build-report: $log missing (not a Ninja build, or not built yet)" >&2
  exit 2
fi
python3 - "$log" "$rows" <<'PY'
import collections, re, sys
path, rows = sys.argv[1], int(sys.argv[2])
last = {}  # output -> seconds of its last build; the log appends every build
for line in open(path, encoding="utf-8", errors="replace"):
    if line.startswith("#"):
        continue
    parts = line.rstrip("\n").split("\t")
    if len(parts) < 4:
        continue
    start, end, output = int(parts[0]), int(parts[1]), parts[3]
    last[output] = (end - start) / 1000.0
def target_of(output):
    m = re.search(r"CMakeFiles/([^/]+)\.dir/", output)
    if m:
        return m.group(1)
    return output.rsplit("/", 1)[-1]  # a link step names its own output
by_target = collections.Counter()
for output, seconds in last.items():
    by_target[target_of(output)] += seconds
total = sum(last.values())
print(f"== build report: {len(last)} outputs, {total:.0f} s of compile and link in all")
print(f"-- targets by seconds (top {rows})")
for target, seconds in by_target.most_common(rows):
    print(f"  {seconds:8.1f} s  {100 * seconds / total:5.1f} %  {target}")
print(f"-- slowest outputs (top {rows})")
for output, seconds in sorted(last.items(), key=lambda kv: -kv[1])[:rows]:
    print(f"  {seconds:8.1f} s  {output}")
PY
