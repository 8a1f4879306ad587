// Session: the working copy of the cluster one scheduling cycle mutates.
//
// Every action reads and changes the same session, so allocate sees what
// enqueue admitted, and preempt sees what allocate placed. Nodes are indexed
// by pool and free-GPU count, so finding a node for a task looks at the few
// buckets that can hold it instead of every node: a 12,500-node cluster is
// searched in a handful of steps while it has room, and failures are cached
// per task shape so a full cluster is explained once per shape, not once per
// job.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "control/scheduler/config.h"
#include "control/scheduler/device_bits.h"
#include "control/scheduler/fragmentation.h"
#include "control/scheduler/queue_tree.h"
#include "control/scheduler/scheduler.h"
#include "control/scheduler/vendor_rules.h"
#include "topology/cluster_view.h"
#include "topology/device_share.h"
#include "topology/pending_reason.h"

namespace gpool::scheduler {

// Aligned to a cache line, with what every candidate of a search reads
// (FindNode's twins: class, free figures, odd, loads) in its first 64
// bytes: at 100,000 nodes a search's few dozen candidates are cold, and
// those fields spread over the struct cost three misses per candidate.
struct alignas(64) WorkNode {
  // Nodes of one twin class differ only in what they have free: same pool,
  // one GPU model and device size, the same usable and healthy GPU counts,
  // CPU and memory, a generic family and plain devices. A search that
  // meets two of them with the same free GPUs, CPU and memory (and neither
  // odd nor shared on this cycle) checks and scores the first alone
  // (Session::FindNode). kNoTwin: a node unlike any other in some way the
  // checks may read (mixed models or device sizes, a vendor family, shares).
  static constexpr uint32_t kNoTwin = UINT32_MAX;
  uint32_t twin_class = kNoTwin;
  uint32_t free_gpus = 0;
  uint64_t cpu_free = 0;
  uint64_t memory_free = 0;
  // Listed in Session::odd_nodes_: a check before the free-GPU one could
  // reject it for a task that no other node rejects so (an owner, taints, a
  // vendor rule, a claim or a reservation), so failed searches check it.
  bool odd = false;
  // Per GPU, what sharing tenants hold; empty until a share or MIG instance
  // is placed here this cycle (until then the view's figures hold).
  std::vector<topology::DeviceLoad> loads;
  const topology::NodeView* view = nullptr;
  // The second line holds what the check chain reads of every candidate
  // node (NodeChecks), the third what the devices' checks and the score
  // read, the fourth the rest: a node takes four cache lines, not five, and
  // a check touches two of them.
  // The view's figures the check chain reads for every candidate node,
  // copied so that a check reads the work node alone: the view's lines are
  // cold at 100,000 nodes, and each was a cache miss per node checked.
  uint64_t cpu_total = 0;
  uint64_t memory_total = 0;
  uint64_t claimed_for = 0;    // a preemptor whose victims drain here; nobody else places here
  uint64_t reserved_for = 0;   // a starving large job; others only once past the starvation bound
  // The queue owning an exclusive node (index in queues()): kNoOwner for
  // none, kUnknownOwner when it names a queue that does not exist.
  static constexpr int kNoOwner = -1;
  static constexpr int kUnknownOwner = -2;
  int owner = kNoOwner;
  uint32_t usable_gpus = 0;   // healthy GPUs that can run whole-GPU work
  uint32_t healthy_gpus = 0;  // healthy GPUs (shares and MIG instances may use static-MIG ones)
  // Healthy GPUs advertised as time-sliced replicas: in neither count
  // above, since only low-class whole-GPU tasks run on them, a replica each.
  uint32_t sliced_gpus = 0;
  // Bumped by every Place and Unplace here: fragmentation scores remembered
  // for an older version are stale (Session::BestFragmentation).
  uint32_t version = 0;
  bool ready = true;
  bool cordoned = false;
  bool tainted = false;  // view->taints is not empty
  bool owner_busy = false;  // holds work of its owning queue: not lent out
  // No device of the view is shared, MIG-partitioned or split into cores:
  // until a share lands here this cycle (loads set), what it has free for
  // fragmentation is its free and usable GPU counts, CPU and memory alone.
  bool plain_devices = true;
  bool uniform_model = true;                     // every GPU is gpu_model
  NodePool pool = NodePool::kPublic;
  DeviceFamily family = DeviceFamily::kGeneric;  // of its first GPU: which vendor rule places on it
  std::string gpu_model;       // of its first GPU; "" without GPUs
  std::optional<size_t> model_index;  // queues().ModelIndex(gpu_model), looked up once
  DeviceBits gpu_free;  // parallel to view->gpus; inline up to 64 devices (no allocation per node)
  std::span<const size_t> running;  // indices into Session::running (its part of running_by_node_)
  // Per NUMA node, what is free; empty until a NUMA-placed task lands here
  // this cycle (until then the view's figures hold).
  std::vector<topology::NumaSlot> numa;
  bool Idle() const {
    return free_gpus == usable_gpus && cpu_free == cpu_total && memory_free == memory_total;
  }
};
// Four cache lines (libstdc++'s 32-byte strings; smaller elsewhere).
static_assert(sizeof(WorkNode) <= 256, "a work node grew past four cache lines");

// A job as the cycle tracks it.
struct WorkJob {
  const topology::PendingJob* view = nullptr;
  int queue = 0;
  NodePool pool = NodePool::kPublic;
  uint8_t queue_pools = 0xFF;  // QueueNode::pools of its queue, here for the hot node checks
  // Per group: bound, running or placed this cycle. Its part of
  // Session::job_active_, one array for all jobs (a vector each was an
  // allocation per pending job).
  std::span<uint32_t> active;
  bool admitted = false;         // enqueue let it in
  bool capped = false;           // kept out only by a queue's capability (preemption may make room)
  bool done = false;             // placed, or its claim is in flight
  bool has_claim = false;        // holds claimed nodes: evicted for, not yet placed
  bool victims_draining = false; // some of its victims are still stopping
  bool blocked = false;          // its own evicted tasks are still stopping
  bool evicted = false;          // lost its tasks to an eviction this cycle
  // What is being placed for it may not borrow beyond its queue chain's
  // deserved shares (class_rules.h); set by the action placing it.
  bool within_deserved = false;
  // A low job of another queue trying idle exclusive nodes that belong to a
  // queue (their owner takes them back by reclaim); pool is then exclusive.
  bool borrowing = false;
  uint64_t min_gpus = 0;         // GPUs of its gang minimum
  // Tasks that must be placed together for the job to run (its groups'
  // minimums less what is active), then the elastic rest.
  std::vector<const topology::PendingTask*> gang;
  std::vector<const topology::PendingTask*> extra;
  Amounts gang_demand;  // what the gang holds once placed
  std::string shape;    // its gang's shape, for caching failed evictions
  std::vector<topology::PendingReason> reasons;

