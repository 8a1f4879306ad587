#!/usr/bin/env bash
# Builds gpool and runs every test through ctest:
#   1. an ASan+UBSan build running the unit tests (label "unit"),
#   2. the regular -Werror build running all tests, unit and integration
#      (real coordinator and worker processes on 127.0.0.1, ephemeral ports).
# Opt-in long runs (soak, fuzz, scale) are not part of this script.
set -euo pipefail
cd "$(dirname "$0")/.."

./deploy/install-deps.sh

jobs=$(nproc)
ctest_jobs=${GPOOL_CTEST_JOBS:-2}

echo "== sanitizer build (ASan+UBSan): unit tests"
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DGPOOL_SANITIZE=ON -DGPOOL_WERROR=ON -DGPOOL_BUILD_BENCH=OFF >/dev/null
cmake --build build-asan -j "$jobs" --target protocol_tests storage_tests control_tests raft_tests worker_tests client_tests
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan -L unit --output-on-failure -j "$ctest_jobs"

echo "== release build: all tests"
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGPOOL_WERROR=ON >/dev/null
cmake --build build -j "$jobs"
ctest --test-dir build --output-on-failure -j "$ctest_jobs"
