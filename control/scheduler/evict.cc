// preempt and reclaim: making room by evicting running work.
//
// Both look for nodes where the waiting job's gang fits once some running
// tasks are gone, choose the fewest and least important such tasks, and
// evict only those. A task whose loss would break its own job's gang takes
// its whole job with it (a gang never runs partly), and is counted so. The
// evicting job then holds a claim on what the victims free; it never evicts
// again while they drain, and never evicts a task it has evicted before, so
// preemption cannot loop. Which classes may be taken, whole or as spare
// elastic replicas, is class_rules.h's rule; each path narrows it further
// (preemption to its own queue and the classes its policy lets preempt,
// reclaim to queues that lend, never below a lender's deserved share:
// lender_room.h).
#include <algorithm>
#include <map>
#include <set>
#include <memory>
#include <optional>
#include <unordered_map>

#include "control/scheduler/actions.h"
#include "control/scheduler/class_rules.h"
#include "control/scheduler/job_order.h"
#include "control/scheduler/lender_room.h"

namespace gpool::scheduler {
namespace {

using topology::PendingTask;
using topology::PriorityClass;

struct Freed {
  uint32_t gpus = 0;
  uint64_t cpu = 0;
  uint64_t memory = 0;
};

class Evictor {
 public:
  // Which running tasks the evicting path may take at all (beyond the class
  // rule, which Evictor applies itself).
  using Eligible = std::function<bool(const WorkTask&)>;
  // Built once per action (running tasks do not move during it).
  struct Index {
    std::unordered_map<uint64_t, std::vector<size_t>> by_job;
    // Ascending node indices holding a task of the queue that the class
    // rule could ever let go (low work, or a replica above its minimum):
    // most running work is not, and a search must not walk its nodes.
    std::vector<std::vector<uint32_t>> nodes_by_queue;
    // Per node, per queue with such work there: how many of those tasks are
    // left and all they hold, an upper bound on what evicting can free. A
    // search reads it before the node's tasks (scattered in memory), and
    // EvictFor takes each victim off it, so a node whose evictable work is
    // gone or too small costs one look.
    struct Hold {
      int queue = 0;
      uint32_t tasks = 0;
      Freed most;
    };
    std::vector<std::vector<Hold>> holds;
    // Per node, its free GPUs and every GPU its evictable work holds (all
    // queues): a bound on what any search could find there, in one array a
    // search walks in order, so most nodes are passed over without reading
    // the node or its holds.
    std::vector<uint32_t> gpus_upper;

    void Add(const WorkTask& task) {
      auto& here = holds[static_cast<size_t>(task.node)];
      auto it = std::find_if(here.begin(), here.end(), [&](const Hold& h) { return h.queue == task.queue; });
      if (it == here.end()) it = here.insert(here.end(), Hold{task.queue, 0, {}});
      ++it->tasks;
      gpus_upper[static_cast<size_t>(task.node)] += task.view->gpus;
      it->most.gpus += task.view->gpus;
      it->most.cpu += task.view->cpu_milli;
      it->most.memory += task.view->memory_mib;
    }
    // A task chosen as a victim can free nothing more for anyone else.
    void Forget(const WorkTask& task) {
      if (task.node < 0) return;
      auto& here = holds[static_cast<size_t>(task.node)];
      auto it = std::find_if(here.begin(), here.end(), [&](const Hold& h) { return h.queue == task.queue; });
      if (it == here.end() || it->tasks == 0) return;  // not work the index counted
      --it->tasks;
      const uint32_t gpus = std::min<uint32_t>(it->most.gpus, task.view->gpus);
      it->most.gpus -= gpus;
      gpus_upper[static_cast<size_t>(task.node)] -= gpus;
      it->most.cpu -= std::min<uint64_t>(it->most.cpu, task.view->cpu_milli);
      it->most.memory -= std::min<uint64_t>(it->most.memory, task.view->memory_mib);
    }
  };
  static bool MayEverGo(const WorkTask& task) {
    const PriorityClass cls = task.view->priority_class;
    return !task.evicted && (EvictableWhole(cls) ||
                             (EvictableSpare(cls) && task.view->group_active > task.view->group_min));
  }
  static Index BuildIndex(Session& session) {
    Index index;
    auto& running = session.running();
    for (size_t i = 0; i < running.size(); ++i) index.by_job[running[i].view->job.value()].push_back(i);
    index.nodes_by_queue.resize(session.queues().size());
    index.holds.resize(session.nodes().size());
    index.gpus_upper.resize(session.nodes().size());
    for (size_t n = 0; n < session.nodes().size(); ++n) {
      index.gpus_upper[n] = session.nodes()[n].free_gpus;
      for (size_t i : session.nodes()[n].running) {
        if (!MayEverGo(running[i]) || running[i].node != static_cast<int>(n)) continue;
        auto& list = index.nodes_by_queue[static_cast<size_t>(running[i].queue)];
        if (list.empty() || list.back() != n) list.push_back(static_cast<uint32_t>(n));
        index.Add(running[i]);
      }
    }
    return index;
  }

