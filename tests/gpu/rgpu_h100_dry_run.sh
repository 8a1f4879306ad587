#!/usr/bin/env bash
# rgpu_h100.sh against gpool's fake driver, on a machine without a GPU: an nvidia-smi stand-in that
# names one GPU, GPOOL_CUDA_REAL_DRIVER pointing at the fake libcuda.so.1. It proves nothing about a
# real GPU; it keeps the script itself working (paths, keys, the server's start and stop, the diff)
# until a GPU run, which is the point of the script (a relative build dir once left its symlinks
# dangling, and only running it showed that).
#   rgpu_h100_dry_run.sh BUILD_DIR FAKE_LIBCUDA
# Exit status: the script's, and 1 when its last line does not say every check passed.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=$1
FAKE=$2
TMP=$(mktemp -d /tmp/gpool-rgpu-dry-XXXXXX)
trap 'rm -rf "$TMP"' EXIT
printf '#!/bin/sh\necho "GPU 0: gpool fake GPU 0 (UUID: GPU-fake)"\n' > "$TMP/nvidia-smi"
chmod +x "$TMP/nvidia-smi"
# The build dir named relatively, as people type it.
(cd "$(dirname "$BUILD")" &&
  PATH=$TMP:$PATH GPOOL_CUDA_REAL_DRIVER=$FAKE RGPU_H100_BENCH=0 "$ROOT/tests/gpu/rgpu_h100.sh" "$(basename "$BUILD")") \
  > "$TMP/out" 2>&1
RC=$?
cat "$TMP/out"
LAST=$(tail -1 "$TMP/out")
if [[ $RC -ne 0 || $LAST != "RGPU_H100 rc=0 gpu=present identical_output=PASS server_sigterm_exit=PASS" ]]; then
  echo "rgpu_h100_dry_run: FAIL (rc=$RC)"
  exit 1
fi
echo "rgpu_h100_dry_run: PASS"
