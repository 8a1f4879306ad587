#!/usr/bin/env bash
# Builds gpool, starts a local cluster on 127.0.0.1 (one coordinator, four
# workers each simulating an 8-GPU node), submits sample jobs, shows them
# running and finishing, then stops everything it started.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

./deploy/install-deps.sh

echo "== building"
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j "$(nproc)" --target gpool-coordinator gpool-worker gpool

bin="$root/build"
coordinator_bin="$bin/control/gpool-coordinator"
worker_bin="$bin/worker/gpool-worker"
gpool_bin="$bin/client/gpool"

work=$(mktemp -d "${TMPDIR:-/tmp}/gpool-quickstart.XXXXXX")
pids=()
cleanup() {
  echo "== stopping the cluster"
  # Workers first, so they stop their tasks; then the coordinator.
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do kill -TERM "${pids[$i]}" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  echo "logs and state were in $work (removed)"
  rm -rf "$work"
}
trap cleanup EXIT

echo "== starting the coordinator (data and logs under $work)"
"$coordinator_bin" --data-dir "$work/coordinator" --client-addr tcp://127.0.0.1:0 --worker-addr tcp://127.0.0.1:0 \
  --heartbeat-ms 500 --preempt-grace-ms 3000 >"$work/coordinator.log" 2>&1 &
pids=("$!")
for _ in $(seq 1 100); do
  [ -s "$work/coordinator/endpoints" ] && break
  sleep 0.1
done
client_ep=$(awk '$1 == "client" {print $2}' "$work/coordinator/endpoints")
worker_ep=$(awk '$1 == "worker" {print $2}' "$work/coordinator/endpoints")
echo "coordinator: clients on $client_ep, workers on $worker_ep"
export GPOOL_COORDINATOR="$client_ep"

echo "== starting 4 workers, each simulating an 8-GPU node"
for i in 1 2 3 4; do
  cat >"$work/node-$i.yaml" <<SPEC
name: node-$i
cpus: 64
memory: 512Gi
labels: {rack: r$(((i + 1) / 2))}
gpus: {count: 8, model: A100-SXM4-80GB, memory: 80Gi, nvlink: all, numa_split: 2}
SPEC
  "$worker_bin" --coordinator "$worker_ep" --spec "$work/node-$i.yaml" --data-dir "$work/worker-$i" \
    >"$work/worker-$i.log" 2>&1 &
  pids+=("$!")
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

echo; echo "== a job that cannot fit stays pending and says why"
run job "$big"
run cancel "$big"
run status
echo; echo "quickstart finished: every sample job ran to completion."