  // The nodes holding a task of a lending queue that could ever go: only
  // they can yield victims. Ascending.
  static std::vector<uint32_t> VictimNodes(const Index& index, const std::vector<bool>& lending_queues) {
    std::vector<uint32_t> merged;
    for (size_t q = 0; q < lending_queues.size(); ++q) {
      if (!lending_queues[q]) continue;
      const auto& list = index.nodes_by_queue[q];
      std::vector<uint32_t> out;
      std::merge(merged.begin(), merged.end(), list.begin(), list.end(), std::back_inserter(out));
      out.erase(std::unique(out.begin(), out.end()), out.end());
      merged.swap(out);
    }
    return merged;
  }

  // `room`: what reclaim may take from each lender (null: preemption, which
  // takes from the evicting job's own queue and has no floor).
  Evictor(Session& session, const WorkJob& job, Eligible eligible, const Index& index,
          const std::vector<bool>& lending_queues, const std::vector<uint32_t>& victim_nodes, LenderRoom* room)
      : session_(session),
        job_(job),
        eligible_(std::move(eligible)),
        room_(room),
        by_job_(index.by_job),
        holds_(index.holds),
        gpus_upper_(index.gpus_upper),
        lending_(lending_queues),
        victim_nodes_(victim_nodes) {}

  // Chooses victims for every task of the gang; false (and nothing chosen)
  // when some task fits nowhere even with evictions.
  bool Plan() {
    for (const PendingTask* task : job_.gang) {
      if (!PlaceTask(*task)) return false;
    }
    return true;
  }
  const std::set<size_t>& victims() const { return chosen_; }

  // For a job kept out by its queue's quota (capability, or deserved for a
  // class that may not borrow): adds the least important evictable tasks
  // anywhere until `fits` (asked after each one's quota is refunded through
  // `refund`) holds. False, and the added ones stay chosen, when even all of
  // them are not enough (the caller then drops the whole plan).
  bool FreeQuota(const std::function<void(size_t)>& refund, const std::function<bool()>& fits) {
    if (fits()) return true;
    auto& running = session_.running();
    std::vector<std::pair<bool, size_t>> candidates;
    for (uint32_t n : victim_nodes_) {
      for (size_t i : session_.nodes()[n].running) {
        if (Evictable(running[i])) candidates.emplace_back(Spare(running[i], {}), i);
      }
    }
    std::stable_sort(candidates.begin(), candidates.end(), [&](const auto& a, const auto& b) {
      return LessImportant(running[a.second], a.first, running[b.second], b.first);
    });
    for (const auto& [spare, i] : candidates) {
      if (chosen_.count(i)) continue;
      const std::vector<size_t> closure = Closure(i, {});
      if (!WithinRoom({}, closure)) continue;
      for (size_t c : closure) {
        chosen_.insert(c);
        if (room_ != nullptr) room_->Take(session_.running()[c]);
        refund(c);
      }
      if (fits()) return true;
    }
    return false;
  }

 private:
  bool Evictable(const WorkTask& task) const {
    if (task.evicted || chosen_.count(static_cast<size_t>(&task - session_.running().data()))) return false;
    const PriorityClass cls = task.view->priority_class;
    if (!EvictableWhole(cls) && !EvictableSpare(cls)) return false;
    const auto& before = task.view->evicted_by;
    if (std::find(before.begin(), before.end(), job_.view->id.value()) != before.end()) return false;
    if (!lending_[static_cast<size_t>(task.queue)]) return false;
    return eligible_(task);
  }

