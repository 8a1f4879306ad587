#!/usr/bin/env bash
# Real-GPU check: one coordinator and one worker that probes the host through NVML (no --spec), then a
# whole-GPU job, a GPU-share job and a 20 s matmul job, with the node and job views printed on the way.
# Run from anywhere on a machine with an NVIDIA GPU, after tests/gpu/pack.sh has made .gpucarry/ (the
# binaries and their non-glibc libraries) in the repo root. Never run by CI. See tests/gpu/README.md.
#
# Finishes in under 4 minutes whatever happens (every step has a timeout, and a watchdog ends the run);
# stops everything it started, by PID. The last line is `REAL_GPU_CHECK rc=<0|1> ...`; the exit status
# is the same rc.
#
# Environment (all optional):
#   GPUCHECK_BIN          directory holding the three binaries (default .gpucarry/bin, else build-gpucheck/*)
#   GPUCHECK_LIB          their libraries (default .gpucarry/lib)
#   GPUCHECK_PORT         first of three ports tried on 127.0.0.1 (default 27400)
#   GPUCHECK_VGPU_LIB     HAMi-core libvgpu.so to pass as --cuda-intercept-lib instead of gpool's interposer
#   GPUCHECK_ARTIFACTS    directory to copy the coordinator, worker and task logs into (default $OUT if set)
#   GPUCHECK_KEEP=1       keep the temporary directory
#   GPUCHECK_BUDGET_S     seconds for the steps (default 240); the watchdog fires 20 s after it
#   GPUCHECK_WORKER_SPEC  test the script itself without a GPU: the worker reads this node spec instead of
#                         probing NVML (e.g. worker/examples/node-8gpu.yaml); with PYTHONPATH=tests/gpu/fake_torch
#                         the jobs run to the end. nvml_discovery then always FAILs, so rc is never 0.

set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT" || exit 1
T0=$SECONDS
BUDGET=${GPUCHECK_BUDGET_S:-240}
HARD=${GPUCHECK_WATCHDOG_S:-$((BUDGET + 20))}
NODE=gpucheck-node
ORIG_LDLP=${LD_LIBRARY_PATH:-}

RESULTS=()
FAILS=0
WORK=""
COORD_PID=""
WORKER_PID=""
WATCHDOG_PID=""
TASK_PIDS=()
JOBS=()
GPUS=0
FINISHED=0

log() { echo "[$((SECONDS - T0))s] $*"; }
section() { echo; echo "===== [$((SECONDS - T0))s] $* ====="; }
# result NAME PASS|FAIL|SKIP|INFO [detail]
result() {
  RESULTS+=("$1=$2")
  [[ $2 == FAIL ]] && FAILS=$((FAILS + 1))
  echo ">>> $1: $2${3:+ -- $3}"
}
left() { echo $((BUDGET - (SECONDS - T0))); }
# cap N: N, or fewer seconds if the budget has less left (at least 1)
cap() {
  local want=$1 l
  l=$(left)
  ((l < want)) && want=$l
  ((want < 1)) && want=1
  echo "$want"
}

# ---------- process handling ----------

alive() { # a live process (not a zombie) with this pid
  local st
  [[ -n ${1:-} && -r /proc/$1/stat ]] || return 1
  st=$(sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1)
  [[ -n $st && $st != Z && $st != X ]]
}

stop_pid() { # stop_pid NAME PID GRACE_S
  local name=$1 pid=$2 grace=$3 i
  [[ -n $pid ]] || return 0
  if alive "$pid"; then
    kill -TERM "$pid" 2>/dev/null
    for ((i = 0; i < grace * 10; i++)); do alive "$pid" || break; sleep 0.1; done
    if alive "$pid"; then
      log "$name (pid $pid) still running after ${grace}s: SIGKILL"
      kill -KILL "$pid" 2>/dev/null
      for ((i = 0; i < 20; i++)); do alive "$pid" || break; sleep 0.1; done
    fi
  fi
  wait "$pid" 2>/dev/null
  alive "$pid" && return 1
  log "$name (pid $pid) stopped"
  return 0
}

print_tails() {
  [[ -n $WORK && -d $WORK ]] || return 0
  section "coordinator log (last 40 lines)"
  tail -n 40 "$WORK/coordinator.log" 2>/dev/null || echo "(none)"
  section "worker log (last 40 lines)"
  tail -n 40 "$WORK/worker.log" 2>/dev/null || echo "(none)"
}

