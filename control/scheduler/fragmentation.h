// GPU fragmentation of a node for a target workload (FGD's measure, Weng et
// al., ATC'23; ../shared/data/alibaba-gpu-v2023/README.md states it).
//
// For each shape m of the workload, weighted by its frequency p_m: if m
// fits on the node, the GPU share on devices too full to take one of m's
// GPUs is stranded for it; if m cannot run there at all (CPU, GPU count,
// model, or m is CPU-only) every free GPU share of the node is. F_n is the
// weighted sum. A placement that raises F the least keeps the most room for
// the tasks that will come. Pure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "control/scheduler/share_prices.h"
#include "topology/cluster_view.h"
#include "topology/device_share.h"

namespace gpool::scheduler {

// What a node holds free, as the measure sees it.
struct NodeFree {
  uint64_t cpu_milli = 0;
  std::string_view model;  // its GPUs' model
  // Per GPU that can take work: free thousandths of the device (1000 idle).
  std::vector<uint32_t> gpu_milli;
  uint64_t memory_mib = 0;  // host memory
};

// A device's free thousandths given what its tenants hold: 1000 idle, 0
// held whole or running MIG instances, else what its shares leave (memory
// and compute, the scarcer).
uint32_t FreeMilli(const topology::GpuSlot& gpu, const topology::DeviceLoad& load, bool whole_free);
// FreeMilli of a healthy device that is not static MIG, from the view's
// figures. A device nothing shares (the norm) answers without copying its
// load: every session start reads every device of the cluster.
uint32_t ViewFreeMilli(const topology::GpuSlot& gpu);
// topology::MigOnly, answered inline for the device without any MIG mode
// (the norm): the session asks it of every device of the cluster.
inline bool MigOnlyDevice(const topology::GpuSlot& gpu) {
  return (gpu.mig_enabled || !gpu.mig_mode.empty()) && topology::MigOnly(gpu);
}
// The view's figures for a node.
NodeFree FreeOf(const topology::NodeView& node);

// F_n in thousandths of a GPU.
double NodeFragmentation(const NodeFree& node, const std::vector<topology::WorkloadShape>& workload);

// A finer measure for shares: for each shape asking a fraction of one GPU,
// the free GPU share left over once as many of its tasks as fit (by device
// room and CPU) are packed on the node. It sees the remainder FGD's measure
// counts as usable (a 300 share on a device with 800 free leaves 200 that
// no such task can take). A shape that cannot run on the node strands all
// of it; a whole-GPU shape that can is left to FGD's measure, which counts
// the same partial devices (counted twice, whole and multi-GPU shapes
// outweighed the shares).
double PackedFragmentation(const NodeFree& node, const std::vector<topology::WorkloadShape>& workload);

// How much of what CPU-only tasks will ask for must come out of the CPU
// (host memory) that feeds free GPUs, from 0 to 1. While the cluster's free
// GPU share fills, CPU-only tasks arrive beside the GPU tasks and ask for
// free GPU share x (their CPU per unit of GPU share in the workload). The
// cluster's spare CPU, what is free beyond what the GPU tasks themselves
// need, holds that without starving a GPU: then the claim is 0 and CPU-only
// tasks do not count against any node's GPUs. Whatever the spare cannot
// hold is the claim; 1 when there is no spare at all. Without it, a cluster
// short of CPU placed GPU tasks as if CPU-only tasks would never take the
// CPU beside idle GPUs (held-out cpu300: 1.9 points less; docs/simulator.md).
struct CpuOnlyClaim {
  double cpu = 0;
  double memory = 0;
};

// Free resources summed over a cluster's nodes.
struct ClusterFree {
  double cpu_milli = 0;
  double memory_mib = 0;
  double gpu_milli = 0;
};

CpuOnlyClaim CpuOnlyClaimOf(const std::vector<topology::WorkloadShape>& workload, const ClusterFree& free);

// GPU share the node's free CPU or host memory cannot feed: what is left of
// its free GPU share once the scarcer of the two is handed out at the
// workload's CPU (memory) per unit of GPU share (the GPU shapes' demand,
// weighted by frequency, plus the CPU-only shapes' share `claim` says must
// come from here). A node whose CPU or memory went to hungry tasks
// strands its GPUs for every shape at once; the per-shape measures see that
// only for a shape that stops fitting outright or that would fill the node
// alone.
double HostStrandedFragmentation(const NodeFree& node, const std::vector<topology::WorkloadShape>& workload,
                                 const CpuOnlyClaim& claim = {});

// What the node's devices strand for the shares to come (SharePrices: the
// room an optimal packing of the workload's shares would leave unused), a
// device no GPU shape can use by the node's free CPU, host memory or model
// stranding all its room.
double PricedFragmentation(const NodeFree& node, const std::vector<topology::WorkloadShape>& workload,
                           const SharePrices& prices);

// gpool's measure (the `fragmentation` strategy), in thousandths of a GPU
// stranded, in two parts that placements compare in order.
//
// `eventual` is what is wasted for good (no task gives back what it holds
// before the cluster fills). The host measure: GPU share the node's CPU or
// memory cannot feed. For what shares leave, the priced measure while the
// cluster has spare CPU, turning into the packed measure as `claim` says CPU
// (host memory) runs short. The packed measure counts a shape too large for
// a remnant as stranding all of it, so shrinking any remnant looks good to
// every large shape: it paired 650 with 230 (120 left, which only the rare
// small shares fill) where 650 with 320 leaves 30. The priced one does not;
// but the packed measure counts tasks by each shape's own CPU, which keeps
// GPUs fed once CPU-only tasks compete for the CPU beside them.
//
// `now` is FGD's measure: share on devices too full for a shape's per-GPU
// need today, though shares to come may fill them. It decides among
// placements that waste the same for good. Added to the eventual part
// instead, it outweighed it: it counts a share's fresh device as stranded
// for every whole-GPU shape, so a 320 took the room beside a 470 (wasting
// 210) rather than open a device a 650 would complete (docs/simulator.md).
struct FragmentationParts {
  double eventual = 0;
  double now = 0;
};

FragmentationParts CombinedFragmentation(const NodeFree& node, const std::vector<topology::WorkloadShape>& workload,
                                         const CpuOnlyClaim& claim, const SharePrices& prices);

// The `fgd` strategy's node score for a placement that grows F_n by
// `growth` thousandths of a GPU, as the paper's artifact scores it: a
// Kubernetes score, the integer part of 100 * sigmoid(-growth in GPUs).
// Placements within a few hundredths of a GPU of each other score the
// same, and the artifact's scheduler gives ties to the first node by name
// (and a share to the first device): that packs the nodes listed first and
// keeps the rest whole. Scored exactly instead, FGD placed about 0.6 points
// less on the trace (docs/simulator.md), so the published figures are this
// policy's.
int64_t FgdScore(double growth);

// The shapes of `samples` (their weights ignored), most frequent first, each
// weighted by its frequency.
std::vector<topology::WorkloadShape> TargetWorkload(const std::vector<topology::WorkloadShape>& samples);

// TargetWorkload as the samples come, none of them kept: a session tallies
// every running and waiting task of the cluster (at 100,000 nodes, 180,000
// of them), and a list of them cost more than the tally. Samples are
// tallied in a hash table (shapes are a few dozen), a run of one shape
// without a lookup. The models' text must outlive the tally.
class WorkloadTally {
 public:
  void Add(uint32_t gpus, uint32_t gpu_milli, uint64_t cpu_milli, std::string_view gpu_model, uint64_t memory_mib);
  // What TargetWorkload gives for the samples added.
  std::vector<topology::WorkloadShape> Shapes() const;

