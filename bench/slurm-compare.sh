#!/usr/bin/env bash
# gpool beside a real Slurm on this machine: the same short jobs (`true`),
# submitted by the same number of concurrent command-line clients, run to
# completion by each in turn; prints one JSON line per system and one with
# the ratio, so the comparison survives a noisy machine (both in one run).
#
#   bench/slurm-compare.sh [BUILD_DIR=build-rel] [JOBS=2000] [CLIENTS=16]
#
# Slurm (Debian 12's slurm-wlm 22.05, installed here if missing): one
# slurmctld and one slurmd on 127.0.0.1, munge authentication, one node of
# 64 CPUs (config_overrides: more than the machine has), the scheduler
# settings of Slurm's high-throughput guide that suit one host (sched/builtin,
# defer, no batch delay, a 0.1 s minimum interval, deep queue), no
# accounting DB. Jobs: `sbatch --wrap true -c 1 -o /dev/null`.
# gpool: one coordinator and one real gpool-worker (real task processes under
# its supervisor) with the same 64 CPUs, CurveZMQ on every channel as a
# default cluster has. Jobs: `gpool submit --cpus 1 -- true`.
# Both: CLIENTS shell loops each run JOBS/CLIENTS submissions back to back;
# the clock runs from the first submission until the system reports no job
# left (squeue empty; gpool status 0 pending, 0 running). submissions_per_s
# counts until the last submit returned. CPU seconds per submit command are
# measured on 50 extra submissions of each (getrusage of the children).
#
# Needs root (Slurm's daemons, munge), ports 6817-6823 free, and about a
# minute per thousand jobs. Not part of the test suite (it is a benchmark).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-rel}
jobs=${2:-2000}
clients=${3:-16}
build=$(cd "$build" && pwd)
for bin in control/gpool-coordinator worker/gpool-worker client/gpool; do
  [ -x "$build/$bin" ] || { echo "slurm-compare: $build/$bin missing (build it first)" >&2; exit 2; }
done
if [ "$(id -u)" -ne 0 ]; then echo "slurm-compare: needs root (slurmd, munged)" >&2; exit 2; fi
if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
  echo "slurm-compare: installing slurm-wlm and munge" >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends slurm-wlm munge >/dev/null
fi

work=$(mktemp -d /tmp/gpool-slurm-compare.XXXXXX)
# Each system's per-job node-side files on a tmpfs, as on a host whose /run is
# one (Debian's default; gpool-worker's default run dir is then under /run):
# slurmd's spool (job scripts, environments) and gpool-worker's --run-dir
# (task records). Durable state stays on disk for both (slurmctld's
# StateSaveLocation, the coordinator's data dir).
run=$(mktemp -d /dev/shm/gpool-slurm-compare.XXXXXX)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  done
  [ -n "${GPOOL_COMPARE_KEEP:-}" ] && { echo "slurm-compare: kept $work and $run" >&2; return; }
  rm -rf "$work" "$run"
}
trap cleanup EXIT
now() { date +%s.%N; }
calc() { awk "BEGIN { printf \"%.2f\", $1 }"; }

# Runs `submit_one` CLIENTS times in parallel, JOBS/CLIENTS each; prints the
# seconds the last one took to return.
per_client=$(( (jobs + clients - 1) / clients ))
jobs=$(( per_client * clients ))
submit_all() {
  local start; start=$(now)
  for ((c = 0; c < clients; c++)); do
    ( for ((j = 0; j < per_client; j++)); do submit_one || echo "submit failed" >&2; done ) &
  done
  wait
  calc "$(now) - $start"
}
# CPU seconds (user + sys) that 50 runs of `submit_one` cost, per run.
cpu_per_submit() {
  python3 - "$@" <<'PY'
import os, resource, subprocess, sys
before = resource.getrusage(resource.RUSAGE_CHILDREN)
for _ in range(50):
    subprocess.run(["bash", "-c", sys.argv[1]], check=True, stdout=subprocess.DEVNULL)
after = resource.getrusage(resource.RUSAGE_CHILDREN)
print("%.1f" % ((after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) / 50 * 1000))
PY
}
wait_until() {  # wait_until SECONDS CMD...: polls CMD until it succeeds
  local limit=$1; shift
  local end=$(( $(date +%s) + limit ))
  until "$@"; do
    [ "$(date +%s)" -lt "$end" ] || return 1
    sleep 0.05
  done
}

