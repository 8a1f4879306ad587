#!/usr/bin/env bash
# Builds gpool, starts a local cluster on 127.0.0.1 (a coordinator of three
# Raft replicas, four workers each simulating an 8-GPU node), submits sample
# jobs, shows them running and finishing, shows queues at work (a high-class
# job preempting a low one, a queue reclaiming its share), kills a worker
# under a running task (the task outlives it and is adopted; killed for good,
# the node's lease stops the task and the job runs again elsewhere), kills the
# leading coordinator to
# show another take over, replaces the dead replica with a new one (replica
# 4, added at run time), then stops everything it started.
#
# Security is on (CurveZMQ, issue 31): the script makes a key pair for each
# replica, each node and the user (gpool admin keygen) under $work/keys; the
# replicas admit the user's key as the bootstrap admin (--admin-key), each
# worker is admitted by a single-use join token the script mints for it
# (gpool admin join-token create; a worker with an unknown key would wait as
# a pending enrolment for `gpool node approve`), and the CLI
# finds its keys through GPOOL_KEY_FILE and GPOOL_COORDINATOR_KEY.
#
# The replicas must know each other's addresses before they start, so they
# use fixed ports: 17400-17432 by default (client, worker, peer = base+10*i,
# +1, +2); set GPOOL_QUICKSTART_PORT to move them.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

./deploy/install-deps.sh

echo "== building"
# Release without debug info, in unity batches, and only the programs the
# demo runs: the first run is mostly this compile (README says how long).
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DCMAKE_UNITY_BUILD=ON -DCMAKE_UNITY_BUILD_BATCH_SIZE=16 >/dev/null
cmake --build build -j "$(nproc)" --target gpool-coordinator gpool-worker gpool-task-supervisor gpool \
  gpool_cuda_interposer gpool_fake_cuda gpool-cuda-check gpool-rgpu-server gpool_rgpu_client gpool-rgpu-check

bin="$root/build"
coordinator_bin="$bin/control/gpool-coordinator"
worker_bin="$bin/worker/gpool-worker"
gpool_bin="$bin/client/gpool"

base=${GPOOL_QUICKSTART_PORT:-17400}
replicas=3
for ((r = 0; r <= replicas; r++)); do  # and the replacement replica's
  for port in $((base + 10 * r)) $((base + 10 * r + 1)) $((base + 10 * r + 2)); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      echo "port $port on 127.0.0.1 is in use; set GPOOL_QUICKSTART_PORT to another base port" >&2
      exit 1
    fi
  done
done

work=$(mktemp -d "${TMPDIR:-/tmp}/gpool-quickstart.XXXXXX")
# Tasks run as their owner's uid, not root: they must be able to pass
# through to the workers' data dirs below (0711: no listing).
chmod 0711 "$work"
pids=()            # workers, then coordinators: stopped in reverse order
coordinator_pids=()
cleanup() {
  echo "== stopping the cluster"
  # Workers first, so they stop their tasks; then the coordinators.
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do kill -TERM "${pids[$i]}" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  echo "logs and state were in $work (removed)"
  rm -rf "$work"
}
trap cleanup EXIT

peers="" peer_clients="" peer_workers="" client_eps="" worker_eps=""
for ((r = 0; r < replicas; r++)); do
  id=$((r + 1)) p=$((base + 10 * r))
  peers+="${peers:+,}$id=tcp://127.0.0.1:$((p + 2))"
  peer_clients+="${peer_clients:+,}$id=tcp://127.0.0.1:$p"
  peer_workers+="${peer_workers:+,}$id=tcp://127.0.0.1:$((p + 1))"
  client_eps+="${client_eps:+,}tcp://127.0.0.1:$p"
  worker_eps+="${worker_eps:+,}tcp://127.0.0.1:$((p + 1))"
done

echo "== making CurveZMQ key pairs (replicas 1-4, nodes 1-4, the user) under $work/keys"
mkdir -m 700 "$work/keys"
for name in replica-1 replica-2 replica-3 replica-4 node-1 node-2 node-3 node-4 user; do
  "$gpool_bin" admin keygen --out "$work/keys/$name" >/dev/null
done
peer_keys="" coordinator_keys=""
for ((r = 0; r < replicas; r++)); do
  peer_keys+="${peer_keys:+,}$((r + 1))=$work/keys/replica-$((r + 1)).pub"
  coordinator_keys+="${coordinator_keys:+,}$work/keys/replica-$((r + 1)).pub"
