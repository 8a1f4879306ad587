#!/usr/bin/env bash
# Builds gpool once, with AddressSanitizer + UndefinedBehaviorSanitizer and
# -Werror, and runs every test through ctest: unit tests (label "unit") and
# integration tests (label "integration": real, sanitized coordinator, worker
# and CLI processes on 127.0.0.1, ephemeral ports). One build keeps CI on two
# cores well inside its budget, and the multi-process tests run the very
# binaries the sanitizers watch.
# Opt-in long runs (soak, fuzz, scale, the 100,000-seed Raft simulation) are
# not part of this script.
set -euo pipefail
cd "$(dirname "$0")/.."

./deploy/install-deps.sh

jobs=$(nproc)
ctest_jobs=${GPOOL_CTEST_JOBS:-2}

echo "== build (Debug, ASan+UBSan, -Werror)"
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DGPOOL_SANITIZE=ON -DGPOOL_WERROR=ON >/dev/null
cmake --build build-asan -j "$jobs"

echo "== all tests"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure -j "$ctest_jobs"