 private:
  // CPU, GPUs, thousandths per GPU (0 for CPU-only), model.
  using Key = std::tuple<uint64_t, uint32_t, uint32_t, std::string_view>;
  struct KeyHash {
    size_t operator()(const Key& key) const;
  };
  struct Tally {
    size_t count = 0;
    uint64_t memory = 0;  // summed, then the mean: shapes are not told apart by memory
  };
  std::unordered_map<Key, Tally, KeyHash> tallies_;
  std::pair<const Key, Tally>* last_ = nullptr;  // the last sample's entry (nodes do not move on rehash)
  size_t samples_ = 0;
};

// FGD's target workload: the shapes that cover 95 % of tasks.
inline constexpr double kFgdCoverage = 0.95;

// Scoring reads every shape for every candidate node. A cluster whose tasks
// ask for thousands of distinct CPU and memory sizes would pay for each, so
// the fragmentation strategy scores with at most this many, most frequent
// first (the trace's variants have under 100).
inline constexpr size_t kMaxScoredShapes = 256;

// The most frequent of `workload`'s shapes that together cover `coverage` of
// its weight, at most `max_shapes` of them, reweighted to sum to 1. The
// `fgd` strategy and the reported fragmentation use FGD's cut; the
// `fragmentation` strategy keeps every shape up to kMaxScoredShapes: a rare
// small share is what fills the remnants the common ones
// leave, and a measure blind to it strands them (on the trace's variants,
// all shapes placed more than FGD's 95 %; docs/simulator.md).
std::vector<topology::WorkloadShape> CommonestShapes(const std::vector<topology::WorkloadShape>& workload,
                                                     double coverage, size_t max_shapes = SIZE_MAX);

}  // namespace gpool::scheduler