done
export GPOOL_KEY_FILE="$work/keys/user.key" GPOOL_COORDINATOR_KEY="$coordinator_keys"

echo "== starting 3 coordinator replicas (data and logs under $work)"
for ((r = 0; r < replicas; r++)); do
  id=$((r + 1)) p=$((base + 10 * r))
  "$coordinator_bin" --id "$id" --peers "$peers" --peer-clients "$peer_clients" --peer-workers "$peer_workers" \
    --key-file "$work/keys/replica-$id.key" --peer-keys "$peer_keys" --admin-key "$work/keys/user.pub" \
    --data-dir "$work/coordinator-$id" \
    --client-addr "tcp://127.0.0.1:$p" --worker-addr "tcp://127.0.0.1:$((p + 1))" \
    --http-address 127.0.0.1:0 --http-insecure \
    --heartbeat-ms 500 --preempt-grace-ms 3000 --node-timeout-ms 2000 --node-lease-ms 3000 --node-lost-ms 9000 \
    >"$work/coordinator-$id.log" 2>&1 &
  coordinator_pids+=("$!")
done
pids=("${coordinator_pids[@]}")
echo "replicas: clients on $client_eps"
echo "          workers on $worker_eps"
# The CLI and the workers get every replica: followers redirect to the leader.
export GPOOL_COORDINATOR="$client_eps"
worker_ep="$worker_eps"
for _ in $(seq 1 100); do
  "$gpool_bin" status >/dev/null 2>&1 && break
  sleep 0.1
done

declare -A worker_pids join_tokens
start_worker() {  # start_worker I: (re)starts node-I's worker
  # Its join token admits it on its first registration; a restart is already
  # bound to its key, and the spent token is not looked at. The fake driver
  # holds no memory for contexts, so shares are not charged for them either.
  GPOOL_JOIN_TOKEN="${join_tokens[$1]}" "$worker_bin" --coordinator "$worker_ep" --spec "$work/node-$1.yaml" --data-dir "$work/worker-$1" \
    --key-file "$work/keys/node-$1.key" --coordinator-key "$coordinator_keys" \
    --cuda-real-driver "$bin/worker/cuda/fake_driver/libcuda.so.1" \
    --cuda-object-costs none \
    >>"$work/worker-$1.log" 2>&1 &
  worker_pids[$1]=$!
  pids+=("$!")
}
echo "== starting 4 workers, each simulating an 8-GPU node (node-4's GPUs do dynamic MIG)"
for i in 1 2 3 4; do
  mig=""
  [ "$i" = 4 ] && mig=", mig_mode: dynamic"
  cat >"$work/node-$i.yaml" <<SPEC
name: node-$i
cpus: 64
memory: 512Gi
labels: {rack: r$(((i + 1) / 2))}
gpus: {count: 8, model: A100-SXM4-80GB, memory: 80Gi, nvlink: all, numa_split: 2$mig}
SPEC
  join_tokens[$i]=$("$gpool_bin" admin join-token create --ttl 10m 2>/dev/null)
  start_worker "$i"
done

for _ in $(seq 1 100); do
  ready=$("$gpool_bin" nodes --json 2>/dev/null | grep -o '"state": *"Ready"' | wc -l || true)
  [ "$ready" -ge 4 ] && break
  sleep 0.2
done
run() { echo; echo "\$ gpool $*"; "$gpool_bin" "$@"; }
run nodes

echo; echo "== submitting sample jobs"
hello=$("$gpool_bin" submit --json client/examples/hello.yaml | sed -E 's/[^0-9]*([0-9]+).*/\1/')
echo "hello.yaml  -> job $hello"
train=$("$gpool_bin" submit --json client/examples/train.yaml | sed -E 's/[^0-9]*([0-9]+).*/\1/')
echo "train.yaml  -> job $train"
full=$("$gpool_bin" submit --json --name full-node --gpus 8 --cpus 8 --mem 64Gi -- \
  sh -c 'echo "whole node: CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES"; sleep 4' | sed -E 's/[^0-9]*([0-9]+).*/\1/')
echo "--gpus 8    -> job $full"
big=$("$gpool_bin" submit --json client/examples/too-big.yaml | sed -E 's/[^0-9]*([0-9]+).*/\1/')
echo "too-big.yaml -> job $big"

sleep 1
run jobs
run nodes