  // Evicting this task alone leaves its group above its minimum, counting
  // the tasks other jobs evicted this cycle, those already chosen and those
  // `taken` on the node being weighed (group_active already leaves out the
  // ones that were stopping before the cycle).
  bool Spare(const WorkTask& task, const std::vector<size_t>& taken) const {
    // A group at or below its minimum has no spare whatever else is gone
    // (most tasks: a job of one task), and its siblings need not be walked.
    if (task.view->group_active <= task.view->group_min) return false;
    uint32_t gone = 0;
    for (size_t i : by_job_.at(task.view->job.value())) {
      const WorkTask& sibling = session_.running()[i];
      if (sibling.view->group != task.view->group) continue;
      if ((sibling.evicted && !sibling.view->stopping) || chosen_.count(i) ||
          std::find(taken.begin(), taken.end(), i) != taken.end()) {
        ++gone;
      }
    }
    return task.view->group_active > task.view->group_min + gone;
  }

  // The tasks that go if `index` goes: itself when it is a spare replica its
  // class lets go alone, else its whole job (the gang would break), which
  // only a class evictable whole allows. Empty when it may not go.
  std::vector<size_t> Closure(size_t index, const std::vector<size_t>& taken) const {
    const WorkTask& task = session_.running()[index];
    if (EvictableSpare(task.view->priority_class) && Spare(task, taken)) return {index};
    if (!EvictableWhole(task.view->priority_class)) return {};
    std::vector<size_t> all;
    for (size_t i : by_job_.at(task.view->job.value())) {
      const WorkTask& sibling = session_.running()[i];
      if (sibling.evicted || chosen_.count(i)) continue;
      if (!Evictable(sibling)) return {};
      all.push_back(i);
    }
    return all;
  }

  // Taking `closure` on top of `taken` (this node's victims so far) and the
  // victims already chosen keeps every lender at or above its floor.
  bool WithinRoom(const std::vector<size_t>& taken, const std::vector<size_t>& closure) const {
    if (room_ == nullptr) return true;
    std::vector<const WorkTask*> more;
    more.reserve(taken.size() + closure.size());
    for (size_t i : taken) more.push_back(&session_.running()[i]);
    for (size_t i : closure) {
      if (std::find(taken.begin(), taken.end(), i) == taken.end()) more.push_back(&session_.running()[i]);
    }
    return room_->Allows(more);
  }

  static bool LessImportant(const WorkTask& a, bool a_spare, const WorkTask& b, bool b_spare) {
    if (a_spare != b_spare) return a_spare;  // elastic replicas above their minimum go first
    if (a.view->priority_class != b.view->priority_class) return a.view->priority_class < b.view->priority_class;
    if (a.view->priority != b.view->priority) return a.view->priority < b.view->priority;
    return a.view->bind_order > b.view->bind_order;  // newest first: it has lost the least work
  }

  // What std::stable_sort by LessImportant gives. A node holds a few tasks,
  // and stable_sort takes a buffer from the heap for every node weighed, so
  // short lists are sorted by insertion (stable too) in place.
  void SortLeastImportantFirst(std::vector<std::pair<bool, size_t>>& candidates) const {
    const auto& running = session_.running();
    auto less = [&](const std::pair<bool, size_t>& a, const std::pair<bool, size_t>& b) {
      return LessImportant(running[a.second], a.first, running[b.second], b.first);
    };
    constexpr size_t kInsertionMax = 16;
    if (candidates.size() > kInsertionMax) {
      std::stable_sort(candidates.begin(), candidates.end(), less);
      return;
    }
    for (size_t k = 1; k < candidates.size(); ++k) {
      const auto moving = candidates[k];
      size_t j = k;
      for (; j > 0 && less(moving, candidates[j - 1]); --j) candidates[j] = candidates[j - 1];
      candidates[j] = moving;
    }
  }

  bool Fits(const WorkNode& node, const Freed& freed, const Resources& need) const {
    const auto at = consumed_.find(&node);
    const Freed used = at == consumed_.end() ? Freed{} : at->second;
    return node.free_gpus + freed.gpus >= need.gpus + used.gpus && node.cpu_free + freed.cpu >= need.cpu_milli + used.cpu &&
           node.memory_free + freed.memory >= need.memory_mib + used.memory;
  }

  Freed FreedOn(int node) const {
    auto it = freed_.find(node);
    return it == freed_.end() ? Freed{} : it->second;
  }

