#!/usr/bin/env bash
# Builds gpool once, with AddressSanitizer + UndefinedBehaviorSanitizer and
# -Werror, and runs every test through ctest:
#   unit         pure, in one process (the default label)
#   socket       real ZeroMQ sockets on 127.0.0.1 or real child processes, in one test process
#   integration  real, sanitized coordinator, worker and CLI processes on 127.0.0.1, ephemeral ports
#   deploy       the systemd units, container entrypoints and Kubernetes manifests, offline (deploy/CMakeLists.txt)
# Every target is compiled, benchmarks and fuzz replays included, so this one
# build is all the compiling CI does (.ci/run runs this script alone). After
# the build it ranks targets by compile time (deploy/build-report.sh), at the
# end it prints the ten slowest tests. The Release configuration with -Werror
# (warnings GCC reports only when optimising) is deploy/release-check.sh, run
# before a release; a user's plain Release build has -Werror off.
#
# The build is a unity build (CMAKE_UNITY_BUILD, batch size 0: each target's
# sources compiled as one unit), which roughly halves the compile time on two
# cores: at -O0 most of the time is emitting the inline and template code a
# unit uses, once per unit. Batches of sixteen cost 7% more in all (up to 25%
# on the largest targets); a developer's incremental build is not one unless
# asked for. Debug info is line tables
# only (-g1): enough for the sanitizers' stack traces, much cheaper to build.
# Precompiled headers (GPOOL_PCH, on by default: the standard library,
# msgpack, zmq.hpp, spdlog and gtest, by what each target links;
# cmake/PrecompiledHeaders.cmake) are compiled once and reused by every
# target; with -Werror a .gch that GCC cannot use (-Winvalid-pch) fails the
# build rather than silently slowing it. No compiler launcher (ccache) here:
# one would turn the precompiled headers off.
# Benchmarks are built (so a change that breaks one fails here), not run.
#
# Opt-in long runs (soak, fuzz, scale, the 100,000-seed Raft simulation) are
# not part of this script.
#   GPOOL_CTEST_JOBS=N     tests in parallel (default: 2)
set -euo pipefail
cd "$(dirname "$0")/.."

./deploy/install-deps.sh

jobs=$(nproc)
ctest_jobs=${GPOOL_CTEST_JOBS:-2}
generator=()
if command -v ninja >/dev/null; then generator=(-G Ninja); fi
unity=(-DCMAKE_UNITY_BUILD=ON -DCMAKE_UNITY_BUILD_BATCH_SIZE=0)
start=$(date +%s)

echo "== build (Debug, ASan+UBSan, -Werror)"
cmake -S . -B build-asan "${generator[@]}" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG=-g1 \
  -DGPOOL_SANITIZE=ON -DGPOOL_WERROR=ON -DGPOOL_BUILD_BENCH=ON "${unity[@]}" >/dev/null
cmake --build build-asan -j "$jobs"
echo "== build done in $(( $(date +%s) - start )) s"
if [ -f build-asan/.ninja_log ]; then ./deploy/build-report.sh build-asan 10; fi

echo "== all tests"
log=build-asan/ctest-output.log
status=0
rm -rf build-asan/test-results  # the unit shards' case reports (deploy/test-case-report.py)
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure -j "$ctest_jobs" 2>&1 | tee "$log" || status=$?

echo "== unit test cases (in sharded ctest entries)"
./deploy/test-case-report.py build-asan || status=$?

echo "== the ten slowest tests"
grep -E '^ *[0-9]+/[0-9]+ Test +#[0-9]+: ' "$log" |
  sed -E 's/^ *[0-9]+\/[0-9]+ Test +#[0-9]+: ([^ ]+) .* ([0-9.]+) sec$/\2 \1/' |
  sort -rn | awk 'NR <= 10 {printf "  %8.2f s  %s\n", $1, $2}'  # awk reads it all: no SIGPIPE under pipefail
echo "== tests done in $(( $(date +%s) - start )) s since the start"
if [ "$status" -ne 0 ]; then exit "$status"; fi

echo "== all done in $(( $(date +%s) - start )) s"