echo; echo "== waiting for the jobs to finish"
run wait "$hello" --timeout 60
run wait "$train" --timeout 60
run wait "$full" --timeout 60
run jobs --all
run job "$train"
run logs "$train.0"
run logs "$hello.1"

echo; echo "== users, roles and the audit stream (the script's key is the --admin-key)"
run whoami
"$gpool_bin" admin keygen --out "$work/keys/bob" >/dev/null
run admin user create bob --key "$work/keys/bob.pub"   # a uid of --uid-range, his alone
run admin role grant bob member --queue default
echo; echo "\$ GPOOL_KEY_FILE=$work/keys/bob.key gpool cancel $train   # bob may not cancel another's job"
if GPOOL_KEY_FILE="$work/keys/bob.key" "$gpool_bin" cancel "$train"; then
  echo "quickstart: bob cancelled another user's job" >&2
  exit 1
fi
run audit

echo; echo "== a job that cannot fit stays pending and says why"
run job "$big"
run cancel "$big"
run status

echo; echo "== queues, priority classes, preemption and reclaim"
run queue create research --deserved gpu=16 --capability gpu=32
run queue create prod --deserved gpu=16
# Elastic and low class: starts with one 8-GPU replica, grows into the idle
# GPUs (borrowing prod's share), and is the first to give them back.
filler=$("$gpool_bin" submit --json --queue research --class low --name filler --replicas 4 --min-replicas 1 \
  --gpus 8 --cpus 4 --mem 16Gi -- sleep 600 | sed -E 's/[^0-9]*([0-9]+).*/\1/')
echo "filler (research, low, 1-4 x 8 GPUs) -> job $filler"
wait_for() {  # wait_for JOB STATE-REGEX: poll gpool job until its state matches
  for _ in $(seq 1 150); do
    "$gpool_bin" job "$1" --json 2>/dev/null | grep -qE "\"state\": *\"$2\"" && return 0
    sleep 0.2
  done
  echo "job $1 did not reach $2" >&2
  return 1
}
for _ in $(seq 1 150); do
  [ "$("$gpool_bin" jobs --json | grep -c '"tasks_running": *4')" -ge 1 ] && break
  sleep 0.2
done
# high is granted per queue (issue 50): the script's admin key is not held
# to grants, but research's members would be refused high without this.
run queue grant-class research high
run queue tree
urgent=$("$gpool_bin" submit --json --queue research --class high --name urgent --gpus 8 --cpus 4 --mem 16Gi -- \
  sh -c 'echo "urgent work on $CUDA_VISIBLE_DEVICES"; sleep 2' | sed -E 's/[^0-9]*([0-9]+).*/\1/')
echo "urgent (research, high, 8 GPUs) -> job $urgent: only low work may borrow beyond research's deserved 16 GPUs,"
echo "  so it preempts filler replicas until research fits within them"
wait_for "$urgent" 'Running|Succeeded'
serving=$("$gpool_bin" submit --json --queue prod --name serving --replicas 2 --gpus 8 --cpus 4 --mem 16Gi -- \
  sleep 3 | sed -E 's/[^0-9]*([0-9]+).*/\1/')
echo "serving (prod, 2 x 8 GPUs) -> job $serving: reclaims prod's deserved GPUs from research"
run explain "$serving"
wait_for "$serving" 'Running|Succeeded'
run queue tree
run wait "$urgent" --timeout 60
run wait "$serving" --timeout 60
run job "$filler"
run cancel "$filler"

echo; echo "== sharing GPUs: notebooks on shares of one GPU, a MIG instance, and the switch tree"
run topology apply client/examples/topology.yaml
run topology show
share_job() {  # share_job NAME FLAGS...: a short job printing the limits its share got
  local name=$1; shift
  "$gpool_bin" submit --json --name "$name" "$@" -- sh -c 'echo "GPU $CUDA_VISIBLE_DEVICES: memory limit ${CUDA_DEVICE_MEMORY_LIMIT_0:-none}, compute ${CUDA_DEVICE_SM_LIMIT:-unlimited} (${GPOOL_SHARING_QOS:-MIG $GPOOL_MIG_PROFILES})"; sleep 4' |
    sed -E 's/[^0-9]*([0-9]+).*/\1/'
}
nb1=$(share_job notebook-a --gpu-memory 20Gi --gpu-compute 30 --sharing-qos fixed-share --selector rack=r1)
nb2=$(share_job notebook-b --gpu-memory 25% --gpu-compute 30 --sharing-qos fixed-share --selector rack=r1)
mig=$(share_job small-inference --mig auto --gpu-memory 9Gi)
echo "notebook-a (20 GiB, 30 %) -> job $nb1, notebook-b (25 % of 80 GiB, 30 %) -> job $nb2: one GPU shared"
echo "small-inference (--mig auto, 9 GiB) -> job $mig: the smallest MIG instance that holds it"
wait_for "$nb2" 'Running|Succeeded'
wait_for "$mig" 'Running|Succeeded'
run nodes --devices
run wait "$nb1" --timeout 60
run wait "$nb2" --timeout 60
run wait "$mig" --timeout 60
run logs "$nb1.0"
run logs "$nb2.0"
run logs "$mig.0"