  uint32_t GroupMin(uint32_t group) const;
  bool MinimumMet() const;
};

struct WorkTask {
  const topology::RunningTask* view = nullptr;
  int queue = 0;
  int node = -1;
  bool evicted = false;  // chosen as a victim this cycle (or already stopping)
  // What it holds in quota terms (resource_count() long): its row of
  // Session::running_charges_, one array for all running tasks (a vector
  // each was an allocation per running task, 84,000 at 100,000 nodes).
  std::span<const uint64_t> charge;
};

// Why a node cannot take a task: the first failed check, in this order.
enum class Reject : uint8_t {
  kNotReady,
  kCordoned,
  kPool,
  kPoolOwner,
  kSelector,
  kTaint,
  kGpuModel,
  kNuma,
  kClaimed,
  kReserved,
  kExclusiveBusy,
  kExclusiveWhole,
  kGpus,
  kGpuUuid,
  kShareRoom,
  kShareQos,
  kShareMode,
  kMigFit,
  kMigUnsupported,
  kVendorRule,
  kModelCapability,
  kGpuMemoryCapability,
  kModelDeserved,
  kGpuMemoryDeserved,
  kCpu,
  kCpuKeptForGpus,
  kMemory,
  kMemoryKeptForGpus,
  kExclusiveCores,
  kCount,
};
// The stored code of a rejection (its text is rendered at the edge).
topology::PendingCode CodeOf(Reject reject);
// Per Reject, how many nodes it rejected.
using RejectCounts = std::array<uint32_t, static_cast<size_t>(Reject::kCount)>;

class Session {
 public:
  Session(const topology::ClusterView& view, const SchedulerConfig& config);
  // Work nodes and tasks view arrays of their session (running, charge).
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  const SchedulerConfig& config() const { return config_; }
  QueueTree& queues() { return queues_; }
  const QueueTree& queues() const { return queues_; }
  std::vector<WorkNode>& nodes() { return nodes_; }
  std::vector<WorkJob>& jobs() { return jobs_; }
  std::vector<WorkTask>& running() { return running_; }
  Plan& plan() { return plan_; }
  const std::string& node_model(size_t node) const { return nodes_[node].gpu_model; }

