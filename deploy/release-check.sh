#!/usr/bin/env bash
# Compiles the Release configuration, every target (tests and benchmarks
# included), with -Werror, as a unity build. GCC reports some warnings
# (-Wmaybe-uninitialized among them) only when it optimises, so the Debug
# build deploy/test.sh runs the tests in cannot see them, and a user's plain
# `cmake -DCMAKE_BUILD_TYPE=Release` build must never be the first to.
# Run it before a release (CI compiles once, in deploy/test.sh); nothing is
# run, only built.
set -euo pipefail
cd "$(dirname "$0")/.."

./deploy/install-deps.sh

generator=()
if command -v ninja >/dev/null; then generator=(-G Ninja); fi
start=$(date +%s)
echo "== compile (Release, -Werror, every target)"
cmake -S . -B build-release-check "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DGPOOL_WERROR=ON \
  -DCMAKE_UNITY_BUILD=ON -DCMAKE_UNITY_BUILD_BATCH_SIZE=16 >/dev/null
cmake --build build-release-check -j "$(nproc)"
echo "== Release compile done in $(( $(date +%s) - start )) s"