echo; echo "== share limits that hold: gpool's CUDA interposer in front of the driver (a fake one here)"
# A driver-API program on a 256 MiB share: it gets exactly its share, one
# byte more is CUDA_ERROR_OUT_OF_MEMORY (2), and cuMemGetInfo says 256 MiB.
cuda=$("$gpool_bin" submit --json --name cuda-share --gpu-memory 256Mi --gpu-compute 20 -- \
  "$bin/worker/cuda/gpool-cuda-check" alloc v2 256M 0 alloc v2 1 2 meminfo 0 256M | sed -E 's/[^0-9]*([0-9]+).*/\1/')
echo "cuda-share (256 MiB, 20 %) -> job $cuda"
run wait "$cuda" --timeout 60
run logs "$cuda.0"

echo; echo "== remote GPU sessions: a GPU share on a node, used from here through the interposer in remote mode"
# One-shot: open a 256 MiB / 30 % share, run a driver-API program here whose
# calls go to the session's server on the node (contexts, copies, a kernel,
# streams, events), and past its share it is refused; then it is closed.
run session open --gpu-memory 256Mi --gpu-compute 30 --idle-timeout 1m -- \
  "$bin/worker/rgpu/gpool-rgpu-check" session oom 512 unsupported
run session list

echo; echo "== metrics, dashboard and alerts: the coordinator's HTTP port (docs/operations.md 3.7, 3.8)"
# Every replica serves /metrics, the JSON API and the dashboard; the bearer
# credential is an API token (never a secret key, which is refused over
# HTTP). HTTP is off unless --http-address is given, and plain HTTP needs
# --http-insecure on every address (issue 48): the replicas above take it
# for an ephemeral port on 127.0.0.1 (each log warns once); a real cluster
# gives --http-cert/--http-key instead (docs/operations.md 15.7).
http=$(awk '/^http /{print $2}' "$work/coordinator-1/endpoints")
echo; echo "\$ gpool token create --scope metrics --ttl 1d > $work/keys/metrics.token"
"$gpool_bin" token create --scope metrics --ttl 1d > "$work/keys/metrics.token"
read_token=$("$gpool_bin" token create --scope read --ttl 1d 2>/dev/null)
run token list
GPOOL_HTTP="$http" GPOOL_BEARER="$(cat "$work/keys/metrics.token")" python3 - <<'PY'
import os, urllib.request
request = urllib.request.Request("http://%s/metrics" % os.environ["GPOOL_HTTP"],
                                 headers={"Authorization": "Bearer " + os.environ["GPOOL_BEARER"]})
page = urllib.request.urlopen(request, timeout=10).read().decode()
wanted = ("gpool_jobs{", "gpool_gpus{", "gpool_raft_term ", "gpool_coordinator_leader ", "gpool_queue_allocated{queue=\"root\",resource=\"gpu\"}")
for line in page.splitlines():
    if line.startswith(wanted):
        print("  " + line)
print("  (%d lines, %d bytes)" % (page.count("\n"), len(page)))
PY
echo "dashboard: http://$http/  (sign in with the read token $read_token)"