  // The check chain for one task of `job` on `node`; `ignore_reservations`
  // lets a job past the starvation bound use nodes reserved for another.
  std::optional<Reject> Check(const WorkJob& job, const topology::PendingTask& task, const WorkNode& node,
                              bool ignore_reservations) const;
  // Static checks only (no free capacity): could this node ever run the task?
  std::optional<Reject> CheckStatic(const WorkJob& job, const topology::PendingTask& task,
                                    const WorkNode& node) const;
  // A node's score for a task, the higher the better: `first`, then `then`
  // on ties (the fragmentation strategy's eventual waste, then what it
  // strands now; every other strategy scores in `then` alone).
  struct NodeScore {
    int64_t first = 0;
    int64_t then = 0;
    auto operator<=>(const NodeScore&) const = default;
  };
  NodeScore Score(const WorkJob& job, const topology::PendingTask& task, const WorkNode& node) const;
  // Score less the job's preferred-label bonus, which is node by node:
  // what twin nodes (WorkNode::twin_class) share.
  NodeScore ScoreOfShape(const WorkJob& job, const topology::PendingTask& task, const WorkNode& node) const;
  int64_t PreferBonus(const WorkJob& job, const WorkNode& node) const;
  // Devices the task may take on `node`: whole-free ones (whole requests) or
  // healthy ones (shares, MIG), of its model and allowed by its UUID lists.
  DeviceBits DeviceMask(const WorkJob& job, const topology::PendingTask& task, const WorkNode& node) const;
  // The job has a NUMA policy and the node a NUMA layout to apply it to.
  bool NumaFilters(const WorkJob& job, const WorkNode& node) const;
  // What the node's GPUs hold from sharing tenants right now.
  const std::vector<topology::DeviceLoad>& Loads(const WorkNode& node) const;

  // The best node for the task, or nullopt with the task's reasons appended
  // to `reasons` (counted while searching; no second pass over the nodes). With `allowed` (parallel to nodes()), only those nodes are
  // looked at, and a failure adds no reasons (the caller knows why it
  // narrowed the search and says so).
  std::optional<size_t> FindNode(const WorkJob& job, const topology::PendingTask& task, bool ignore_reservations,
                                 std::vector<topology::PendingReason>& reasons,
                                 const std::vector<bool>* allowed = nullptr);
  // Binds what was placed tentatively (adds it to the plan's binds).
  void Commit(Placement placement);
  // Places the task (node, GPUs, quota) and returns the placement.
  Placement Place(WorkJob& job, const topology::PendingTask& task, size_t node);
  void Unplace(WorkJob& job, const topology::PendingTask& task, size_t node, const Placement& placement);
  // Holds `node` for a starving large job.
  void Reserve(size_t node, const WorkJob& job);
  bool HoldsReservation(const WorkJob& job) const { return reservation_holders_.count(job.view->id.value()) > 0; }
  // Frees a running task's resources in the working copy and records the eviction.
  void Evict(size_t running_index, const WorkJob& for_job, const std::string& reason);
  // What the running tasks not evicted hold per queue and user (GPU, CPU,
  // memory), keyed by the view's names. Every JobOrder starts from it: summed
  // over all running tasks once per cycle, not once per action, and kept
  // current by Evict.
  using UserUsage = std::map<std::pair<int, std::string_view>, Amounts>;
  const UserUsage& RunningUserUsage();
  // Indices into jobs(), stably sorted by priority (highest first), then
  // arrival: the order JobOrder offers a user's jobs in. Sorted on first use.
  const std::vector<size_t>& JobsByPriorityAndArrival();

