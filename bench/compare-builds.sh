#!/usr/bin/env bash
# Runs the headline benchmarks of two builds back to back, on the same machine
# in the same session, so a refactor's before and after are compared despite a
# noisy machine:
#   bench/compare-builds.sh BEFORE AFTER [ROUNDS=1]
# BEFORE and AFTER are each a Release build dir (one with bench/ in it) or a
# git commit; a commit is checked out in a worktree under
# ${GPOOL_COMPARE_DIR:-/tmp/gpool-compare}/<sha> and its benchmarks (and the
# coordinator and worker the e2e bench starts) are built there in Release, once.
#   bench/compare-builds.sh 6193d37^ HEAD 2
# Prints each JSON line prefixed by "before" or "after"; the two alternate,
# round by round. Then one line per metric and params: the median of each side
# and after/before, so a regression is one line to read.
set -euo pipefail
before=${1:?before: a build dir or a git commit}
after=${2:?after: a build dir or a git commit}
rounds=${3:-1}
root=$(cd "$(dirname "$0")/.." && pwd)
work=${GPOOL_COMPARE_DIR:-/tmp/gpool-compare}
targets=(gpool-bench-scheduler gpool-bench-raft gpool-bench-watch gpool-bench-e2e gpool-coordinator gpool-worker
         gpool-task-supervisor gpool)

# A build dir as given, or one built from a commit (reused when already there).
build_of() {
  local what=$1
  if [ -d "$what/bench" ]; then
    echo "$what"
    return
  fi
  local sha
  sha=$(git -C "$root" rev-parse --verify "$what^{commit}")
  local tree="$work/$sha"
  if [ ! -d "$tree" ]; then
    mkdir -p "$work"
    git -C "$root" worktree add --detach "$tree" "$sha" >&2
  fi
  local generator=()
  if command -v ninja >/dev/null; then generator=(-G Ninja); fi
  cmake -S "$tree" -B "$tree/build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DGPOOL_BUILD_TESTS=OFF \
    -DGPOOL_BUILD_BENCH=ON -DCMAKE_UNITY_BUILD=ON -DCMAKE_UNITY_BUILD_BATCH_SIZE=16 >/dev/null
  cmake --build "$tree/build" -j "$(nproc)" --target "${targets[@]}" >&2
  echo "$tree/build"
}

before_dir=$(build_of "$before")
after_dir=$(build_of "$after")
out=$(mktemp)
trap 'rm -f "$out"' EXIT

run() {
  local label=$1 dir=$2
  {
    for nodes in 1250 12500 100000; do "$dir/bench/gpool-bench-scheduler" --nodes "$nodes"; done
    "$dir/bench/gpool-bench-raft"
    "$dir/bench/gpool-bench-watch"
    "$dir/bench/gpool-bench-e2e" 1000 5 300
  } 2>/dev/null | grep '^{' | sed "s/^/$label /" | tee -a "$out"
}
for ((round = 1; round <= rounds; round++)); do
  run before "$before_dir"
  run after "$after_dir"
done

# The summary: medians per side, keyed by metric and params.
python3 - "$out" <<'EOF'
import json, statistics, sys
sides = {}
for line in open(sys.argv[1]):
    label, _, body = line.partition(" ")
    try:
        row = json.loads(body)
    except ValueError:
        continue
    key = (row.get("metric"), json.dumps(row.get("params", {}), sort_keys=True), row.get("unit"))
    sides.setdefault(key, {}).setdefault(label, []).append(float(row.get("value", 0)))
for (metric, params, unit), by in sorted(sides.items()):
    if "before" not in by or "after" not in by:
        continue
    b, a = statistics.median(by["before"]), statistics.median(by["after"])
    print(json.dumps({"metric": metric + ".after_over_before", "value": round(a / b, 3) if b else None,
                      "unit": "ratio", "params": {"bench_params": json.loads(params), "unit": unit,
                                                   "before": b, "after": a}}))
EOF
