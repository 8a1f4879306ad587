#!/usr/bin/env bash
# Builds in Release and runs every benchmark, writing one JSON-lines file per
# benchmark and a markdown summary under bench-results/. Each line is
# {"metric", "value", "unit", "params"}; baselines (view copy, raw ZeroMQ
# round trip, raw fsync, topology-blind placement, the 3-member etcd anchor
# where it is installed, the FGD paper's published figures) are measured or
# printed in the same run.
#
#   GPOOL_BENCH_QUICK=1   smaller runs (CI-sized): fewer seeds, one trace variant
set -euo pipefail
cd "$(dirname "$0")/.."
./deploy/install-deps.sh
cmake -S . -B build-release -DCMAKE_BUILD_TYPE=Release -DGPOOL_BUILD_TESTS=OFF >/dev/null
cmake --build build-release -j "$(nproc)" --target gpool-bench-scheduler gpool-bench-share-prices gpool-bench-topology gpool-bench-submit \
  gpool-bench-raft gpool-bench-failover gpool-bench-memory gpool-bench-retention gpool-bench-e2e gpool-sim \
  gpool-bench-snapshot-loop gpool-bench-snapshot-cluster gpool-bench-scale gpool-bench-task-logs
mkdir -p bench-results
rm -f bench-results/*.json
bin=./build-release/bench
quick="${GPOOL_BENCH_QUICK:-0}"

# Scheduler decisions/s at 1,250 and 12,500 nodes (100,000 pending tasks).
for nodes in 1250 12500; do "$bin/gpool-bench-scheduler" --nodes "$nodes"; done | tee bench-results/scheduler.json
# The fragmentation strategy's share-packing LP, cold against remembered.
"$bin/gpool-bench-share-prices" | tee bench-results/share_prices.json
"$bin/gpool-bench-topology" | tee bench-results/topology.json
"$bin/gpool-bench-submit" | tee bench-results/submit.json
# Raft commits/s and latency, failover time.
"$bin/gpool-bench-raft" | tee bench-results/raft.json
"$bin/gpool-bench-failover" | tee bench-results/failover.json
# End to end: 3 coordinators + a 1,000-node simulated worker fleet.
"$bin/gpool-bench-e2e" 1000 5 300 | tee bench-results/e2e.json
# Coordinator memory at 100,000 GPUs and 100,000 live tasks.
"$bin/gpool-bench-memory" | tee bench-results/memory.json
# State memory and restart time after a month of 1,000,000 finished jobs (retention defaults; baseline without).
"$bin/gpool-bench-retention" | tee bench-results/retention.json
# A worker's log retention over 100,000 ended tasks' logs (baseline: list and unlink).
"$bin/gpool-bench-task-logs" | tee bench-results/task_logs.json
# The loop's stall while snapshots of 200,000 retained jobs are taken: encoded on the loop, then by a forked child (issue 49).
"$bin/gpool-bench-snapshot-loop" | tee bench-results/snapshot_loop.json
"$bin/gpool-bench-snapshot-cluster" | tee bench-results/snapshot_cluster.json
# Issue 49 at scale: 100,000 GPUs, 100,000 live tasks, 1M retained jobs, 90 days of usage; exports every 5 s for 10 minutes.
if [ "$quick" = 1 ]; then
  "$bin/gpool-bench-scale" --gpus 1000 --tasks 1000 --jobs 10000 --usage-days 90 --usage-gpus 1000 --minutes 1 --idle-seconds 20
else
  "$bin/gpool-bench-scale"
fi | tee bench-results/scale.json

# Placement quality on the Alibaba GPU-sharing trace (the FGD paper's experiment).
trace=../shared/data/alibaba-gpu-v2023
if [ -d "$trace" ]; then
  seeds=10 variants="default gpushare80 multigpu40"
  if [ "$quick" = 1 ]; then seeds=2 variants="default"; fi
  for variant in $variants; do
    for policy in best-fit fgd fragmentation; do
      ./build-release/control/gpool-sim --nodes "$trace/openb_node_list_gpu_node.csv" \
        --pods "$trace/openb_pod_list_$variant.csv" --policy "$policy" --seeds "$seeds" --bench-json
    done
  done | tee bench-results/placement_quality.json
fi

{
  echo "| metric | value | unit | params |"
  echo "|---|---|---|---|"
  cat bench-results/*.json | grep '^{"metric"' |
    sed -E 's/^\{"metric": "([^"]*)", "value": ([^,]*), "unit": "([^"]*)", "params": (.*)\}$/| \1 | \2 | \3 | `\4` |/'
} > bench-results/summary.md
cat bench-results/summary.md