  // Tries to place the tasks in `tasks` all together; on failure nothing stays placed.
  bool PlaceAll(WorkJob& job, const std::vector<const topology::PendingTask*>& tasks, bool ignore_reservations);

  // Time-slicing (time_slices.cc): whether the task may take time-sliced
  // replicas (a low-class job's whole-GPU task, in a cluster that has some),
  // and the GPUs (slots into node.view->gpus, one replica each, the busiest
  // first so idle devices stay whole) it would take on `node`; empty when
  // the node has too few GPUs with a free replica for it.
  bool MayTimeSlice(const WorkJob& job, const topology::PendingTask& task) const;
  std::vector<size_t> PickTimeSlices(const WorkJob& job, const topology::PendingTask& task,
                                     const WorkNode& node) const;
  // Nodes whose replicas the task would take score above all others, the
  // busier replicas first (packing), so low work fills replicas before it
  // takes whole GPUs from guaranteed work.
  NodeScore TimeSliceScore(const WorkNode& node, const std::vector<size_t>& slices) const;

  // Past the starvation bound a job may use nodes reserved for a large one.
  bool MayIgnoreReservations(const WorkJob& job) const {
    return job.view->waiting_ms >= config_.reservation.small_job_bound_ms;
  }
  // Backfill that knows time (Slurm's): `job` may run on nodes held for
  // `holder` when its max_runtime ends before they are expected to be free
  // for it, which is when the last task running on them reaches its own
  // max_runtime. A task there without one makes that time unknown, which no
  // declared runtime can delay (Slurm's reading); a job without one never
  // backfills.
  bool EndsBeforeReservation(const WorkJob& job, uint64_t holder) const {
    if (job.view->max_runtime_ms <= 0) return false;
    auto it = reservation_start_ms_.find(holder);
    return it != reservation_start_ms_.end() && job.view->max_runtime_ms <= it->second;
  }
  // A generation ends whenever capacity grows back (a rolled-back gang).
  void NewGeneration() { ++generation_; }
  // An unknown pool name (validation refuses them) counts as public.
  static NodePool PoolOf(const std::string& pool) { return NodePoolFromString(pool).value_or(NodePool::kPublic); }
  // Ready, uncordoned nodes of `pool` with exactly `free_gpus` free GPUs.
  const std::vector<uint32_t>& NodesWithFreeGpus(NodePool pool, uint32_t free_gpus) const {
    return buckets_[static_cast<size_t>(pool)][free_gpus];
  }
  uint32_t largest_gpus() const { return largest_gpus_; }
  // Some exclusive node belongs to a queue: idle ones may be lent to low work.
  bool lendable_exclusive() const { return lendable_exclusive_; }