  bool Usable(const PendingTask& task, const WorkNode& node) const {
    if (node.claimed_for != 0 && node.claimed_for != job_.view->id.value()) return false;
    if (session_.CheckStatic(job_, task, node)) return false;
    return node.pool != NodePool::kExclusive;  // exclusive nodes are not shared out by eviction
  }

  bool PlaceTask(const PendingTask& task) {
    auto& nodes = session_.nodes();
    auto& running = session_.running();
    int best_node = -1;
    std::vector<size_t> best_victims;
    // Pass 1: the first node (lowest index) where it fits with no eviction
    // wins outright. Such a node has enough free GPUs already or had some
    // freed by this gang's earlier victims, so only those are looked at.
    auto consider = [&](size_t n) {
      if (best_node >= 0 && static_cast<int>(n) > best_node) return;
      const WorkNode& node = nodes[n];
      if (Fits(node, FreedOn(static_cast<int>(n)), task.resources) && Usable(task, node)) best_node = static_cast<int>(n);
    };
    // A job kept out by its queue's capability needs the victims' quota, not
    // just room: free capacity alone does not help it.
    if (!job_.capped) {
      for (uint32_t b = task.resources.gpus; b <= session_.largest_gpus(); ++b) {
        for (uint32_t n : session_.NodesWithFreeGpus(job_.pool, b)) consider(n);
      }
      for (const auto& [n, freed] : freed_) {
        if (n >= 0) consider(static_cast<size_t>(n));
      }
    }
    // Pass 2: fewest victims, first node among equals; only nodes holding a
    // task of a lending queue can have victims, and one victim cannot be
    // beaten. Like scoring, it compares a bounded number of nodes that work
    // (the configured candidates), so one eviction costs the same on 100 or
    // 100,000 nodes.
    const uint32_t wanted = std::max<uint32_t>(1, session_.config().node_order.candidates);
    uint32_t working = 0;
    std::vector<std::pair<bool, size_t>> candidates;
    std::vector<size_t> taken;
    std::vector<size_t> seen;
    for (size_t k = 0; best_node < 0 || (best_victims.size() > 1 && k < victim_nodes_.size()); ++k) {
      if (k >= victim_nodes_.size()) break;
      const size_t n = victim_nodes_[k];
      Freed freed = FreedOn(static_cast<int>(n));
      if (gpus_upper_[n] + freed.gpus < task.resources.gpus) continue;
      const WorkNode& node = nodes[n];
      if (node.claimed_for != 0 && node.claimed_for != job_.view->id.value()) continue;
      Freed bound = freed;  // what evicting every lending queue's work here could free, at most
      for (const Index::Hold& hold : holds_[n]) {
        if (hold.tasks == 0 || !lending_[static_cast<size_t>(hold.queue)]) continue;
        bound.gpus += hold.most.gpus;
        bound.cpu += hold.most.cpu;
        bound.memory += hold.most.memory;
      }
      if (!Fits(node, bound, task.resources)) continue;
      candidates.clear();
      Freed most = freed;  // what evicting every candidate here would free
      for (size_t i : node.running) {
        if (!Evictable(running[i])) continue;
        candidates.emplace_back(false, i);
        most.gpus += running[i].view->gpus;
        most.cpu += running[i].view->cpu_milli;
        most.memory += running[i].view->memory_mib;
      }
      // Only tasks on this node free room on it: if all of them are not
      // enough, no choice of victims is, so skip the sort and closures (and
      // the node's static checks, the dearer test, which come after).
      if (candidates.empty() || !Fits(node, most, task.resources) || !Usable(task, node)) continue;
      for (auto& [spare, i] : candidates) spare = Spare(running[i], {});
      SortLeastImportantFirst(candidates);
      taken.clear();
      seen.clear();
      bool fits = false;
      for (const auto& [spare, i] : candidates) {
        if (std::find(seen.begin(), seen.end(), i) != seen.end()) continue;
        auto closure = Closure(i, taken);
        if (closure.empty() || !WithinRoom(taken, closure)) continue;
        for (size_t c : closure) {
          if (std::find(seen.begin(), seen.end(), c) != seen.end()) continue;
          seen.push_back(c);
          taken.push_back(c);
          if (running[c].node == static_cast<int>(n)) {
            freed.gpus += running[c].view->gpus;
            freed.cpu += running[c].view->cpu_milli;
            freed.memory += running[c].view->memory_mib;
          }
        }
        if (Fits(node, freed, task.resources)) {
          fits = true;
          break;
        }
      }
      if (!fits) continue;
      if (best_node < 0 || taken.size() < best_victims.size()) {
        best_node = static_cast<int>(n);
        best_victims = taken;
      }
      if (++working >= wanted) break;
    }
    if (best_node < 0) return false;
    for (size_t v : best_victims) {
      chosen_.insert(v);
      const WorkTask& victim = running[v];
      if (room_ != nullptr) room_->Take(victim);
      if (victim.node < 0) continue;
      Freed& freed = freed_[victim.node];
      freed.gpus += victim.view->gpus;
      freed.cpu += victim.view->cpu_milli;
      freed.memory += victim.view->memory_mib;
    }
    Freed& used = consumed_[&nodes[static_cast<size_t>(best_node)]];
    used.gpus += task.resources.gpus;
    used.cpu += task.resources.cpu_milli;
    used.memory += task.resources.memory_mib;
    return true;
  }

