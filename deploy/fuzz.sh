#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/, clang with ASan+UBSan) in build-fuzz and
# runs each for a set time, or to a set number of executions, one after the
# other. Prints one JSON line per target:
#   {"metric":"fuzz_execs","value":N,"unit":"execs","params":{"target":T,"seconds":S,"crashes":K,...}}
# and exits 1 if any target crashed, leaked, timed out or ran out of memory
# (the input is then in build-fuzz/artifacts/<target>/).
#
#   deploy/fuzz.sh [SECONDS_PER_TARGET]          default 60
#   deploy/fuzz.sh --runs N                      each target to N executions
#   deploy/fuzz.sh 30 --targets envelope,ufm     only these targets
#   GPOOL_FUZZ_ARGS="-max_len=8192" deploy/fuzz.sh 600   extra libFuzzer flags
#   deploy/fuzz.sh --ubsan-only --runs N         UBSan without ASan, in build-fuzz-ubsan:
#                                                several times faster on the YAML/JSON readers
#
# Seeds come from fuzz/corpus/<target>/ (read only); what the fuzzer adds goes
# to build-fuzz/corpus/<target>/, which later runs start from. Opt-in, not a
# part of deploy/test.sh: CI runs every target for a few seconds through the
# replay tests of the normal build instead (fuzz/README.md).
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=60
runs=""
asan=ON
targets="envelope,message,raft_message,job_spec,node_spec,topology,ufm"
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs="$2"; shift 2 ;;
    --targets) targets="$2"; shift 2 ;;
    --ubsan-only) asan=OFF; shift ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
    *) seconds="$1"; shift ;;
  esac
done

# Debian 12's clang 14; libFuzzer's runtime is in libclang-rt-dev, and llvm
# brings llvm-symbolizer for readable stack traces.
need=()
command -v clang++ >/dev/null || need+=(clang)
ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1 || need+=(libclang-rt-dev)
command -v llvm-symbolizer >/dev/null || need+=(llvm)
if [ "${#need[@]}" -gt 0 ]; then
  SUDO=""; if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  echo "fuzz: installing ${need[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}"
fi
./deploy/install-deps.sh >&2

IFS=, read -r -a target_list <<<"$targets"
generator=()
if command -v ninja >/dev/null; then generator=(-G Ninja); fi
# -O2 without NDEBUG: the product's asserts stay on while fuzzing.
build=build-fuzz
if [ "$asan" = OFF ]; then build=build-fuzz-ubsan; fi
CC=clang CXX=clang++ cmake -S . -B "$build" "${generator[@]}" -DGPOOL_FUZZ=ON -DGPOOL_FUZZ_ASAN="$asan" -DGPOOL_BUILD_TESTS=OFF \
  -DGPOOL_BUILD_BENCH=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1" \
  -DCMAKE_UNITY_BUILD=ON -DCMAKE_UNITY_BUILD_BATCH_SIZE=16 >&2
cmake --build "$build" -j "$(nproc)" --target "${target_list[@]/#/fuzz_}" >&2

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
failed=0
for t in "${target_list[@]}"; do
  work=$build/corpus/$t
  artifacts=$build/artifacts/$t
  mkdir -p "$work" "$artifacts"
  log=$build/fuzz-$t.log
  # The other build's corpus seeds this one too (read only).
  extra_seeds=()
  for other in build-fuzz build-fuzz-ubsan; do
    if [ "$other" != "$build" ] && [ -d "$other/corpus/$t" ]; then extra_seeds+=("$other/corpus/$t"); fi
  done
  if [ -n "$runs" ]; then limit=(-runs="$runs"); else limit=(-max_total_time="$seconds"); fi
  before=$(find "$artifacts" -type f | wc -l)
  start=$(date +%s.%N)
  # -timeout: one input running 10 s is a hang; -rss_limit_mb: the default 2 GB.
  # shellcheck disable=SC2086
  "$build"/fuzz/fuzz_"$t" "${limit[@]}" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$artifacts/" ${GPOOL_FUZZ_ARGS:-} "$work" "fuzz/corpus/$t" "${extra_seeds[@]}" >"$log" 2>&1 || true
  wall=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN {printf "%.1f", e - s}')
  after=$(find "$artifacts" -type f | wc -l)
  crashes=$((after - before))
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  corpus=$(find "$work" -type f | wc -l)
  printf '{"metric":"fuzz_execs","value":%s,"unit":"execs","params":{"target":"%s","seconds":%.1f,"crashes":%d,"exec_per_s":%.0f,"corpus_files":%d}}\n' \
    "${execs:-0}" "$t" "$wall" "$crashes" "$(awk -v n="${execs:-0}" -v w="$wall" 'BEGIN {print (w > 0 ? n / w : 0)}')" "$corpus"
  if [ "$crashes" -gt 0 ]; then
    failed=1
    echo "fuzz: $t found a problem; see $log and $artifacts/" >&2
    grep -m1 -E 'ERROR: (AddressSanitizer|UndefinedBehaviorSanitizer|libFuzzer|LeakSanitizer)|runtime error|FUZZ_CHECK' "$log" >&2 || true
  fi
done
exit "$failed"
