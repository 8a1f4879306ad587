#!/usr/bin/env bash
# Builds in Release and runs every benchmark, writing one JSON-lines file per
# benchmark and a markdown summary under bench-results/.
set -euo pipefail
cd "$(dirname "$0")/.."
./deploy/install-deps.sh
cmake -S . -B build-release -DCMAKE_BUILD_TYPE=Release -DGPOOL_BUILD_TESTS=OFF >/dev/null
cmake --build build-release -j "$(nproc)" --target gpool-bench-scheduler gpool-bench-topology gpool-bench-submit gpool-bench-raft gpool-bench-failover
mkdir -p bench-results
./build-release/bench/gpool-bench-scheduler | tee bench-results/scheduler.json
./build-release/bench/gpool-bench-topology | tee bench-results/topology.json
./build-release/bench/gpool-bench-submit | tee bench-results/submit.json
./build-release/bench/gpool-bench-raft | tee bench-results/raft.json
./build-release/bench/gpool-bench-failover | tee bench-results/failover.json
{
  echo "| metric | value | unit | params |"
  echo "|---|---|---|---|"
  cat bench-results/*.json | sed -E 's/^\{"metric": "([^"]*)", "value": ([^,]*), "unit": "([^"]*)", "params": (.*)\}$/| \1 | \2 | \3 | `\4` |/'
} > bench-results/summary.md
cat bench-results/summary.md
