#!/usr/bin/env bash
# Runs the headline benchmarks from two Release build trees back to back, on
# the same machine in the same session, so a refactor's before and after can
# be compared despite a noisy machine:
#   bench/compare-builds.sh BEFORE_BUILD_DIR AFTER_BUILD_DIR [ROUNDS=1]
# Each build dir needs gpool-bench-scheduler, gpool-bench-raft and
# gpool-bench-e2e (and the coordinator and worker the e2e bench starts) built
# (e.g. cmake -S . -B build-release -DCMAKE_BUILD_TYPE=Release && cmake --build
# build-release --target gpool-bench-scheduler gpool-bench-raft gpool-bench-e2e).
# Prints each JSON line prefixed by the build it came from; before and after
# alternate, round by round.
set -euo pipefail
before=${1:?before build dir}
after=${2:?after build dir}
rounds=${3:-1}
run() {
  local label=$1 dir=$2
  for nodes in 1250 12500; do "$dir/bench/gpool-bench-scheduler" --nodes "$nodes"; done | sed "s/^/$label /"
  "$dir/bench/gpool-bench-raft" | sed "s/^/$label /"
  "$dir/bench/gpool-bench-e2e" 1000 5 300 | sed "s/^/$label /"
}
for ((round = 1; round <= rounds; round++)); do
  run before "$before"
  run after "$after"
done