finish() {
  local rc=$?
  ((FINISHED)) && return
  FINISHED=1
  trap - EXIT INT TERM HUP
  if [[ -n $WATCHDOG_PID ]]; then
    kill -TERM "$WATCHDOG_PID" 2>/dev/null
    wait "$WATCHDOG_PID" 2>/dev/null
  fi
  ((rc >= 128)) && result aborted FAIL "signal $((rc - 128)) (watchdog or interrupt) at $((SECONDS - T0))s"
  print_tails
  section "cleanup"
  # The worker first: on SIGTERM it stops its tasks (SIGTERM, 5 s grace, SIGKILL) and reports them.
  stop_pid gpool-worker "$WORKER_PID" 12 || result cleanup FAIL "gpool-worker $WORKER_PID survived SIGKILL"
  stop_pid gpool-coordinator "$COORD_PID" 8 || result cleanup FAIL "gpool-coordinator $COORD_PID survived SIGKILL"
  local p left_over=()
  for p in "${TASK_PIDS[@]}"; do
    if alive "$p"; then
      log "task process $p outlived the worker: killing its process group"
      kill -KILL -- "-$p" 2>/dev/null || kill -KILL "$p" 2>/dev/null
      sleep 0.2
    fi
    alive "$p" && left_over+=("$p")
  done
  for p in $COORD_PID $WORKER_PID; do alive "$p" && left_over+=("$p"); done
  if ((${#left_over[@]})); then
    result cleanup FAIL "processes left: ${left_over[*]}"
  else
    log "no process left running (coordinator, worker, ${#TASK_PIDS[@]} task pid(s) checked)"
  fi
  local art=${GPUCHECK_ARTIFACTS:-${OUT:-}}
  if [[ -n $art && -n $WORK && -d $WORK ]]; then
    mkdir -p "$art/gpucheck" && cp -r "$WORK"/*.log "$WORK"/worker/tasks "$art/gpucheck/" 2>/dev/null
    log "logs copied to $art/gpucheck"
  fi
  if [[ -n $WORK && -d $WORK ]]; then
    if [[ ${GPUCHECK_KEEP:-0} == 1 ]]; then log "kept $WORK"; else rm -rf "$WORK"; fi
  fi
  local final=0
  ((FAILS > 0)) && final=1
  echo
  echo "REAL_GPU_CHECK rc=$final gpus=$GPUS elapsed=$((SECONDS - T0))s ${RESULTS[*]}"
  exit "$final"
}
trap finish EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

# Watchdog: the whole run ends (through finish) if the steps overrun.
(
  trap 'kill "$sp" 2>/dev/null; wait "$sp" 2>/dev/null; exit 0' TERM
  sleep "$HARD" &
  sp=$!
  wait "$sp"
  echo "[watchdog] ${HARD}s passed: ending the run" >&2
  kill -TERM $$ 2>/dev/null
) &
WATCHDOG_PID=$!

section "real GPU check on $(hostname) ($(. /etc/os-release 2>/dev/null; echo "${PRETTY_NAME:-unknown OS}"), $(uname -r))"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/gpool-gpucheck.XXXXXX") || exit 1
log "work dir $WORK; step budget ${BUDGET}s, watchdog ${HARD}s"

# ---------- binaries ----------

BIN=${GPUCHECK_BIN:-}
LIB=${GPUCHECK_LIB:-}
if [[ -z $BIN ]]; then
  if [[ -x .gpucarry/bin/gpool-worker ]]; then
    BIN=$ROOT/.gpucarry/bin
    LIB=${LIB:-$ROOT/.gpucarry/lib}
  elif [[ -x build-gpucheck/worker/gpool-worker ]]; then
    mkdir -p "$WORK/bin"
    ln -s "$ROOT/build-gpucheck/control/gpool-coordinator" "$ROOT/build-gpucheck/worker/gpool-worker" \
      "$ROOT/build-gpucheck/client/gpool" "$WORK/bin/"
    BIN=$WORK/bin
  fi
fi
if [[ -z $BIN || ! -x $BIN/gpool-coordinator || ! -x $BIN/gpool-worker || ! -x $BIN/gpool ]]; then
  result binaries FAIL "no gpool binaries: run tests/gpu/pack.sh first (makes .gpucarry/), or set GPUCHECK_BIN"
  exit 1
fi
[[ -f .gpucarry/MANIFEST && $BIN == "$ROOT/.gpucarry/bin" ]] && head -3 .gpucarry/MANIFEST

section "binaries"
# LD_LIBRARY_PATH for the gpool processes only. The carried libstdc++ needs GLIBC_2.36; on an older
# glibc fall back to the machine's own libstdc++/libgcc_s (GLIBCXX_3.4.30, GCC 12, is what they need).
runs_ok() { # runs_ok LIBPATH
  local b
  for b in gpool-coordinator gpool-worker gpool; do
    LD_LIBRARY_PATH=$1 timeout 10 "$BIN/$b" --version >/dev/null 2>"$WORK/version.err" || return 1
  done
}
GP_LDLP=""
if [[ -n $LIB ]]; then
  cand=$LIB${ORIG_LDLP:+:$ORIG_LDLP}
  if runs_ok "$cand"; then
    GP_LDLP=$cand
    log "using the carried libraries ($LIB)"
  else
    log "the binaries do not start with the carried libraries: $(head -c 400 "$WORK/version.err")"
    mkdir -p "$WORK/lib-nocxx"
    for f in "$LIB"/*; do
      case $(basename "$f") in libstdc++.so* | libgcc_s.so*) ;; *) ln -s "$f" "$WORK/lib-nocxx/" ;; esac
    done
    cand=$WORK/lib-nocxx${ORIG_LDLP:+:$ORIG_LDLP}
    if runs_ok "$cand"; then
      GP_LDLP=$cand
      log "using the carried libraries without libstdc++/libgcc_s (the machine's own instead)"
    fi
  fi
elif runs_ok "$ORIG_LDLP"; then
  GP_LDLP=$ORIG_LDLP
fi
if ! runs_ok "$GP_LDLP"; then
  result binaries FAIL "the gpool binaries do not start here: $(head -c 400 "$WORK/version.err")"
  LD_LIBRARY_PATH=$GP_LDLP ldd "$BIN/gpool-worker" | grep -v '=> /' || true
  exit 1
fi
for b in gpool-coordinator gpool-worker gpool; do
  echo "$(LD_LIBRARY_PATH=$GP_LDLP "$BIN/$b" --version 2>&1 | head -1)   [$BIN/$b]"
done
result binaries PASS

# The CLI: every call bounded, by its own retries (4 x 3 s) and by timeout(1).
G() {
  local t=${GT:-15}
  LD_LIBRARY_PATH=$GP_LDLP timeout -k 2 "$t" "$BIN/gpool" --insecure -c "tcp://127.0.0.1:$CLIENT_PORT" --timeout-ms 3000 "$@"
}
py_json() { # py_json EXPR < json: evaluates EXPR with d = the parsed JSON
  timeout 10 python3 -c 'import json,sys
try:
    d = json.load(sys.stdin)
    v = eval(sys.argv[1])
except Exception as e:
    v = ""
print(v)' "$1" 2>/dev/null
}

# ---------- the GPU as the driver sees it ----------

section "GPU (nvidia-smi)"
SMI_UUID=""
if command -v nvidia-smi >/dev/null 2>&1; then
  timeout -k 2 20 nvidia-smi -L || log "nvidia-smi -L failed (rc=$?)"
  timeout -k 2 20 nvidia-smi --query-gpu=name,uuid,memory.total,pci.bus_id,driver_version --format=csv ||
    log "nvidia-smi --query-gpu failed"
  SMI_UUID=$(timeout -k 2 20 nvidia-smi --query-gpu=uuid --format=csv,noheader 2>/dev/null | head -1 | tr -d ' ')
else
  log "nvidia-smi not found: this machine has no NVIDIA driver in PATH"
fi
[[ -n $SMI_UUID ]] && result nvidia_smi PASS "$SMI_UUID" || result nvidia_smi FAIL "no GPU listed by nvidia-smi"

section "NVML library"
NVML_FLAG=()
NVML_LDCONFIG=$(ldconfig -p 2>/dev/null | awk '/libnvidia-ml\.so\.1 .*x86-64/ {print $NF; exit}')
NVML_PATH=""
for c in "$NVML_LDCONFIG" /usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1 /usr/local/nvidia/lib64/libnvidia-ml.so.1 \
  /usr/local/nvidia/lib/libnvidia-ml.so.1 /usr/lib64/libnvidia-ml.so.1 /usr/lib/libnvidia-ml.so.1; do
  [[ -n $c && -e $c ]] && { NVML_PATH=$c; break; }
done
if [[ -z $NVML_PATH ]]; then
  IFS=: read -ra dirs <<<"$ORIG_LDLP"
  for d in "${dirs[@]}"; do [[ -n $d && -e $d/libnvidia-ml.so.1 ]] && { NVML_PATH=$d/libnvidia-ml.so.1; break; }; done
fi
if [[ -z $NVML_PATH ]]; then
  NVML_PATH=$(timeout 10 find /usr /opt -name 'libnvidia-ml.so.1' 2>/dev/null | head -1)
fi
if [[ -n $NVML_LDCONFIG ]]; then
  log "libnvidia-ml.so.1 is in the ldconfig cache: $NVML_LDCONFIG (the worker's default resolves)"
elif [[ -n $NVML_PATH ]]; then
  log "libnvidia-ml.so.1 is not in the ldconfig cache; found $NVML_PATH: passing --nvml-library"
  NVML_FLAG=(--nvml-library "$NVML_PATH")
else
  log "libnvidia-ml.so.1 not found (ldconfig -p, /usr/lib/x86_64-linux-gnu, /usr/local/nvidia/lib64, LD_LIBRARY_PATH, find): the worker will see no GPU"
fi
[[ -n $NVML_PATH ]] && ls -l "$NVML_PATH"

# ---------- coordinator and worker ----------

section "start coordinator and worker"
port_busy() { timeout 1 bash -c "exec 3<>/dev/tcp/127.0.0.1/$1" 2>/dev/null; }
BASE=${GPUCHECK_PORT:-27400}
CLIENT_PORT=""
for try in 0 1 2 3 4 5 6 7 8 9; do
  b=$((BASE + 10 * try))
  if ! port_busy "$b" && ! port_busy $((b + 1)) && ! port_busy $((b + 2)); then
    CLIENT_PORT=$b
    WORKER_PORT=$((b + 1))
    break
  fi
  log "ports $b-$((b + 2)) not all free"
done
if [[ -z $CLIENT_PORT ]]; then
  result start FAIL "no free port triple from $BASE"
  exit 1
fi
log "ports: client $CLIENT_PORT, worker $WORKER_PORT (127.0.0.1)"

LD_LIBRARY_PATH=$GP_LDLP "$BIN/gpool-coordinator" --data-dir "$WORK/coordinator" \
  --client-addr "tcp://127.0.0.1:$CLIENT_PORT" --worker-addr "tcp://127.0.0.1:$WORKER_PORT" \
  --heartbeat-ms 500 --node-timeout-ms 5000 --preempt-grace-ms 3000 --insecure >"$WORK/coordinator.log" 2>&1 &
COORD_PID=$!
log "gpool-coordinator pid $COORD_PID"

WORKER_ARGS=(--insecure --coordinator "tcp://127.0.0.1:$WORKER_PORT" --node-name "$NODE" --data-dir "$WORK/worker" "${NVML_FLAG[@]}")
SPEC=${GPUCHECK_WORKER_SPEC:-}
if [[ -n $SPEC ]]; then
  [[ $SPEC == /* ]] || SPEC=$ROOT/$SPEC
  WORKER_ARGS+=(--spec "$SPEC")
  log "TEST MODE: the worker reads $SPEC instead of probing NVML"
fi
if [[ -n ${GPUCHECK_VGPU_LIB:-} ]]; then
  WORKER_ARGS+=(--cuda-intercept-lib "$GPUCHECK_VGPU_LIB")
  log "GPU shares enforced by $GPUCHECK_VGPU_LIB"
else
  log "no GPUCHECK_VGPU_LIB: GPU shares are held by gpool's interposer where the worker finds libgpool-cuda.so.1 (its log says which)"
fi
# cwd $WORK: tasks start there, and python3 must not pick up anything from the repo root.
(cd "$WORK" && LD_LIBRARY_PATH=$GP_LDLP exec "$BIN/gpool-worker" "${WORKER_ARGS[@]}") >"$WORK/worker.log" 2>&1 &
WORKER_PID=$!
if [[ -n $SPEC ]]; then log "gpool-worker pid $WORKER_PID (--spec $SPEC)"; else log "gpool-worker pid $WORKER_PID (no --spec: probes this host through NVML)"; fi

# Wait for the node to be Ready.
NODE_JSON=""
deadline=$((SECONDS + $(cap 30)))
ready=0
while ((SECONDS < deadline)); do
  alive "$COORD_PID" || { log "gpool-coordinator exited"; break; }
  alive "$WORKER_PID" || { log "gpool-worker exited"; break; }
  NODE_JSON=$(GT=5 G --json nodes --devices 2>/dev/null)
  st=$(py_json "[n for n in d['nodes'] if n['name'] == '$NODE'][0]['state']" <<<"$NODE_JSON")
  if [[ $st == Ready* ]]; then ready=1; break; fi
  sleep 0.5
done
if ((ready)); then
  result node_ready PASS "$NODE Ready after $((SECONDS - T0))s"
else
  result node_ready FAIL "$NODE not Ready (state '${st:-none}')"
  exit 1
fi

section "gpool nodes --devices"
G nodes --devices
section "gpool node show $NODE"
G node show "$NODE"
section "worker's discovery lines"
grep -iE 'nvml|gpu|numa|register' "$WORK/worker.log" | head -20

GPUS=$(py_json "[n for n in d['nodes'] if n['name'] == '$NODE'][0].get('gpus_total', 0)" <<<"$NODE_JSON")
GPUS=${GPUS:-0}
DEV0=$(py_json "(lambda g: '%s|%s|%s|%s' % (g.get('model',''), g.get('uuid',''), g.get('memory_mib',0), g.get('numa',-1)))([n for n in d['nodes'] if n['name'] == '$NODE'][0]['devices'][0])" <<<"$NODE_JSON")
if ((GPUS > 0)); then
  IFS='|' read -r M U MEM NUMA <<<"$DEV0"
  detail="$GPUS GPU(s); GPU 0: model '$M' uuid $U memory ${MEM} MiB NUMA $NUMA"
  if [[ -n $SPEC ]]; then
    result nvml_discovery FAIL "test mode: $detail come from $SPEC, not from NVML"
  elif [[ -n $SMI_UUID && $U != "$SMI_UUID" ]]; then
    result nvml_discovery FAIL "$detail; nvidia-smi says GPU 0 is $SMI_UUID"
  else
    result nvml_discovery PASS "$detail${SMI_UUID:+ (matches nvidia-smi)}"
  fi
else
  result nvml_discovery FAIL "the worker found no GPU through NVML: the GPU jobs below will stay Pending (expected only on a machine without a GPU)"
fi

# ---------- jobs ----------

JOB_WAIT_GPU=45
((GPUS > 0)) || JOB_WAIT_GPU=8

submit() { # submit ARGS... ; prints the job id
  local out id
  out=$(G --json submit --env "LD_LIBRARY_PATH=$ORIG_LDLP" "$@" 2>&1)
  id=$(py_json "d['job_id']" <<<"$out")
  if [[ -z $id ]]; then
    log "submit failed: $out" >&2
    return 1
  fi
  JOBS+=("$id")
  log "job $id submitted" >&2
  echo "$id"
}
job_state() { G --json job "$1" 2>/dev/null | py_json "d['summary']['state']"; }
note_task_pids() {
  local p
  for p in $(G --json job "$1" 2>/dev/null | py_json "' '.join(str(t['pid']) for t in d['tasks'] if t.get('pid'))"); do
    [[ " ${TASK_PIDS[*]} " == *" $p "* ]] || TASK_PIDS+=("$p")
  done
}
# wait_job ID SECONDS: 0 Succeeded, 1 Failed/Cancelled, 4 timed out (then cancelled), other: CLI trouble
wait_job() {
  local id=$1 s rc
  s=$(cap "$2")
  log "waiting up to ${s}s for job $id"
  GT=$((s + 10)) G wait "$id" --timeout "$s"
  rc=$?
  note_task_pids "$id"
  if ((rc != 0 && rc != 1)); then
    log "job $id not finished after ${s}s (wait rc=$rc): state $(job_state "$id")"
    G job "$id"
    GT=15 G cancel "$id" --grace 3 || true
  fi
  return "$rc"
}
show_job() { # show_job ID
  section "gpool job $1"
  G job "$1"
  section "gpool logs $1"
  G logs "$1" 2>&1 || log "(no log for job $1: it never started)"
}

# 1. a whole GPU
section "job 1: a whole GPU (--gpus 1)"
J1=$(submit --name whole-gpu --gpus 1 -- sh -c 'echo CVD=$CUDA_VISIBLE_DEVICES NVD=$NVIDIA_VISIBLE_DEVICES; nvidia-smi -L; python3 -c "import torch;print(torch.cuda.is_available(), torch.cuda.device_count(), torch.cuda.get_device_name(0))"')
if [[ -n $J1 ]]; then
  wait_job "$J1" "$JOB_WAIT_GPU"
  rc=$?
  show_job "$J1"
  LOG1=$(G logs "$J1" 2>/dev/null)
  if ((rc == 0)) && grep -q '^True 1 ' <<<"$LOG1" && grep -q '^CVD=[0-9]' <<<"$LOG1"; then
    result whole_gpu_job PASS "$(grep '^True 1 ' <<<"$LOG1" | head -1)"
  elif ((rc == 0)); then
    result whole_gpu_job FAIL "Succeeded, but the log lacks 'CVD=<index>' or torch's 'True 1 <name>'"
  else
    result whole_gpu_job FAIL "state $(job_state "$J1") (wait rc=$rc)"
  fi
else
  result whole_gpu_job FAIL "submit failed"
fi

# 2. a GPU share
cat >"$WORK/share.py" <<'EOF'
import torch
free, total = torch.cuda.mem_get_info()
print("mem_get_info before: free %d MiB, total %d MiB" % (free >> 20, total >> 20))
x = torch.empty(4 << 30, dtype=torch.uint8, device="cuda")
x.fill_(1)
torch.cuda.synchronize()
free, total = torch.cuda.mem_get_info()
print("allocated 4 GiB: ok; mem_get_info after: free %d MiB, total %d MiB" % (free >> 20, total >> 20))
print("SHARE_OK")
EOF
section "job 2: a GPU share (--gpu-memory 20Gi --gpu-compute 30 --sharing-qos fixed-share)"
J2=$(submit --name gpu-share --gpu-memory 20Gi --gpu-compute 30 --sharing-qos fixed-share -- sh -c "env | grep -E 'CUDA|GPOOL|NVIDIA|LD_|GPU_CORE' | sort; python3 $WORK/share.py")
if [[ -n $J2 ]]; then
  wait_job "$J2" "$JOB_WAIT_GPU"
  rc=$?
  show_job "$J2"
  LOG2=$(G logs "$J2" 2>/dev/null)
  if ((rc == 0)) && grep -q '^GPOOL_GPU_MEMORY_MIB=20480' <<<"$LOG2" && grep -q '^CUDA_DEVICE_MEMORY_LIMIT' <<<"$LOG2" &&
    grep -q '^CUDA_DEVICE_SM_LIMIT=30' <<<"$LOG2" &&
    grep -q SHARE_OK <<<"$LOG2"; then
    result gpu_share_job PASS "$(grep 'after:' <<<"$LOG2" | head -1)${GPUCHECK_VGPU_LIB:+ (enforced by HAMi-core)}"
  elif ((rc == 0)); then
    result gpu_share_job FAIL "Succeeded, but the log lacks GPOOL_GPU_MEMORY_MIB=20480, CUDA_DEVICE_MEMORY_LIMIT*, CUDA_DEVICE_SM_LIMIT=30 or SHARE_OK"
  else
    result gpu_share_job FAIL "state $(job_state "$J2") (wait rc=$rc)"
  fi
else
  result gpu_share_job FAIL "submit failed"
fi

# 3. 20 s of matmuls, with the usage the worker samples through NVML
cat >"$WORK/matmul.py" <<'EOF'
import sys, time, torch
secs = float(sys.argv[1])
n = 8192
a = torch.randn(n, n, device="cuda")
b = torch.randn(n, n, device="cuda")
torch.cuda.synchronize()
t0 = time.time()
iters = 0
while time.time() - t0 < secs:
    for _ in range(10):
        c = a @ b
    torch.cuda.synchronize()
    iters += 10
dt = time.time() - t0
print("matmul %dx%d fp32: %d iterations in %.1f s, %.1f TFLOP/s on %s" % (n, n, iters, dt, iters * 2.0 * n ** 3 / dt / 1e12, torch.cuda.get_device_name(0)))
print("MATMUL_OK")
EOF
section "job 3: 20 s of matmuls (--gpus 1)"
J3=$(submit --name matmul --gpus 1 -- python3 "$WORK/matmul.py" 20)
if [[ -n $J3 ]]; then
  deadline=$((SECONDS + $(cap $((JOB_WAIT_GPU - 15 > 5 ? JOB_WAIT_GPU - 15 : 5)))))
  st=""
  while ((SECONDS < deadline)); do
    st=$(job_state "$J3")
    [[ $st == Pending || -z $st ]] || break
    sleep 0.5
  done
  log "job $J3 is $st"
  USED=""
  if [[ $st == Running ]]; then
    note_task_pids "$J3"
    # Give torch time to start and the worker a few heartbeats to sample it.
    deadline=$((SECONDS + $(cap 15)))
    while ((SECONDS < deadline)); do
      USED=$(G --json job "$J3" 2>/dev/null | py_json "max([t.get('gpu_memory_used_mib', -1) for t in d['tasks']] or [-1])")
      [[ -n $USED && $USED -gt 0 ]] 2>/dev/null && break
      sleep 1
    done
    section "while job $J3 runs: gpool job $J3"
    G job "$J3"
    section "while job $J3 runs: gpool nodes --devices"
    G nodes --devices
    section "while job $J3 runs: gpool node show $NODE"
    G node show "$NODE"
    section "while job $J3 runs: its cgroup"
    # Every task runs in a cgroup of its own (worker/runner/task_cgroup.h);
    # this machine is the first v2 host the check runs on.
    grep -E 'task cgroups' "$WORK/worker.log" | tail -2
    PID3=$(G --json job "$J3" 2>/dev/null | py_json "d['tasks'][0].get('pid', 0)")
    if [[ -n $PID3 && $PID3 -gt 0 && -r /proc/$PID3/cgroup ]] 2>/dev/null; then
      echo "task pid $PID3: $(tr '\n' ' ' </proc/$PID3/cgroup)"
      if grep -q 'gpool/.*task-' "/proc/$PID3/cgroup"; then
        result task_cgroup PASS "$(grep -m1 'gpool/' /proc/$PID3/cgroup)"
      else
        result task_cgroup FAIL "task $PID3 is not in a gpool task cgroup"
      fi
    else
      result task_cgroup FAIL "no pid for job $J3"
    fi
    section "while job $J3 runs: nvidia-smi"
    timeout -k 2 20 nvidia-smi || log "nvidia-smi failed"
    if [[ -n $USED && $USED -gt 0 ]] 2>/dev/null; then
      result gpu_usage INFO "the worker reported ${USED} MiB of GPU memory used by job $J3 (NVML sampler)"
    else
      result gpu_usage INFO "no GPU memory usage reported for job $J3 (gpu_memory_used_mib='${USED}')"
    fi
  else
    log "job $J3 did not start: $(G job "$J3" 2>&1 | grep -A3 'Pending reasons' | tr '\n' ' ')"
  fi
  wait_job "$J3" $((GPUS > 0 ? 45 : 3))
  rc=$?
  show_job "$J3"
  LOG3=$(G logs "$J3" 2>/dev/null)
  if ((rc == 0)) && grep -q MATMUL_OK <<<"$LOG3"; then
    result matmul_job PASS "$(grep '^matmul' <<<"$LOG3" | head -1)"
  else
    result matmul_job FAIL "state $(job_state "$J3") (wait rc=$rc)"
  fi
else
  result matmul_job FAIL "submit failed"
fi

# ---------- health: the monitor on real NVML, a real XID, the GPU probe ----------

# A real application XID: a kernel that stores to an unmapped address (PTX JIT-compiled by the driver,
# launched through ctypes, so no CUDA toolkit is needed). The driver reports Xid 31 (MMU fault) or 13;
# both are application XIDs: recorded as a warning condition, never fenced.
cat >"$WORK/xid.py" <<'EOF'
import ctypes
cu = ctypes.CDLL("libcuda.so.1")
def name(r):
    s = ctypes.c_char_p()
    cu.cuGetErrorName(r, ctypes.byref(s))
    return s.value.decode() if s.value else "?"
def ck(r, what):
    print("%s: %d %s" % (what, r, name(r) if r else "ok"))
    if r:
        raise SystemExit(2)
ck(cu.cuInit(0), "cuInit")
dev = ctypes.c_int()
ck(cu.cuDeviceGet(ctypes.byref(dev), 0), "cuDeviceGet")
ctx = ctypes.c_void_p()
ck(cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "cuDevicePrimaryCtxRetain")
ck(cu.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
ptx = b""".version 7.0
.target sm_80
.address_size 64
.visible .entry bad(.param .u64 p)
{
  .reg .b64 %rd<2>;
  .reg .b32 %r<2>;
  ld.param.u64 %rd1, [p];
  mov.u32 %r1, 42;
  st.global.u32 [%rd1], %r1;
  ret;
}
"""
mod = ctypes.c_void_p()
ck(cu.cuModuleLoadData(ctypes.byref(mod), ctypes.c_char_p(ptx)), "cuModuleLoadData")
fn = ctypes.c_void_p()
ck(cu.cuModuleGetFunction(ctypes.byref(fn), mod, b"bad"), "cuModuleGetFunction")
addr = ctypes.c_uint64(0x7ead00000000)
params = (ctypes.c_void_p * 1)(ctypes.cast(ctypes.pointer(addr), ctypes.c_void_p))
ck(cu.cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, None, params, None), "cuLaunchKernel")
r = cu.cuCtxSynchronize()
print("XID_TRIGGER cuCtxSynchronize=%d %s" % (r, name(r)))
EOF
node_field() { # node_field EXPR: EXPR over n = this node in `gpool --json node show`
  G --json node show "$NODE" 2>/dev/null | py_json "(lambda n: $1)(d.get('node', d))"
}

section "health: the monitor on real NVML"
grep -E 'XID events|GPU health|health condition|health check' "$WORK/worker.log" | head -20
if ((GPUS == 0)) || [[ -n $SPEC ]]; then
  result health_monitor SKIP "no NVML GPU"
elif grep -qE 'XID events unavailable|XID events not registered|GPU health is not watched' "$WORK/worker.log"; then
  result health_monitor FAIL "$(grep -m1 -E 'XID events unavailable|XID events not registered|GPU health is not watched' "$WORK/worker.log")"
else
  result health_monitor PASS "XID events registered on $GPUS GPU(s); conditions now: $(node_field "[(c['kind'], c['device'], c['severity']) for c in n.get('health', [])]")"
fi
section "gpool node show $NODE (health)"
G node show "$NODE"

section "health: a real application XID (a kernel storing to an unmapped address)"
if ((GPUS > 0)) && [[ -z $SPEC ]]; then
  JX=$(submit --name xid --gpus 1 -- python3 "$WORK/xid.py")
  if [[ -n $JX ]]; then
    wait_job "$JX" 30
    show_job "$JX"
    XC=""
    deadline=$((SECONDS + $(cap 20)))
    while ((SECONDS < deadline)); do
      XC=$(node_field "[(c['xid'], c['severity'], c['device'], bool(n.get('cordoned'))) for c in n.get('health', []) if c['kind'] == 'xid']")
      [[ -n $XC && $XC != "[]" ]] && break
      sleep 0.5
    done
    log "xid conditions: ${XC:-none}"
    (dmesg 2>/dev/null || journalctl -k --no-pager 2>/dev/null) | grep -i xid | tail -5 || log "(kernel log not readable)"
    grep -E 'XID event|health condition' "$WORK/worker.log" | tail -5
    if [[ -n $XC && $XC != "[]" && $XC == *warning*False* ]]; then
      result real_xid PASS "condition (xid, severity, device, cordoned) = $XC"
    elif [[ -n $XC && $XC != "[]" ]]; then
      result real_xid FAIL "an application XID fenced or was not a warning: $XC"
    else
      result real_xid FAIL "no xid condition on $NODE within 20 s of the faulting kernel"
    fi
    section "gpool node show $NODE (after the XID)"
    G node show "$NODE"
    section "gpool events --node $NODE"
    G events --node "$NODE" | tail -10
  else
    result real_xid FAIL "submit failed"
  fi
else
  result real_xid SKIP "no NVML GPU"
fi

section "health: gpool probe gpu (copy bandwidth through the CUDA driver)"
if [[ -x $BIN/gpool-probe ]] && ((GPUS > 0)); then
  PROBE_OUT=$(GT=$(cap 60) G probe gpu --nodes "$NODE" --probe-bin "$BIN/gpool-probe" --timeout 40s 2>&1)
  prc=$?
  echo "$PROBE_OUT"
  if ((prc == 0)) && grep -q "^$NODE " <<<"$PROBE_OUT" && ! grep -q "not measured" <<<"$PROBE_OUT"; then
    result probe_gpu PASS "$(grep "^$NODE " <<<"$PROBE_OUT" | tr -s ' ' | head -1)"
  else
    result probe_gpu FAIL "rc=$prc"
  fi
else
  result probe_gpu SKIP "no gpool-probe in $BIN or no GPU"
fi

section "gpool jobs --all"
G jobs --all
section "gpool nodes"
G nodes
# Anything not finished (a timeout cancels it, but make sure) is cancelled before the worker stops.
for id in "${JOBS[@]}"; do
  case $(job_state "$id") in Pending | Running | Starting) GT=10 G cancel "$id" --grace 2 >/dev/null 2>&1 ;; esac
  note_task_pids "$id"
done
exit 0