 private:
  friend struct NodeChecks;  // the check chain (session_checks.cc)
  // `common_memory`: the device memory most of the cluster's GPUs have;
  // `first_device_memory`: per node, its first GPU's (0 without GPUs), read
  // while the view's node was at hand instead of once per running task.
  std::vector<topology::WorkloadShape> ObservedWorkload(const topology::ClusterView& view, uint64_t common_memory,
                                                        const std::vector<uint64_t>& first_device_memory) const;
  // node_score.cc: the strategies' scores and what they need.
  // How much the node's fragmentation grows if the task goes there (in
  // millionths of a GPU: the eventual part, then the part stranded now;
  // FGD's measure is all now), and for a one-GPU share the device that
  // grows it least.
  struct FragChoice {
    int64_t eventual_delta = 0;
    int64_t delta = 0;
    std::optional<size_t> slot;
  };
  bool FragmentationAware() const;
  FragChoice BestFragmentation(const WorkJob& job, const topology::PendingTask& task, const WorkNode& node) const;
  // The node's measure as it stands (what a placement's growth is taken from).
  FragmentationParts Measure(const NodeFree& free, const std::string& model) const;
  FragChoice ComputeFragmentation(const WorkJob& job, const topology::PendingTask& task, const WorkNode& node,
                                  const FragmentationParts& before) const;
  // What BestFragmentation reads of a task and its job, as a small id: tasks
  // of one shape share it, so a node scored for one is scored for all.
  uint32_t FragTaskId(const WorkJob& job, const topology::PendingTask& task) const;
  // DeviceMask, narrowed for fragmentation-aware strategies to the device a share should take.
  DeviceBits ShareMask(const WorkJob& job, const topology::PendingTask& task, const WorkNode& node) const;
  int64_t DotProductScore(const topology::PendingTask& task, const WorkNode& node) const;
  int64_t GpuPackingScore(const WorkJob& job, const topology::PendingTask& task, const WorkNode& node) const;
  int64_t GpuClusteringScore(const topology::PendingTask& task, const WorkNode& node) const;
  int64_t BestFitScore(const topology::PendingTask& task, const WorkNode& node) const;
  // A share's size on `gpu` in thousandths of the device (1000 for whole GPUs).
  uint32_t ShareMilli(const Resources& need, const topology::GpuSlot& gpu) const;
  // What the node has free for fragmentation; `slots` gets the position in
  // view->gpus of each GPU listed.
  NodeFree FreeOf(const WorkNode& node, std::vector<size_t>* slots) const;

  std::optional<Reject> CheckDevices(const WorkJob& job, const topology::PendingTask& task, const WorkNode& node,
                                     uint64_t* gpu_memory) const;
  void MarkDevices(WorkNode& node, const Placement& placement, bool add);
  // The NUMA node a task's CPU and memory go on under its job's NUMA policy:
  // -1 for none (no policy, no NUMA layout, or best-effort that does not
  // fit one), nullopt when single-numa-node cannot be met. `gpu_slots` are
  // the devices it would get (their NUMA node decides; CPU-only tasks take
  // the fullest NUMA node that holds them).
  std::optional<int32_t> ChooseNuma(const WorkJob& job, const topology::PendingTask& task, const WorkNode& node,
                                    const std::vector<size_t>& gpu_slots) const;
  // The devices Place would give the task on `node` (slots into its gpus).
  std::vector<size_t> PlannedDevices(const WorkJob& job, const topology::PendingTask& task,
                                     const WorkNode& node) const;
  // The vendor rule's choice for the task on `node` (nodes of a family other than generic).
  std::optional<VendorPick> PickByVendorRule(const WorkJob& job, const topology::PendingTask& task,
                                             const WorkNode& node) const;
  void BucketRemove(size_t node);
  void BucketInsert(size_t node);
  // Lists the node in odd_nodes_ (once): it may fail an early check.
  void MarkOdd(size_t node);
  // For a task whose search failed, whether every node of the pool with
  // fewer free GPUs than it needs fails with kGpus unless listed in
  // odd_nodes_ or remembered short for the shape (then they are counted in
  // bulk instead of checked one by one).
  bool FewerGpusFailOnGpus(const WorkJob& job, const topology::PendingTask& task) const;
  // The task's shape as FindNode caches searches under it, written into `key`.
  void ShapeKey(const WorkJob& job, const topology::PendingTask& task, bool ignore_reservations, std::string& key) const;
  // Why the task found no node: what no node is large enough for, then the
  // nodes counted under each rejection.
  std::vector<topology::PendingReason> Explain(const topology::PendingTask& task, const RejectCounts& counts) const;

