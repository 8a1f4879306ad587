// Node scoring: which feasible node a task goes to (Session::Score).
//
// binpack and spread weigh GPU, CPU and memory use. fragmentation keeps
// room for the workload the cluster runs: it picks the node whose GPU
// fragmentation (fragmentation.h) grows the least, the part wasted for good
// first, then the part stranded now, then the fullest. The
// others are the ATC'23 FGD paper's policies, kept so gpool-sim can compare
// against them on the same code path; their definitions follow the paper's
// descriptions, scaled to integers.
#include <algorithm>
#include <cmath>

#include "control/scheduler/fragmentation.h"
#include "control/scheduler/session.h"
#include "topology/device_share.h"

namespace gpool::scheduler {

using topology::PendingTask;

namespace {

constexpr uint32_t kWholeMilli = 1000;

uint64_t Permille(uint64_t used, uint64_t total) { return total == 0 ? 1000 : used * 1000 / total; }

uint64_t SplitMix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

constexpr int64_t kTieRange = int64_t{1} << 24;

// A pseudo-random number per job, task and node: the scheduler stays a
// pure function, and a job's draws differ from the next job's.
uint64_t RandomDraw(const WorkJob& job, const PendingTask& task, const WorkNode& node) {
  return SplitMix(job.view->id.value() * 0x100000001B3ull ^ SplitMix(task.index) ^
                  SplitMix(std::hash<std::string>{}(node.view->name)));
}

double FreeTotal(const NodeFree& free) {
  double total = 0;
  for (uint32_t milli : free.gpu_milli) total += milli;
  return total;
}

}  // namespace

uint32_t Session::ShareMilli(const Resources& need, const topology::GpuSlot& gpu) const {
  if (need.Whole()) return kWholeMilli;
  uint64_t milli = uint64_t{need.gpu_compute_pct} * 10;
  if (gpu.memory_mib > 0) {
    const uint64_t memory = topology::ResolveShareMemory(need, gpu.memory_mib);
    milli = std::max(milli, (memory * kWholeMilli + gpu.memory_mib - 1) / gpu.memory_mib);
  }
  return static_cast<uint32_t>(std::min<uint64_t>(std::max<uint64_t>(milli, 1), kWholeMilli));
}

NodeFree Session::FreeOf(const WorkNode& node, std::vector<size_t>* slots) const {
  NodeFree free;
  free.cpu_milli = node.cpu_free;
  free.memory_mib = node.memory_free;
  free.model = node.gpu_model;
  const auto& gpus = node.view->gpus;
  // One allocation each, not one per doubling: this runs for every node scored.
  free.gpu_milli.reserve(gpus.size());
  if (slots != nullptr) slots->reserve(slots->size() + gpus.size());
  for (size_t g = 0; g < gpus.size(); ++g) {
    const auto& gpu = gpus[g];
    if (!gpu.healthy || MigOnlyDevice(gpu)) continue;
    uint32_t milli = 1000;
    // Loads() would copy every device's load of a node nothing was shared
    // on yet: a device not whole-free has its own read, and an allocated one
    // none (it has nothing free, whatever its load).
    if (!node.gpu_free[g]) {
      if (gpu.allocated) {
        milli = 0;
      } else if (node.loads.empty()) {
        milli = FreeMilli(gpu, topology::DeviceLoad::Of(gpu), false);
      } else {
        milli = FreeMilli(gpu, node.loads[g], false);
      }
    }
    if (slots != nullptr) slots->push_back(g);
    free.gpu_milli.push_back(milli);
  }
  return free;
}

const std::vector<topology::WorkloadShape>& Session::WorkloadFor(const std::string& model) const {
  auto [at, added] = workload_by_model_.try_emplace(model);
  if (!added) return at->second;
  // Shapes that never run here count as one that fits nowhere; CPU-only
  // ones as one too, but with their mean CPU and memory, which the host
  // measure may charge to this node's GPUs.
  topology::WorkloadShape never;
  topology::WorkloadShape cpu_only;
  double cpu_only_cpu = 0;
  double cpu_only_memory = 0;
  for (const auto& shape : workload_) {
    if (shape.gpus > 0 && GpuModelAllowed(shape.gpu_model, model)) {
      at->second.push_back(shape);
      at->second.back().gpu_model.clear();
    } else if (shape.gpus == 0) {
      cpu_only.weight += shape.weight;
      cpu_only_cpu += shape.weight * static_cast<double>(shape.cpu_milli);
      cpu_only_memory += shape.weight * static_cast<double>(shape.memory_mib);
    } else {
      never.weight += shape.weight;
    }
  }
  if (cpu_only.weight > 0) {
    cpu_only.cpu_milli = static_cast<uint64_t>(cpu_only_cpu / cpu_only.weight + 0.5);
    cpu_only.memory_mib = static_cast<uint64_t>(cpu_only_memory / cpu_only.weight + 0.5);
    at->second.push_back(cpu_only);
  }
  if (never.weight > 0) at->second.push_back(never);
  return at->second;
}

const SharePrices& Session::SharePricesOf(const std::string& model) const {
  auto it = share_prices_by_model_.find(model);
  if (it == share_prices_by_model_.end()) it = share_prices_by_model_.emplace(model, SharePricesFor(WorkloadFor(model))).first;
  return *it->second;
}

bool Session::FragmentationAware() const {
  const auto strategy = config_.node_order.strategy;
  return strategy == Strategy::kFragmentation || strategy == Strategy::kFgd;
}

bool Session::FragTaskKey::operator==(const FragTaskKey& other) const {
  const Resources& a = *need;
  const Resources& b = *other.need;
  return a.gpus == b.gpus && a.cpu_milli == b.cpu_milli && a.memory_mib == b.memory_mib &&
         a.gpu_memory_mib == b.gpu_memory_mib && a.gpu_memory_pct == b.gpu_memory_pct &&
         a.gpu_compute_pct == b.gpu_compute_pct && a.cores == b.cores && a.gpu_model == b.gpu_model &&
         a.sharing_qos == b.sharing_qos && a.mig_profile == b.mig_profile && job->numa_policy == other.job->numa_policy &&
         job->gpu_uuid_allow == other.job->gpu_uuid_allow && job->gpu_uuid_deny == other.job->gpu_uuid_deny;
}

size_t Session::FragTaskKeyHash::operator()(const FragTaskKey& key) const {
  // The numbers only: tasks differing in strings alone are rare and still compare unequal.
  const Resources& need = *key.need;
  uint64_t h = need.gpus;
  for (uint64_t field : {need.cpu_milli, need.memory_mib, need.gpu_memory_mib, uint64_t{need.gpu_memory_pct},
                         uint64_t{need.gpu_compute_pct}, uint64_t{need.cores}}) {
    h = SplitMix(h ^ field);
  }
  return static_cast<size_t>(h);
}

uint32_t Session::FragTaskId(const WorkJob& job, const PendingTask& task) const {
  if (&task == frag_last_task_) return frag_last_id_;
  // Everything BestFragmentation reads of the task and its job: the
  // resources, and the job's device filters (NUMA policy, UUID lists). The
  // key points into the view, which outlives the session.
  const FragTaskKey key{&task.resources, job.view};
  const auto [at, added] = frag_task_ids_.try_emplace(key, static_cast<uint32_t>(frag_task_ids_.size()));
  frag_last_task_ = &task;
  frag_last_id_ = at->second;
  return frag_last_id_;
}

size_t Session::FragShapeKeyHash::operator()(const FragShapeKey& key) const {
  uint64_t h = SplitMix(reinterpret_cast<uintptr_t>(key.workload));
  for (uint64_t field : {key.cpu_free, key.memory_free, uint64_t{key.usable_gpus} << 32 | key.free_gpus,
                         uint64_t{key.task}}) {
    h = SplitMix(h ^ field);
  }
  return static_cast<size_t>(h);
}

bool Session::FragByShape(const WorkJob& job, const PendingTask& task, const WorkNode& node) const {
  // What ComputeFragmentation reads beyond the key is which devices are
  // free and what they hold: it cannot matter when every listed device is
  // 1000 or 0 free (plain, no share placed), one model (the task's filter
  // takes all or none), and the task takes whole GPUs or none, picked with
  // no NUMA policy or UUID list (a vendor rule, or devices split over NUMA
  // nodes, could leave it fewer).
  const Resources& need = task.resources;
  const topology::PendingJob& spec = *job.view;
  return node.plain_devices && node.loads.empty() && node.uniform_model && node.family == DeviceFamily::kGeneric &&
         need.Whole() && spec.numa_policy == topology::NumaPolicy::kNone && spec.gpu_uuid_allow.empty() &&
         spec.gpu_uuid_deny.empty();
}

Session::FragChoice Session::BestFragmentation(const WorkJob& job, const PendingTask& task, const WorkNode& node) const {
  // The growth depends only on the node's state (its version) and the task's
  // shape, so it is computed once per pair; the node's own measure once per version.
  if (frag_memo_at_.size() != nodes_.size()) frag_memo_at_.assign(nodes_.size(), 0);
  uint32_t& at = frag_memo_at_[static_cast<size_t>(&node - nodes_.data())];
  if (at == 0) {
    frag_memos_.emplace_back();
    at = static_cast<uint32_t>(frag_memos_.size());
  }
  FragMemo& memo = frag_memos_[at - 1];
  const uint32_t id = FragTaskId(job, task);
  for (size_t i = 0; i < FragMemo::kShapes; ++i) {
    if (memo.version[i] == node.version && memo.task[i] == id) return memo.choice[i];
  }
  auto compute = [&] {
    if (memo.before_version != node.version) {
      memo.before = Measure(FreeOf(node, nullptr), node.gpu_model);
      memo.before_version = node.version;
    }
    return ComputeFragmentation(job, task, node, memo.before);
  };
  FragChoice choice;
  if (FragByShape(job, task, node)) {
    const FragShapeKey key{&WorkloadFor(node.gpu_model), node.cpu_free, node.memory_free, node.usable_gpus,
                           node.free_gpus, id};
    auto known = frag_by_shape_.find(key);
    if (known == frag_by_shape_.end()) known = frag_by_shape_.emplace(key, compute()).first;
    choice = known->second;
  } else {
    choice = compute();
  }
  memo.version[memo.next] = node.version;
  memo.task[memo.next] = id;
  memo.choice[memo.next] = choice;
  memo.next = static_cast<uint8_t>((memo.next + 1) % FragMemo::kShapes);
  return choice;
}

FragmentationParts Session::Measure(const NodeFree& free, const std::string& model) const {
  const auto& workload = WorkloadFor(model);
  if (config_.node_order.strategy == Strategy::kFgd) return FragmentationParts{0, NodeFragmentation(free, workload)};
  return CombinedFragmentation(free, workload, cpu_only_claim_, SharePricesOf(model));
}

Session::FragChoice Session::ComputeFragmentation(const WorkJob& job, const PendingTask& task, const WorkNode& node,
                                                  const FragmentationParts& before) const {
  std::vector<size_t> slots;
  NodeFree free = FreeOf(node, &slots);
  const bool fgd = config_.node_order.strategy == Strategy::kFgd;
  auto measure = [&](const NodeFree& node_free) { return Measure(node_free, node.gpu_model); };
  const Resources& need = task.resources;
  free.cpu_milli -= std::min(free.cpu_milli, need.cpu_milli);
  free.memory_mib -= std::min(free.memory_mib, need.memory_mib);
  FragChoice choice;
  // Micro-GPUs: fine enough that distinct fragmentations never tie, coarse
  // enough that eventual parts equal but for rounding do.
  auto growth = [&](const FragmentationParts& after) {
    return FragChoice{std::llround((after.eventual - before.eventual) * 1000.0),
                      std::llround((after.now - before.now) * 1000.0), std::nullopt};
  };
  if (need.Shared() && need.gpus == 1 && node.family == DeviceFamily::kGeneric) {
    // A share may go on any device with room: take the one that strands the least.
    const DeviceBits mask = DeviceMask(job, task, node);
    const auto& loads = Loads(node);
    const std::string qos = topology::EffectiveQos(need);
    // fgd compares devices by the artifact's integer score, first device on ties.
    auto rank = [&](const FragChoice& grown) {
      return std::pair{grown.eventual_delta, fgd ? -FgdScore(static_cast<double>(grown.delta) / 1000.0) : grown.delta};
    };
    std::pair<int64_t, int64_t> best_rank;
    for (size_t i = 0; i < slots.size(); ++i) {
      const size_t g = slots[i];
      const auto& gpu = node.view->gpus[g];
      if (!mask[g] || topology::CheckShare(gpu, loads[g], topology::ResolveShareMemory(need, gpu.memory_mib),
                                           need.gpu_compute_pct, qos) != topology::Misfit::kNone) {
        continue;
      }
      const uint32_t was = free.gpu_milli[i];
      free.gpu_milli[i] -= std::min(was, ShareMilli(need, gpu));
      FragChoice grown = growth(measure(free));
      free.gpu_milli[i] = was;
      if (!choice.slot || rank(grown) < best_rank) {
        best_rank = rank(grown);
        choice = grown;
        choice.slot = g;
      }
    }
    return choice;
  }
  for (size_t g : need.gpus > 0 ? PlannedDevices(job, task, node) : std::vector<size_t>{}) {
    auto at = std::find(slots.begin(), slots.end(), g);
    if (at == slots.end()) continue;
    uint32_t& milli = free.gpu_milli[static_cast<size_t>(at - slots.begin())];
    milli -= std::min(milli, ShareMilli(need, node.view->gpus[g]));
  }
  return growth(measure(free));
}

DeviceBits Session::ShareMask(const WorkJob& job, const PendingTask& task, const WorkNode& node) const {
  DeviceBits mask = DeviceMask(job, task, node);
  // A job with its own GPU policy chooses among every device with room.
  if (FragmentationAware() && job.view->gpu_policy == PlacementPolicy::kDefault && task.resources.Shared() &&
      task.resources.gpus == 1) {
    if (auto slot = BestFragmentation(job, task, node).slot) {
      mask.Assign(mask.size(), false);
      mask.Set(*slot, true);
    }
  }
  return mask;
}

Session::NodeScore Session::Score(const WorkJob& job, const PendingTask& task, const WorkNode& node) const {
  NodeScore score = ScoreOfShape(job, task, node);
  score.then += PreferBonus(job, node);
  return score;
}

int64_t Session::PreferBonus(const WorkJob& job, const WorkNode& node) const {
  const int64_t weight = int64_t{config_.node_order.prefer_label_weight} * 1000;
  int64_t bonus = 0;
  for (const auto& [key, value] : job.view->prefer_labels) {
    auto it = node.view->labels.find(key);
    if (it != node.view->labels.end() && it->second == value) bonus += weight;
  }
  return bonus;
}

Session::NodeScore Session::ScoreOfShape(const WorkJob& job, const PendingTask& task, const WorkNode& node) const {
  // Time-sliced nodes are never twins (session.cc), so this score is the
  // node's own.
  if (node.sliced_gpus > 0 && MayTimeSlice(job, task)) {
    if (auto slices = PickTimeSlices(job, task, node); !slices.empty()) return TimeSliceScore(node, slices);
  }
  const auto& order = config_.node_order;
  const Resources& need = task.resources;
  const uint64_t gpus_used = node.usable_gpus - node.free_gpus + need.gpus;
  const uint64_t cpu_used = node.cpu_total - node.cpu_free + need.cpu_milli;
  const uint64_t memory_used = node.memory_total - node.memory_free + need.memory_mib;
  const int64_t utilisation = static_cast<int64_t>(order.gpu_weight * Permille(gpus_used, node.usable_gpus) +
                                                   order.cpu_weight * Permille(cpu_used, node.cpu_total) +
                                                   order.memory_weight *
                                                       Permille(memory_used, node.memory_total));
  int64_t score = 0;
  int64_t eventual = 0;
  // A job's own node policy (JobSpec.node_policy, HAMi's per-pod policy)
  // stands in for the configured strategy for its tasks alone.
  Strategy strategy = order.strategy;
  if (job.view->node_policy == PlacementPolicy::kBinpack) strategy = Strategy::kBinpack;
  if (job.view->node_policy == PlacementPolicy::kSpread) strategy = Strategy::kSpread;
  switch (strategy) {
    case Strategy::kBinpack: score = utilisation; break;
    case Strategy::kSpread: score = -utilisation; break;
    case Strategy::kFragmentation: {
      const FragChoice grown = BestFragmentation(job, task, node);
      eventual = -grown.eventual_delta;
      // Utilisation stays below 2^24, so it only breaks ties of the delta.
      score = -grown.delta * kTieRange + utilisation;
      break;
    }
    case Strategy::kFgd: score = FgdScore(static_cast<double>(BestFragmentation(job, task, node).delta) / 1000.0); break;
    case Strategy::kRandom: score = static_cast<int64_t>(RandomDraw(job, task, node) >> 2); break;
    case Strategy::kDotProduct: score = DotProductScore(task, node); break;
    case Strategy::kGpuPacking: score = GpuPackingScore(job, task, node); break;
    case Strategy::kGpuClustering: score = GpuClusteringScore(task, node); break;
    case Strategy::kBestFit: score = BestFitScore(task, node); break;
  }
  return NodeScore{eventual, score};
}

// Tetris, as the paper's artifact scores it: the task's CPU and GPU-share
// demand and the node's free CPU and GPU share, each against the largest
// node's, dotted and halved; the smaller the product, the better the node.
// The score is a Kubernetes integer out of 100, so nodes within a hundredth
// of each other tie and go to the first (the artifact's tie-break; scored
// exactly, this baseline placed 1.4 points less than published on default).
int64_t Session::DotProductScore(const PendingTask& task, const WorkNode& node) const {
  const NodeFree free = FreeOf(node, nullptr);
  const double gpu_max = static_cast<double>(largest_gpus_) * kWholeMilli;
  const double cpu_max = static_cast<double>(largest_cpu_);
  const Resources& need = task.resources;
  double gpu_demand = 0;
  if (need.gpus > 0 && !node.view->gpus.empty()) {
    gpu_demand = static_cast<double>(need.gpus) * ShareMilli(need, node.view->gpus.front());
  }
  double dot = 0;
  if (cpu_max > 0) dot += (static_cast<double>(need.cpu_milli) / cpu_max) * (static_cast<double>(free.cpu_milli) / cpu_max);
  if (gpu_max > 0) dot += (gpu_demand / gpu_max) * (FreeTotal(free) / gpu_max);
  return static_cast<int64_t>(100.0 * (1.0 - dot / 2.0));
}

// GPU packing: shares onto partly used GPUs first (the fuller the better),
// then free GPUs of a partly used node (the fewer the better), then an idle
// node (the fewer GPUs the better).
int64_t Session::GpuPackingScore(const WorkJob& job, const PendingTask& task, const WorkNode& node) const {
  const Resources& need = task.resources;
  if (need.gpus == 0) return 0;
  std::vector<size_t> slots;
  const NodeFree free = FreeOf(node, &slots);
  const auto idle = static_cast<uint32_t>(std::count(free.gpu_milli.begin(), free.gpu_milli.end(), kWholeMilli));
  if (idle == free.gpu_milli.size()) return 1'000'000 - idle;
  uint32_t whole_used = 0;
  uint64_t left_on_used = 0;
  for (size_t g : PlannedDevices(job, task, node)) {
    auto at = std::find(slots.begin(), slots.end(), g);
    if (at == slots.end()) continue;
    const uint32_t milli = free.gpu_milli[static_cast<size_t>(at - slots.begin())];
    if (milli == kWholeMilli) {
      ++whole_used;
    } else {
      left_on_used += milli;
    }
  }
  if (whole_used > 0) return 2'000'000 - whole_used;
  return 4'000'000 - static_cast<int64_t>(left_on_used);
}

// GPU clustering, as the paper's artifact scores it: tasks of one GPU
// request together, where a request is a count of whole GPUs or "a share"
// (any fraction of one). Nodes whose GPU tasks all make the task's request
// score 75-100, nodes running it among others 50-75, nodes with no GPU task
// 25-50, the rest 0-25; within a band, a quarter of the range by how little
// GPU share the node has free against the largest node's, in whole steps,
// ties to the first node. So small nodes fill before large ones (matching
// on exact share size instead, and on used share, placed 3.5 points less
// than published on default).
int64_t Session::GpuClusteringScore(const PendingTask& task, const WorkNode& node) const {
  const Resources& need = task.resources;
  if (need.gpus == 0 || node.view->gpus.empty() || largest_gpus_ == 0) return 0;
  constexpr uint32_t kShare = 0;
  auto request = [&](uint32_t gpus, bool whole) { return whole ? gpus : kShare; };
  const uint32_t wanted = request(need.gpus, need.Whole());
  bool same = false;
  bool other = false;
  for (size_t r : node.running) {
    const auto& running = *running_[r].view;
    if (running.gpus == 0) continue;
    // Tasks with no device memory on record hold whole GPUs.
    const bool whole = running.gpu_memory_mib == 0 ||
                       running.gpu_memory_mib >= uint64_t{running.gpus} * node.view->gpus.front().memory_mib;
    (request(running.gpus, whole) == wanted ? same : other) = true;
  }
  const int64_t capacity = int64_t{largest_gpus_} * kWholeMilli;
  const int64_t fuller = 25 * (capacity - std::llround(FreeTotal(FreeOf(node, nullptr)))) / capacity;
  const int64_t band = same && !other ? 75 : same ? 50 : !other ? 25 : 0;
  return band + fuller;
}

// Best fit: the node with the least left over, CPU and GPU share weighed
// equally, each against the largest node's.
int64_t Session::BestFitScore(const PendingTask& task, const WorkNode& node) const {
  const Resources& need = task.resources;
  const NodeFree free = FreeOf(node, nullptr);
  double gpu_left = FreeTotal(free);
  if (need.gpus > 0 && !node.view->gpus.empty()) {
    gpu_left -= static_cast<double>(need.gpus) * ShareMilli(need, node.view->gpus.front());
  }
  const double cpu_left = static_cast<double>(node.cpu_free) - static_cast<double>(need.cpu_milli);
  const double gpu_max = static_cast<double>(largest_gpus_) * kWholeMilli;
  const double cpu_max = static_cast<double>(largest_cpu_);
  const double left = 0.5 * (cpu_max > 0 ? cpu_left / cpu_max : 0) + 0.5 * (gpu_max > 0 ? gpu_left / gpu_max : 0);
  return -std::llround(left * 1e9);
}

}  // namespace gpool::scheduler
