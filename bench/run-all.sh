#!/usr/bin/env bash
# Builds in Release and runs every benchmark, one JSON file per benchmark under bench-results/.
set -euo pipefail
cd "$(dirname "$0")/.."
./deploy/install-deps.sh
cmake -S . -B build-release -DCMAKE_BUILD_TYPE=Release -DGPOOL_BUILD_TESTS=OFF >/dev/null
cmake --build build-release -j "$(nproc)" --target gpool-bench-scheduler
mkdir -p bench-results
./build-release/bench/gpool-bench-scheduler | tee bench-results/scheduler.json
