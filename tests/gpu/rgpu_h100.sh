#!/usr/bin/env bash
# gpool's remote GPU data plane (worker/rgpu/) on a real NVIDIA GPU, over loopback: gpool-rgpu-check's
# `session` steps (contexts, copies in every direction, a hand-written PTX vector_add JIT-compiled by
# the driver, events, memsets, a fat binary, frees) run once against the real driver directly and once
# through a gpool-rgpu-server session on the same machine; the two outputs must be identical. Then
# gpool-bench-rgpu with --driver the real libcuda.so.1 (remote vs raw ZeroMQ vs local memcpy).
#
# NOT RUN ON A GPU YET: written without one (none was lent); it is ready for a machine with one. CI
# runs it only against the fake driver (rgpu_h100_dry_run.sh), which checks the script, not a GPU.
#
# Builds nothing: takes the build directory (a Release build is best for the bench numbers):
#   $1 or $GPOOL_BUILD_DIR (default build-rel), holding worker/rgpu/gpool-rgpu-server,
#   worker/rgpu/gpool-rgpu-check, worker/cuda/libgpool-cuda.so.1, worker/cuda/libgpool-rgpu.so.1,
#   client/gpool (for `gpool admin keygen`) and bench/gpool-bench-rgpu (optional).
#   cmake --build build-rel --target gpool-rgpu-server gpool-rgpu-check gpool_cuda_interposer \
#     gpool_rgpu_client gpool gpool-bench-rgpu
# Environment (optional): GPOOL_CUDA_REAL_DRIVER (the real libcuda.so.1; default: the usual paths),
#   RGPU_H100_BENCH=0 (skip the bench). rgpu_h100_dry_run.sh runs this script against the fake driver (ctest).
# Exit status: 0 all passed, 1 a check failed, 2 no GPU here (nothing run). The last line is
# `RGPU_H100 rc=<rc> ...`.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${1:-${GPOOL_BUILD_DIR:-$ROOT/build-rel}}
# Absolute: the paths below become symlink targets, which a relative path would leave dangling.
[[ -d $BUILD ]] && BUILD=$(cd "$BUILD" && pwd)
SERVER=$BUILD/worker/rgpu/gpool-rgpu-server
CHECK=$BUILD/worker/rgpu/gpool-rgpu-check
SHIM=$BUILD/worker/cuda/libgpool-cuda.so.1
CLIENT_LIB=$BUILD/worker/cuda/libgpool-rgpu.so.1
GPOOL=$BUILD/client/gpool
BENCH=$BUILD/bench/gpool-bench-rgpu

# shellcheck source=tests/gpu/find_driver.sh
source "$ROOT/tests/gpu/find_driver.sh"
require_gpu rgpu_h100 RGPU_H100
for f in "$SERVER" "$CHECK" "$SHIM" "$CLIENT_LIB" "$GPOOL"; do
  if [[ ! -e $f ]]; then
    echo "rgpu_h100: $f missing: build the targets named at the top of this script, or pass the build dir"
    echo "RGPU_H100 rc=1 gpu=present build=missing"
    exit 1
  fi
done

TMP=$(mktemp -d /tmp/gpool-rgpu-h100-XXXXXX)
SERVER_PID=
# shellcheck disable=SC2317  # called by the trap
cleanup() {
  [[ -n $SERVER_PID ]] && kill "$SERVER_PID" 2> /dev/null && wait "$SERVER_PID" 2> /dev/null
  rm -rf "$TMP"
}
trap cleanup EXIT
nvidia-smi -L | head -1
echo "real driver: $REAL"
RC=0
RESULTS=()
record() {  # name status
  RESULTS+=("$1=$2")
  [[ $2 == PASS ]] || RC=1
  echo "== $1: $2"
}

# Local: the check program against the real driver directly.
mkdir -p "$TMP/real" "$TMP/shim"
ln -s "$REAL" "$TMP/real/libcuda.so.1"
ln -s "$SHIM" "$TMP/shim/libcuda.so.1"
LD_LIBRARY_PATH=$TMP/real "$CHECK" session > "$TMP/local.out" 2> "$TMP/local.err"
echo "local rc=$?"

# Remote: a session server on loopback (it opens the real driver by path), the check program with the
# interposer as its libcuda.so.1 in remote mode.
"$GPOOL" admin keygen --out "$TMP/server" > /dev/null && "$GPOOL" admin keygen --out "$TMP/owner" > /dev/null
OWNER_PUB=$(sed -n 's/^public-key = "\(.*\)"$/\1/p' "$TMP/owner.key")
SERVER_PUB=$(sed -n 's/^public-key = "\(.*\)"$/\1/p' "$TMP/server.key")
"$SERVER" --endpoint 'tcp://127.0.0.1:*' --secret-key-file "$TMP/server.key" --owner-key "$OWNER_PUB" \
  --idle-timeout-ms 600000 --driver "$REAL" > "$TMP/server.out" 2> "$TMP/server.err" &
SERVER_PID=$!
for _ in $(seq 100); do grep -q ready "$TMP/server.out" && break; sleep 0.1; done  # polls for the ready line
ENDPOINT=$(sed -n 's/.*endpoint=//p' "$TMP/server.out")
GPOOL_RGPU_ENDPOINT=$ENDPOINT GPOOL_RGPU_SERVER_KEY=$SERVER_PUB GPOOL_RGPU_KEY_FILE=$TMP/owner.key \
  GPOOL_RGPU_CLIENT_LIB=$CLIENT_LIB LD_LIBRARY_PATH=$TMP/shim "$CHECK" session > "$TMP/remote.out" 2> "$TMP/remote.err"
echo "remote rc=$?"
cat "$TMP/remote.out"
if grep -q "vector_add result=0 correct=1" "$TMP/local.out" && diff -u "$TMP/local.out" "$TMP/remote.out"; then
  record identical_output PASS
else
  echo "--- local stderr"; cat "$TMP/local.err"; echo "--- remote stderr"; cat "$TMP/remote.err"
  record identical_output FAIL
fi
kill -TERM "$SERVER_PID"; wait "$SERVER_PID"; SERVER_RC=$?; SERVER_PID=
grep -o 'released.*' "$TMP/server.err"
if [[ $SERVER_RC -eq 0 ]]; then record server_sigterm_exit PASS; else record server_sigterm_exit FAIL; fi

if [[ ${RGPU_H100_BENCH:-1} == 0 ]]; then
  echo "rgpu_h100: RGPU_H100_BENCH=0: bench skipped"
elif [[ -x $BENCH ]]; then
  "$BENCH" --driver "$REAL" 2> "$TMP/bench.err" || record bench FAIL
else
  echo "rgpu_h100: $BENCH not built: bench skipped"
fi
echo "RGPU_H100 rc=$RC gpu=present ${RESULTS[*]}"
exit $RC
