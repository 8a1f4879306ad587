# Sourced by the real-GPU scripts (interposer_h100.sh, rgpu_h100.sh): sets
# REAL to the node's libcuda.so.1 (GPOOL_CUDA_REAL_DRIVER, else the usual
# places), or, with no GPU or driver here, says so and exits 2 so a run
# without a GPU is never mistaken for a pass.
#   require_gpu SCRIPT_NAME RESULT_TAG
require_gpu() {
  REAL=${GPOOL_CUDA_REAL_DRIVER:-}
  if [[ -z $REAL ]]; then
    for p in /usr/lib/x86_64-linux-gnu/libcuda.so.1 /usr/lib64/libcuda.so.1 /usr/local/nvidia/lib64/libcuda.so.1; do
      [[ -e $p ]] && { REAL=$p; break; }
    done
  fi
  if ! command -v nvidia-smi > /dev/null 2>&1 || ! nvidia-smi -L > /dev/null 2>&1 || [[ -z $REAL ]]; then
    echo "$1: no NVIDIA GPU here (nvidia-smi -L fails or no libcuda.so.1 at the usual paths; set GPOOL_CUDA_REAL_DRIVER): nothing run"
    echo "$2 rc=2 gpu=none"
    exit 2
  fi
}