echo; echo "== healing: a task outlives its worker; a lost node's job is requeued elsewhere"
survivor=$("$gpool_bin" submit --json --name survivor --gpus 8 -- sleep 600 | sed -E 's/[^0-9]*([0-9]+).*/\1/')
wait_for "$survivor" Running
# The task's fields (after "tasks": the job's summary has a session "node" too).
field() { "$gpool_bin" job "$survivor" --json | sed 's/.*"tasks"//' | grep -o "\"$1\": *[^,}]*" | head -1 | sed -E 's/.*: *"?([^"]*)"?/\1/'; }
node=$(field node) pid=$(field pid)
n=${node#node-}
echo "survivor (job $survivor) runs on $node as pid $pid; kill -9 its worker and start it again"
{ kill -KILL "${worker_pids[$n]}"; wait "${worker_pids[$n]}"; } 2>/dev/null || true
kill -0 "$pid" && echo "pid $pid still runs under its supervisor while the worker is down"
start_worker "$n"
sleep 2
echo "after the restart: pid $(field pid) (adopted, not restarted)"
echo "now kill -9 it for good: the lease (3 s) stops the task, the grace (9 s) requeues the job"
{ kill -KILL "${worker_pids[$n]}"; wait "${worker_pids[$n]}"; } 2>/dev/null || true
for _ in $(seq 1 150); do
  "$gpool_bin" job "$survivor" --json | grep -q '"attempt": *1' && [ "$(field state)" = Running ] && break
  sleep 0.2
done
kill -0 "$pid" 2>/dev/null && echo "pid $pid still alive (unexpected)" || echo "pid $pid is gone (the lease killed it)"
run job "$survivor"
run events --job "$survivor"
run cancel "$survivor"
start_worker "$n"

echo; echo "== failover: killing the leading coordinator replica"
leader=$("$gpool_bin" status | awk '/^Replica:/ {print $2; exit}')
victim=${coordinator_pids[$((leader - 1))]}
{ kill -KILL "$victim"; wait "$victim"; } 2>/dev/null || true
echo "killed replica $leader (kill -9); the other two elect a new leader"
for _ in $(seq 1 100); do
  now=$("$gpool_bin" --timeout-ms 1000 status 2>/dev/null | awk '/^Replica:/ {print $2; exit}') || true
  [ -n "$now" ] && [ "$now" != "$leader" ] && break
  sleep 0.1
done
run status
run jobs --all

echo; echo "== replacing the lost replica: remove it, start replica 4 with --join, add it"
run admin replica remove "$leader"
p=$((base + 10 * replicas))
"$coordinator_bin" --id 4 --join --peers "$peers,4=tcp://127.0.0.1:$((p + 2))" \
  --peer-clients "$peer_clients,4=tcp://127.0.0.1:$p" --peer-workers "$peer_workers,4=tcp://127.0.0.1:$((p + 1))" \
  --key-file "$work/keys/replica-4.key" --peer-keys "$peer_keys,4=$work/keys/replica-4.pub" \
  --admin-key "$work/keys/user.pub" \
  --data-dir "$work/coordinator-4" --client-addr "tcp://127.0.0.1:$p" --worker-addr "tcp://127.0.0.1:$((p + 1))" \
  --http-address 127.0.0.1:0 --http-insecure --heartbeat-ms 500 --preempt-grace-ms 3000 >"$work/coordinator-4.log" 2>&1 &
pids+=("$!")
# The leader adds only a replica whose peer port answers: wait until it listens.
for _ in $(seq 1 100); do
  (exec 3<>"/dev/tcp/127.0.0.1/$((p + 2))") 2>/dev/null && break
  sleep 0.1
done
run admin replica add 4 --peer-addr "tcp://127.0.0.1:$((p + 2))" --client-addr "tcp://127.0.0.1:$p" \
  --worker-addr "tcp://127.0.0.1:$((p + 1))" --replica-key "$work/keys/replica-4.pub"
# Replica 4 catches up from the leader (by snapshot if the log was compacted).
for _ in $(seq 1 100); do
  "$gpool_bin" admin replica list | awk '$1 == "4" && $NF == "0" {found = 1} END {exit !found}' && break
  sleep 0.1
done
run admin replica list

echo; echo "== backup and restore: the leader's state into a checked snapshot file, and a new data dir from it"
run admin snapshot save "$work/backup.gpoolsnap"
run admin snapshot restore "$work/backup.gpoolsnap" --data-dir "$work/restored" --peers "$peers"
echo "(each replica's data dir is restored from the same file; docs/operations.md 15.6)"
echo; echo "quickstart finished: every sample job ran to completion, the cluster survived losing its leader,"
echo "a high-priority job preempted a low one and a queue reclaimed its share, two notebooks shared one GPU"
echo "and a MIG instance was carved for a small job, the CUDA interposer held a share to its memory limit,"
echo "a task outlived its worker and a lost node's job ran"
echo "again elsewhere, a new replica replaced the lost one, and the state was saved and restored."