# ---- Slurm
mkdir -p "$work/slurm/state" "$run/slurmd-spool" "$work/slurm/log"
cat >"$work/slurm/slurm.conf" <<CONF
ClusterName=gpoolbench
SlurmctldHost=localhost(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort=6820-6823
SlurmdPort=6818
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation=$work/slurm/state
SlurmdSpoolDir=$run/slurmd-spool
SlurmctldPidFile=$work/slurm/slurmctld.pid
SlurmdPidFile=$work/slurm/slurmd.pid
SlurmctldLogFile=$work/slurm/log/slurmctld.log
SlurmdLogFile=$work/slurm/log/slurmd.log
SlurmctldDebug=error
SlurmdDebug=error
ReturnToService=2
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
MaxJobCount=200000
MinJobAge=2
MessageTimeout=30
SchedulerType=sched/builtin
SchedulerParameters=defer,batch_sched_delay=0,sched_min_interval=100000,default_queue_depth=1000,partition_job_depth=1000,sched_max_job_start=200
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
PriorityType=priority/basic
SlurmdParameters=config_overrides
SlurmdTimeout=300
InactiveLimit=0
KillWait=5
Waittime=0
NodeName=localhost NodeAddr=127.0.0.1 CPUs=64 Boards=1 SocketsPerBoard=1 CoresPerSocket=64 ThreadsPerCore=1 RealMemory=20000 State=UNKNOWN
PartitionName=batch Nodes=localhost Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF="$work/slurm/slurm.conf"
if ! pgrep -x munged >/dev/null; then
  mkdir -p /run/munge && chown munge:munge /run/munge 2>/dev/null || true
  if [ -f /etc/munge/munge.key ]; then
    su -s /bin/sh munge -c "munged --num-threads=10" || munged --force --num-threads=10
  else
    echo "slurm-compare: /etc/munge/munge.key missing (reinstall munge)" >&2; exit 2
  fi
fi
slurmctld -D -i >"$work/slurm/log/slurmctld.out" 2>&1 &
pids+=("$!")
slurmd -D >"$work/slurm/log/slurmd.out" 2>&1 &
pids+=("$!")
if ! wait_until 60 bash -c 'sinfo -h -o %t 2>/dev/null | grep -q idle'; then
  echo "slurm-compare: the Slurm node never became idle:" >&2
  tail -20 "$work/slurm/log/"* >&2
  exit 1
fi
slurm_version=$(sinfo -V 2>/dev/null || echo slurm)
slurm_cpu=$(cpu_per_submit "sbatch -Q --wrap true -c 1 -o /dev/null")
wait_until 120 bash -c '[ -z "$(squeue -h 2>/dev/null)" ]'
submit_one() { sbatch -Q --wrap true -c 1 -o /dev/null; }
start=$(now)
slurm_submit_s=$(submit_all)
wait_until 3600 bash -c '[ -z "$(squeue -h 2>/dev/null)" ]'
slurm_total_s=$(calc "$(now) - $start")
kill "${pids[@]}" 2>/dev/null || true
for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
pids=()
unset SLURM_CONF
slurm_rate=$(calc "$jobs / $slurm_total_s")
printf '{"metric": "slurm_jobs_completed_per_s", "value": %s, "unit": "jobs/s", "params": {"jobs": %d, "clients": %d, "submissions_per_s": %s, "seconds": %s, "cpu_ms_per_sbatch": %s, "slurm": "%s", "node_cpus": 64, "spool": "tmpfs"}}\n' \
  "$slurm_rate" "$jobs" "$clients" "$(calc "$jobs / $slurm_submit_s")" "$slurm_total_s" "$slurm_cpu" \
  "$slurm_version"

# ---- gpool
gpool="$build/client/gpool"
mkdir -m 700 "$work/keys"
for name in replica node user; do "$gpool" admin keygen --out "$work/keys/$name" >/dev/null; done
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
client_port=$(port) worker_port=$(port)
"$build/control/gpool-coordinator" --key-file "$work/keys/replica.key" --admin-key "$work/keys/user.pub" \
  --data-dir "$work/coordinator" --client-addr "tcp://127.0.0.1:$client_port" \
  --worker-addr "tcp://127.0.0.1:$worker_port" --log-level warn >"$work/coordinator.log" 2>&1 &
pids+=("$!")
export GPOOL_COORDINATOR="tcp://127.0.0.1:$client_port" GPOOL_KEY_FILE="$work/keys/user.key" \
  GPOOL_COORDINATOR_KEY="$work/keys/replica.pub"
wait_until 30 bash -c '"$0" status >/dev/null 2>&1' "$gpool"
cat >"$work/node.yaml" <<SPEC
name: compare-node
cpus: 64
memory: 20000Mi
SPEC
# Admission enrolment (the default): the node's key is enrolled under its name
# before its worker starts, as an operator would.
"$gpool" admin node enrol compare-node --node-key "$work/keys/node.pub" >/dev/null
"$build/worker/gpool-worker" --coordinator "tcp://127.0.0.1:$worker_port" --spec "$work/node.yaml" \
  --data-dir "$work/worker" --run-dir "$run/gpool-worker" --key-file "$work/keys/node.key" --coordinator-key "$work/keys/replica.pub" \
  --log-level warn >"$work/worker.log" 2>&1 &
pids+=("$!")
wait_until 30 bash -c '"$0" nodes 2>/dev/null | grep -q " Ready "' "$gpool" || {
  echo "slurm-compare: the gpool node never became ready" >&2; tail -20 "$work/worker.log" "$work/coordinator.log" >&2; exit 1; }
gpool_idle() { "$gpool" status 2>/dev/null | grep -q "Jobs: *0 pending, 0 running"; }
gpool_cpu=$(cpu_per_submit "'$gpool' submit --cpus 1 -- true")
wait_until 120 gpool_idle
submit_one() { "$gpool" submit --cpus 1 -- true >/dev/null; }
start=$(now)
gpool_submit_s=$(submit_all)
wait_until 3600 gpool_idle
gpool_total_s=$(calc "$(now) - $start")
gpool_rate=$(calc "$jobs / $gpool_total_s")
failed=$("$gpool" jobs --all 2>/dev/null | grep -c " Failed " || true)
printf '{"metric": "gpool_jobs_completed_per_s", "value": %s, "unit": "jobs/s", "params": {"jobs": %d, "clients": %d, "submissions_per_s": %s, "seconds": %s, "cpu_ms_per_submit": %s, "failed": %s, "node_cpus": 64, "run_dir": "tmpfs", "replicas": 1, "workers": 1, "curve": true}}\n' \
  "$gpool_rate" "$jobs" "$clients" "$(calc "$jobs / $gpool_submit_s")" "$gpool_total_s" "$gpool_cpu" "$failed"
printf '{"metric": "gpool_over_slurm_completed_per_s", "value": %s, "unit": "ratio", "params": {"jobs": %d, "clients": %d, "target": 3}}\n' \
  "$(calc "$gpool_rate / $slurm_rate")" "$jobs" "$clients"