  Session& session_;
  const WorkJob& job_;
  Eligible eligible_;
  LenderRoom* room_;
  const std::unordered_map<uint64_t, std::vector<size_t>>& by_job_;
  const std::vector<std::vector<Index::Hold>>& holds_;
  const std::vector<uint32_t>& gpus_upper_;
  const std::vector<bool>& lending_;
  const std::vector<uint32_t>& victim_nodes_;
  std::set<size_t> chosen_;
  std::map<int, Freed> freed_;
  std::map<const WorkNode*, Freed> consumed_;
};

// Appends a number's bytes: a key only compared for equality needs no digits.
void AppendShapeField(std::string& key, uint64_t value) {
  key.append(reinterpret_cast<const char*>(&value), sizeof(value));
}

// What a gang's eviction search depends on, as a key. Built once per job in
// one reserved string: the decimal form with a temporary per field cost a
// dozen allocations per job, and every job a cycle considers asks for it.
const std::string& ShapeOf(WorkJob& job) {
  if (!job.shape.empty()) return job.shape;
  std::string key;
  key.reserve(16 + job.view->pool.size() + job.gang.size() * 40);
  AppendShapeField(key, static_cast<uint64_t>(job.queue));
  AppendShapeField(key, job.view->pool.size());
  key += job.view->pool;
  for (const PendingTask* task : job.gang) {
    AppendShapeField(key, task->resources.gpus);
    AppendShapeField(key, task->resources.cpu_milli);
    AppendShapeField(key, task->resources.memory_mib);
    AppendShapeField(key, task->resources.gpu_model.size());
    key += task->resources.gpu_model;
  }
  job.shape = std::move(key);
  return job.shape;
}

// Runs `eligible`-bounded eviction for each job `wants` picks, in fair order.
// `room_for` gives reclaim's floors for a job (null for preemption); `lends`
// then says which queues may yield victims.
using RoomFor = std::function<std::unique_ptr<LenderRoom>(WorkJob&)>;
void EvictFor(Session& session, const std::function<bool(const WorkJob&)>& wants, const RoomFor& room_for,
              const std::function<bool(WorkJob&, int, LenderRoom*)>& lends,
              const std::function<Evictor::Eligible(const WorkJob&)>& eligible_for,
              const std::function<std::string(const WorkJob&)>& reason_for, topology::PendingCode waiting_reason,
              bool capped_too) {
  auto& jobs = session.jobs();
  QueueTree& tree = session.queues();
  std::set<std::string> failed_shapes;
  // Built for the first job that gets as far as a search: it walks every
  // node and running task, and on a large cluster with room most cycles
  // have no job that gets there. Nothing is evicted before that search, so
  // it indexes what building it up front would have.
  std::optional<Evictor::Index> index;
  // Most jobs see one of a few lending sets (their queue decides it).
  std::map<std::vector<bool>, std::vector<uint32_t>> victim_nodes;
  std::vector<bool> lending(session.queues().size());
  // What each queue holds that the class rule could let go: a job kept out
  // by its quota that could not fit even with all of it gone is not worth a
  // search (most high jobs waiting at their deserved share are).
  std::vector<Amounts> evictable(tree.size());
  if (capped_too) {
    for (const WorkTask& task : session.running()) {
      if (!Evictor::MayEverGo(task)) continue;
      Amounts& held = evictable[static_cast<size_t>(task.queue)];
      if (held.empty()) held.assign(tree.resource_count(), 0);
      for (size_t r = 0; r < held.size() && r < task.charge.size(); ++r) held[r] += task.charge[r];
    }
  }
  auto quota_could_fit = [&](WorkJob& job) {
    for (size_t q = 0; q < lending.size(); ++q) {
      if (lending[q] && !evictable[q].empty()) tree.Refund(static_cast<int>(q), evictable[q]);
    }
    const bool fits = !tree.CheckCapability(job.queue, GangDemand(tree, job), job.within_deserved);
    for (size_t q = 0; q < lending.size(); ++q) {
      if (lending[q] && !evictable[q].empty()) tree.Charge(static_cast<int>(q), evictable[q]);
    }
    return fits;
  };
  JobOrder order(session, [&](const WorkJob& job) {
    return (job.admitted || (capped_too && job.capped)) && !job.done && !job.has_claim && !job.gang.empty() &&
           wants(job);
  });
  for (int next = order.Next(); next >= 0; next = order.Next()) {
    WorkJob& job = jobs[static_cast<size_t>(next)];
    if (!wants(job)) continue;
    const std::string& shape = ShapeOf(job);
    if (failed_shapes.count(shape)) continue;
    std::unique_ptr<LenderRoom> room = room_for(job);
    bool any = false;
    for (size_t q = 0; q < lending.size(); ++q) any |= (lending[q] = lends(job, static_cast<int>(q), room.get()));
    if (!any || (job.capped && !quota_could_fit(job))) {  // the scan below could only fail
      failed_shapes.insert(shape);
      continue;
    }
    if (!index) index = Evictor::BuildIndex(session);
    auto nodes_it = victim_nodes.find(lending);
    if (nodes_it == victim_nodes.end()) {
      nodes_it = victim_nodes.emplace(lending, Evictor::VictimNodes(*index, lending)).first;
    }
    Evictor evictor(session, job, eligible_for(job), *index, lending, nodes_it->second, room.get());
    if (!evictor.Plan() || evictor.victims().empty()) {
      failed_shapes.insert(shape);
      continue;
    }
    if (job.capped) {
      // Its queue is at capability (or at deserved, for a class that may not
      // borrow): the victims must also free the quota, and more of them are
      // taken where the room alone is not enough.
      auto& running = session.running();
      auto refund = [&](size_t victim) { tree.Refund(running[victim].queue, running[victim].charge); };
      for (size_t victim : evictor.victims()) refund(victim);
      const bool fits_quota = evictor.FreeQuota(refund, [&] {
        return !tree.CheckCapability(job.queue, GangDemand(tree, job), job.within_deserved);
      });
      for (size_t victim : evictor.victims()) tree.Charge(running[victim].queue, running[victim].charge);
      if (!fits_quota) {
        // Usage only falls as the cycle evicts for others, but a shape that
        // could not free its quota now is not worth a second full search
        // in this cycle (the next one starts over).
        failed_shapes.insert(shape);
        continue;
      }
    }
    const std::string reason = reason_for(job);
    for (size_t victim : evictor.victims()) {
      session.Evict(victim, job, reason);
      index->Forget(session.running()[victim]);
    }
    job.done = true;
    job.has_claim = true;
    session.queues().Claim(job.queue, GangDemand(session.queues(), job));
    job.reasons = {topology::PendingReason::Nodes(waiting_reason, static_cast<uint32_t>(evictor.victims().size()))};
  }
}

// An owner's exclusive job takes back owned nodes lent to other queues' low
// work: for each task of its gang, the owned node (that could ever run it,
// holds nothing of the owner and only borrowers) with the fewest borrowed
// tasks; every borrower there goes, with its whole job when that breaks its
// gang (borrowers are low, so the class rule allows it).
void ReclaimExclusiveNodes(Session& session) {
  if (!session.lendable_exclusive()) return;
  auto& nodes = session.nodes();
  auto& running = session.running();
  QueueTree& tree = session.queues();
  const Evictor::Index index = Evictor::BuildIndex(session);
  std::vector<size_t> lent;  // owned nodes holding borrowed work only
  for (size_t n = 0; n < nodes.size(); ++n) {
    if (nodes[n].owner >= 0 && !nodes[n].owner_busy && !nodes[n].running.empty()) lent.push_back(n);
  }
  if (lent.empty()) return;
  JobOrder order(session, [](const WorkJob& job) {
    return job.admitted && !job.done && !job.has_claim && !job.gang.empty() && job.pool == NodePool::kExclusive;
  });
  for (int next = order.Next(); next >= 0; next = order.Next()) {
    WorkJob& job = session.jobs()[static_cast<size_t>(next)];
    std::vector<size_t> chosen_nodes;
    std::set<size_t> victims;
    for (const PendingTask* task : job.gang) {
      int best = -1;
      size_t best_count = 0;
      for (size_t n : lent) {
        const WorkNode& node = nodes[n];
        if (node.owner_busy || !tree.InSubtree(job.queue, node.owner)) continue;
        if (node.claimed_for != 0 || std::find(chosen_nodes.begin(), chosen_nodes.end(), n) != chosen_nodes.end()) {
          continue;
        }
        if (session.CheckStatic(job, *task, node)) continue;
        const bool all_lent = std::all_of(node.running.begin(), node.running.end(), [&](size_t i) {
          return !running[i].evicted && EvictableWhole(running[i].view->priority_class) &&
                 tree.queue(running[i].queue).policy.low_reclaimable && !tree.InSubtree(running[i].queue, node.owner);
        });
        if (!all_lent) continue;
        if (best < 0 || node.running.size() < best_count) {
          best = static_cast<int>(n);
          best_count = node.running.size();
        }
      }
      if (best < 0) break;
      chosen_nodes.push_back(static_cast<size_t>(best));
      for (size_t i : nodes[static_cast<size_t>(best)].running) {
        for (size_t sibling : index.by_job.at(running[i].view->job.value())) {
          if (!running[sibling].evicted) victims.insert(sibling);
        }
      }
    }
    if (chosen_nodes.size() != job.gang.size() || victims.empty()) continue;
    const std::string reason = "reclaimed by queue " + tree.queue(job.queue).name + " (its exclusive nodes) for job " +
                               std::to_string(job.view->id.value());
    for (size_t victim : victims) session.Evict(victim, job, reason);
    job.done = true;
    job.has_claim = true;
    tree.Claim(job.queue, GangDemand(tree, job));
    job.reasons = {topology::PendingReason::Nodes(topology::PendingCode::kReclaiming, static_cast<uint32_t>(victims.size()))};
  }
}

}  // namespace

void Preempt(Session& session) {
  const QueueTree& tree = session.queues();
  EvictFor(
      session, [&tree](const WorkJob& job) { return MayPreempt(job.view->priority_class, tree.queue(job.queue).policy); },
      [](WorkJob&) { return std::unique_ptr<LenderRoom>(); },
      [](WorkJob& job, int queue, LenderRoom*) { return queue == job.queue; },
      [](const WorkJob& job) {
        const int queue = job.queue;
        return Evictor::Eligible([queue](const WorkTask& task) { return task.queue == queue; });
      },
      [](const WorkJob& job) {
        return "preempted by job " + std::to_string(job.view->id.value()) + " (" +
               std::string(ToString(job.view->priority_class)) + ")";
      },
      topology::PendingCode::kPreempting, /*capped_too=*/true);
}

void Reclaim(Session& session) {
  ReclaimExclusiveNodes(session);
  QueueTree& tree = session.queues();
  // Which queues lend, and how much each may lose, is LenderRoom's rule
  // (lender_room.h): every resource the gang asks for that the reclaiming
  // side has a share of is weighed, and no lender goes below its floor.
  const std::vector<Amounts> stopping = LenderRoom::StoppingByQueue(session);
  EvictFor(
      session, [](const WorkJob&) { return true; },
      [&](WorkJob& job) { return std::make_unique<LenderRoom>(tree, stopping, job, GangDemand(tree, job)); },
      [](WorkJob&, int queue, LenderRoom* room) { return room->Lends(queue); },
      // The per-queue table from `lends`, the floors and the class rule are the whole rule.
      [](const WorkJob&) { return Evictor::Eligible([](const WorkTask&) { return true; }); },
      [&tree](const WorkJob& job) {
        return "reclaimed by queue " + tree.queue(job.queue).name + " for job " + std::to_string(job.view->id.value());
      },
      topology::PendingCode::kReclaiming, /*capped_too=*/false);
}

}  // namespace gpool::scheduler
