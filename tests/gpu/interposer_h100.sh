#!/usr/bin/env bash
# gpool's CUDA interposer (libgpool-cuda.so.1, worker/cuda/) on a real NVIDIA GPU: the vector add
# through it, refusal past a memory share, and a saturating kernel loop held to a 30 % fixed share
# while nvidia-smi samples utilisation. Never run by CI; see worker/cuda/README.md.
#
# Needs only the two artefacts of the build (no CUDA toolkit, no gpool daemons):
#   <dir>/libgpool-cuda.so.1 and <dir>/gpool-cuda-check, <dir> = $GPOOL_CUDA_BUILD_DIR
#   (default build-rel/worker/cuda, built by: cmake --build build-rel --target gpool_cuda_interposer gpool-cuda-check)
# Environment (optional): GPOOL_CUDA_REAL_DRIVER (the real libcuda.so.1; default: the usual paths),
#   CHECK_GPU (nvidia-smi index of the device CUDA calls device 0; default 0), CHECK_SECONDS (throttle
#   run, default 10).
# Exit status: 0 all passed, 1 a check failed, 2 no GPU here (nothing run). The last line is
# `INTERPOSER_H100 rc=<rc> ...`.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
DIR=${GPOOL_CUDA_BUILD_DIR:-$ROOT/build-rel/worker/cuda}
# Absolute: the interposer becomes a symlink target, which a relative path would leave dangling.
[[ -d $DIR ]] && DIR=$(cd "$DIR" && pwd)
GPU=${CHECK_GPU:-0}
SECONDS_THROTTLED=${CHECK_SECONDS:-10}
CHECK=$DIR/gpool-cuda-check
SHIM=$DIR/libgpool-cuda.so.1

# shellcheck source=tests/gpu/find_driver.sh
source "$ROOT/tests/gpu/find_driver.sh"
require_gpu interposer_h100 INTERPOSER_H100
if [[ ! -x $CHECK || ! -e $SHIM ]]; then
  echo "interposer_h100: $CHECK or $SHIM missing: build gpool_cuda_interposer and gpool-cuda-check, or set GPOOL_CUDA_BUILD_DIR"
  echo "INTERPOSER_H100 rc=1 gpu=present build=missing"
  exit 1
fi

TMP=$(mktemp -d /tmp/gpool-interposer-h100-XXXXXX)
SMI_PID=
# shellcheck disable=SC2317  # called by the trap
cleanup() {
  [[ -n $SMI_PID ]] && kill "$SMI_PID" 2> /dev/null
  rm -rf "$TMP" /dev/shm/gpool-cuda-h100check-$$ /dev/shm/gpool-cuda-h100check-$$-burst
}
trap cleanup EXIT
mkdir -p "$TMP/lib"
ln -s "$SHIM" "$TMP/lib/libcuda.so.1"
nvidia-smi -L | sed -n "$((GPU + 1))p"
echo "real driver: $REAL"

RESULTS=()
RC=0
record() {  # name status
  RESULTS+=("$1=$2")
  [[ $2 == PASS ]] || RC=1
  echo "== $1: $2"
}
# Runs gpool-cuda-check through the interposer with extra environment ($1, space-separated NAME=value).
through() {
  local env_extra=$1
  shift
  # shellcheck disable=SC2086
  env LD_LIBRARY_PATH="$TMP/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" GPOOL_CUDA_REAL_DRIVER="$REAL" \
    GPOOL_CUDA_LOG=stderr $env_extra timeout 60 "$CHECK" "$@"
}

echo "-- vector add on the real driver, then through the interposer"
if timeout 60 "$CHECK" vecadd 1000000 passthrough; then record direct_vecadd PASS; else record direct_vecadd FAIL; fi
if through "" vecadd 1000000 passthrough missing \
  procaddr cuMemAlloc 12000 0 ours:cuMemAlloc_v2 procaddr cuLaunchKernel 12000 2 ours:cuLaunchKernel_ptsz \
  procaddr cuDeviceGetName 12000 0 real:cuDeviceGetName; then
  record interposed_vecadd PASS
else
  record interposed_vecadd FAIL
fi

echo "-- a 1 GiB share: the whole share fits, one more allocation does not, frees are credited"
LEDGER=/dev/shm/gpool-cuda-h100check-$$
if through "GPOOL_GPU_MEMORY_MIB=1024 GPOOL_CUDA_LEDGER=$LEDGER" \
  totalmem 1G alloc v2 1G 0 alloc v2 2M 2 alloc managed 2M 2 alloc create 2M 2 alloc async 2M 2 \
  free 0 0 alloc v2 512M 0 alloc managed 256M 0 alloc create 128M 0 alloc async 64M 0 alloc pitch 32M 0 \
  alloc v2 64M 2 vecadd 1000000; then
  record memory_share PASS
else
  record memory_share FAIL
fi

# Samples utilization.gpu every 200 ms into $1 while the check runs; prints the mean of the samples
# after the first second (the ramp-up).
utilisation_during() {
  local out=$1
  shift
  nvidia-smi -i "$GPU" --query-gpu=utilization.gpu --format=csv,noheader,nounits -lms 200 > "$out" 2> /dev/null &
  SMI_PID=$!
  "$@" >&2
  local status=$?
  kill "$SMI_PID" 2> /dev/null
  wait "$SMI_PID" 2> /dev/null
  SMI_PID=
  awk 'NR > 5 && $1 ~ /^[0-9]+$/ { s += $1; n++ } END { if (n) printf "%.1f %d\n", s / n, n; else print "nan 0" }' "$out"
  return $status
}

echo "-- unthrottled: busy kernels back to back for 3 s"
read -r MEAN_FREE N_FREE < <(utilisation_during "$TMP/smi-free" through "" busy 2000 3000 | tail -1)
echo "utilization.gpu mean=${MEAN_FREE}% samples=$N_FREE"

echo "-- fixed-share 30 %: busy kernels back to back for ${SECONDS_THROTTLED} s"
read -r MEAN SAMPLES < <(utilisation_during "$TMP/smi-30" \
  through "GPOOL_GPU_COMPUTE_PCT=30 GPOOL_SHARING_QOS=fixed-share GPOOL_CUDA_LEDGER=$LEDGER" \
  busy 2000 $((SECONDS_THROTTLED * 1000)) | tail -1)
echo "utilization.gpu mean=${MEAN}% samples=$SAMPLES (target 30 % +- 10)"
if awk -v m="$MEAN" 'BEGIN { exit !(m >= 20 && m <= 40) }'; then record fixed_share_30 PASS; else record fixed_share_30 FAIL; fi

echo "-- burst-share 30 %, alone on the device: may use more"
read -r MEAN_BURST N_BURST < <(utilisation_during "$TMP/smi-burst" \
  through "GPOOL_GPU_COMPUTE_PCT=30 GPOOL_SHARING_QOS=burst-share GPOOL_CUDA_LEDGER=$LEDGER-burst" \
  busy 2000 3000 | tail -1)
echo "utilization.gpu mean=${MEAN_BURST}% samples=$N_BURST (alone: above 50 expected)"
if awk -v m="$MEAN_BURST" 'BEGIN { exit !(m > 50) }'; then record burst_alone PASS; else record burst_alone FAIL; fi

echo "INTERPOSER_H100 rc=$RC ${RESULTS[*]} util_free=${MEAN_FREE} util_fixed30=${MEAN} util_burst30=${MEAN_BURST}"
exit $RC