  SchedulerConfig config_;
  QueueTree queues_;
  std::vector<WorkNode> nodes_;
  std::vector<WorkJob> jobs_;
  // WorkJob::active of every job, side by side; sized once, never resized
  // after (the jobs view their parts).
  std::vector<uint32_t> job_active_;
  std::vector<WorkTask> running_;
  // WorkTask::charge of every running task, a row each; sized once, never
  // resized after (the rows are viewed).
  std::vector<uint64_t> running_charges_;
  // Indices into running_ by node, each node's tasks in the view's order:
  // WorkNode::running views its part. Built once, never resized after.
  std::vector<size_t> running_by_node_;
  Plan plan_;
  // buckets_[pool][free_gpus] -> node indices; position_[node] its slot.
  std::vector<std::vector<std::vector<uint32_t>>> buckets_;
  std::vector<uint32_t> position_;
  uint32_t largest_gpus_ = 0;
  uint64_t largest_cpu_ = 0;
  uint64_t largest_memory_ = 0;
  // Nodes no search visits (not in buckets_), counted once: a failed search
  // counts them under the checks they fail first.
  uint32_t not_ready_nodes_ = 0;
  uint32_t cordoned_nodes_ = 0;
  uint32_t schedulable_nodes_ = 0;
  std::array<uint32_t, kNodePoolCount> schedulable_in_pool_{};
  // Failed task shapes of this generation; capacity only shrinks between
  // generations, so a shape that found no node will find none again.
  uint64_t generation_ = 0;
  std::unordered_map<std::string, std::pair<uint64_t, std::vector<topology::PendingReason>>> failed_shapes_;
  std::set<uint64_t> reservation_holders_;
  // Per holder: in how long its held nodes are expected free (max int64: unknown).
  std::map<uint64_t, int64_t> reservation_start_ms_;
  // Per task shape and generation: nodes whose free CPU or memory was too
  // small for it. Free capacity only shrinks within a generation, so they
  // stay too small and later searches for the shape skip them. Per node:
  // 0, or 1 + the Reject it failed with.
  // `listed` holds the nodes whose entry is set, so a failed search can
  // count them without walking all the entries; `reject` is sized to the
  // nodes only once one is set (most shapes never find a node short, and at
  // 100,000 nodes an array per shape was a node-sized allocation each).
  struct ShortNodes {
    uint64_t generation = 0;
    std::vector<uint8_t> reject;
    std::vector<uint32_t> listed;
  };
  std::unordered_map<std::string, ShortNodes> short_nodes_;
  // Nodes with WorkNode::odd set, in the order they became odd.
  std::vector<uint32_t> odd_nodes_;
  // The smallest CPU and memory of any node: a task within both fails no
  // node's CpuEver or MemoryEver check.
  uint64_t smallest_cpu_ = UINT64_MAX;
  uint64_t smallest_memory_ = UINT64_MAX;
  uint32_t smallest_healthy_gpus_ = UINT32_MAX;
  // The model of every GPU of every node, when there is one such.
  std::optional<std::string> every_node_model_;
  std::string shape_key_;  // FindNode's ShapeKey, kept so its capacity is reused
  // What Place charges and Unplace refunds, zeroed for each: a vector per
  // placement was an allocation per bind (80,000 a cycle at 100,000 nodes).
  Amounts demand_scratch_;
  Amounts& DemandScratch() {
    demand_scratch_.assign(queues_.resource_count(), 0);
    return demand_scratch_;
  }
  std::optional<UserUsage> user_usage_;  // RunningUserUsage, once asked for
  std::vector<size_t> jobs_by_priority_;  // JobsByPriorityAndArrival, once asked for
  mutable std::vector<topology::DeviceLoad> scratch_loads_;  // Loads() of a node nothing was shared on yet
  bool uuid_lists_ = false;  // some job restricts devices by UUID
  bool time_slices_ = false;  // some node advertises time-sliced GPUs
  bool lendable_exclusive_ = false;
  // The target workload of fragmentation-aware strategies.
  std::vector<topology::WorkloadShape> workload_;
  // workload_ as a node of one GPU model sees it: the shapes that may run
  // there, and one CPU-only shape carrying the weight of all that may not
  // (both strand every free GPU share), so the measures skip model checks.
  const std::vector<topology::WorkloadShape>& WorkloadFor(const std::string& model) const;
  mutable std::unordered_map<std::string, std::vector<topology::WorkloadShape>> workload_by_model_;
  // The share prices of WorkloadFor(model)'s shapes (solved once per mix), on first use.
  const SharePrices& SharePricesOf(const std::string& model) const;
  mutable std::unordered_map<std::string, std::shared_ptr<const SharePrices>> share_prices_by_model_;
  // The part of CPU-only tasks' CPU and memory the fragmentation measure
  // charges to nodes with free GPUs (fragmentation.h), set once per session.
  CpuOnlyClaim cpu_only_claim_;
  // Per node, its measure and the growth it would take from the last few
  // task shapes scored on it, at the version they were computed for. A
  // search scores the fullest nodes first, so successive tasks of a shape
  // see mostly the same candidates and only the node the last one took has
  // changed: the measure runs for that node alone, and a fragmentation-aware
  // default costs about what binpack does (docs/simulator.md).
  struct FragMemo {
    static constexpr size_t kShapes = 8;  // distinct task shapes a node remembers, oldest replaced
    uint32_t before_version = UINT32_MAX;
    FragmentationParts before;
    std::array<uint32_t, kShapes> version;
    std::array<uint32_t, kShapes> task = {};
    std::array<FragChoice, kShapes> choice;
    uint8_t next = 0;
    FragMemo() { version.fill(UINT32_MAX); }
  };
  // Only the nodes a search scored have one (a dense array was a few hundred
  // bytes per node written at the first score, 35 MB at 100,000 nodes):
  // frag_memo_at_[node] is 1 + its index in frag_memos_ (0: none yet).
  // frag_memos_ grows only when BestFragmentation first sees a node, before
  // it takes its reference; what it calls asks about that node alone.
  mutable std::vector<uint32_t> frag_memo_at_;
  mutable std::vector<FragMemo> frag_memos_;
  // Growth per free shape and task shape, for plain nodes (WorkNode::
  // plain_devices, no NUMA or UUID filter): two nodes of one model with the
  // same free GPUs, CPU and memory grow alike for a task, whichever devices
  // are free, so a node first scored (or changed by a placement) takes the
  // growth its twin was scored with. At 100,000 nodes most misses of the
  // memo above were such twins, each a full measure.
  struct FragShapeKey {
    const void* workload;  // WorkloadFor(model): one per model
    uint64_t cpu_free;
    uint64_t memory_free;
    uint32_t usable_gpus;
    uint32_t free_gpus;
    uint32_t task;  // FragTaskId
    bool operator==(const FragShapeKey&) const = default;
  };
  struct FragShapeKeyHash {
    size_t operator()(const FragShapeKey& key) const;
  };
  mutable std::unordered_map<FragShapeKey, FragChoice, FragShapeKeyHash> frag_by_shape_;
  // Whether BestFragmentation may answer for `node` from frag_by_shape_.
  bool FragByShape(const WorkJob& job, const topology::PendingTask& task, const WorkNode& node) const;
  struct FragTaskKey {
    const Resources* need;
    const topology::PendingJob* job;
    bool operator==(const FragTaskKey& other) const;
  };
  struct FragTaskKeyHash {
    size_t operator()(const FragTaskKey& key) const;
  };
  mutable std::unordered_map<FragTaskKey, uint32_t, FragTaskKeyHash> frag_task_ids_;
  // A task's pointer identifies its job's view too (it lives in view->tasks).
  mutable const topology::PendingTask* frag_last_task_ = nullptr;
  mutable uint32_t frag_last_id_ = 0;
};

}  // namespace gpool::scheduler
