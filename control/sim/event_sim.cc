#include "control/sim/event_sim.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <map>
#include <queue>
#include <sstream>
#include <unordered_map>

#include "control/scheduler/fragmentation.h"
#include "control/scheduler/scheduler.h"
#include "control/sim/sim_cluster.h"

namespace gpool::sim {

namespace {

constexpr int64_t kNever = std::numeric_limits<int64_t>::max();

struct Live {
  const SimJob* sim = nullptr;
  int64_t since_ms = 0;      // waiting since (arrival or requeue)
  int64_t submitted_ms = 0;
  std::vector<uint32_t> bound;  // task indices running
  int64_t ends_ms = kNever;
  bool waiting = true;
};

double Percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t at = std::min(values.size() - 1, static_cast<size_t>(p * static_cast<double>(values.size())));
  return values[at];
}

class EventLoop {
 public:
  EventLoop(const std::vector<TraceNode>& nodes, const std::vector<SimJob>& jobs,
            const std::vector<topology::WorkloadShape>& workload, const scheduler::SchedulerConfig& config,
            const EventOptions& options)
      : cluster_(SimCluster::FromTrace(nodes)),
        workload_(scheduler::CommonestShapes(workload, scheduler::kFgdCoverage)),
        config_(config),
        options_(options) {
    cluster_.view().workload = workload;
    for (const auto& job : jobs) order_.push_back(&job);
    std::stable_sort(order_.begin(), order_.end(),
                     [](const SimJob* a, const SimJob* b) { return a->arrival_ms < b->arrival_ms; });
    run_.jobs = jobs.size();
  }

  EventRun Run() {
    if (order_.empty()) return run_;
    int64_t now = order_.front()->arrival_ms;
    while (true) {
      Arrive(now);
      Depart(now);
      const bool changed = Cycle(now);
      ++run_.cycles;
      Record(now);
      const int64_t next_event = std::min(next_arrival_ < order_.size() ? order_[next_arrival_]->arrival_ms : kNever,
                                          ends_.empty() ? kNever : ends_.top().first);
      const bool waiting = waiting_count_ > 0;
      if (next_event == kNever && (!waiting || !changed)) break;
      int64_t next = now + options_.cycle_ms;
      if (!waiting || !changed) next = std::max(next, next_event);
      // Cycles run on the cycle grid: an event between two waits for the next.
      const int64_t first = order_.front()->arrival_ms;
      next = first + (next - first + options_.cycle_ms - 1) / options_.cycle_ms * options_.cycle_ms;
      Advance(now, next);
      now = next;
    }
    run_.end_ms = now;
    if (elapsed_ms_ > 0) run_.mean_alloc_pct = alloc_time_ / static_cast<double>(elapsed_ms_);
    return std::move(run_);
  }

 private:
  // Jobs that arrived by `now` start waiting (since their arrival time).
  void Arrive(int64_t now) {
    while (next_arrival_ < order_.size() && order_[next_arrival_]->arrival_ms <= now) {
      const SimJob* sim = order_[next_arrival_++];
      Live live;
      live.sim = sim;
      live.since_ms = live.submitted_ms = sim->arrival_ms;
      live_.emplace(sim->job.id.value(), std::move(live));
      ++waiting_count_;
    }
  }

  void Depart(int64_t now) {
    while (!ends_.empty() && ends_.top().first <= now) {
      const auto [at, id] = ends_.top();
      ends_.pop();
      auto it = live_.find(id);
      if (it == live_.end() || it->second.ends_ms != at) continue;  // evicted and restarted since
      for (uint32_t task : it->second.bound) cluster_.Release(JobId(id), task);
      live_.erase(it);
      ++run_.finished;
    }
  }

  // One scheduling cycle; true when it placed or evicted anything.
  bool Cycle(int64_t now) {
    auto& view = cluster_.view();
    view.pending.clear();
    std::vector<uint64_t> ids;
    for (auto& [id, live] : live_) {
      if (live.waiting) ids.push_back(id);
    }
    std::sort(ids.begin(), ids.end());
    for (uint64_t id : ids) {
      const Live& live = live_.at(id);
      topology::PendingJob job = live.sim->job;
      job.arrival = id;
      job.waiting_ms = now - live.since_ms;
      view.pending.push_back(std::move(job));
    }
    started_waits_ = {};
    if (view.pending.empty()) return false;
    const scheduler::Plan plan = scheduler::Schedule(view, config_);
    for (const auto& eviction : plan.evictions) Evict(eviction.job.value(), now);
    std::unordered_map<uint64_t, const topology::PendingJob*> pending;
    for (const auto& job : view.pending) pending.emplace(job.id.value(), &job);
    for (const auto& bind : plan.binds) {
      auto it = live_.find(bind.job.value());
      if (it == live_.end() || !cluster_.Bind(bind, *pending.at(bind.job.value()), ++bind_order_)) continue;
      it->second.bound.push_back(bind.task_index);
    }
    for (const auto& bind : plan.binds) Start(bind.job.value(), now);
    run_.preemptions += plan.evictions.size();
    return !plan.binds.empty() || !plan.evictions.empty();
  }

  void Start(uint64_t id, int64_t now) {
    auto it = live_.find(id);
    if (it == live_.end() || !it->second.waiting) return;
    Live& live = it->second;
    if (live.bound.size() < live.sim->job.tasks.size()) return;
    live.waiting = false;
    --waiting_count_;
    ++run_.started;
    const auto cls = static_cast<size_t>(live.sim->job.priority_class);
    const double wait_s = static_cast<double>(now - live.submitted_ms) / 1000.0;
    run_.waits_s[cls].push_back(wait_s);
    started_waits_[cls].push_back(wait_s);
    if (live.sim->duration_ms >= 0) {
      live.ends_ms = now + live.sim->duration_ms;
      ends_.emplace(live.ends_ms, id);
    }
  }

  void Evict(uint64_t id, int64_t now) {
    auto it = live_.find(id);
    if (it == live_.end()) return;
    Live& live = it->second;
    for (uint32_t task : live.bound) cluster_.Release(JobId(id), task);
    live.bound.clear();
    live.ends_ms = kNever;
    live.since_ms = now;
    if (!live.waiting) {
      live.waiting = true;
      ++waiting_count_;
    }
  }

  void Record(int64_t now) {
    SeriesPoint point;
    point.t_ms = now;
    const double capacity = static_cast<double>(cluster_.gpu_capacity_milli());
    point.alloc_pct = capacity > 0 ? 100.0 * static_cast<double>(cluster_.allocated_gpu_milli()) / capacity : 0;
    point.frag_pct = capacity > 0 && !workload_.empty() ? 100.0 * cluster_.Fragmentation(workload_) / capacity : 0;
    point.waiting = waiting_count_;
    point.running = live_.size() - waiting_count_;
    point.preemptions = run_.preemptions;
    for (size_t c = 0; c < 3; ++c) {
      const auto& waits = started_waits_[c];
      if (waits.empty()) continue;
      double sum = 0;
      for (double w : waits) sum += w;
      point.wait_s[c] = sum / static_cast<double>(waits.size());
    }
    last_alloc_pct_ = point.alloc_pct;
    run_.series.push_back(point);
  }

  void Advance(int64_t from, int64_t to) {
    alloc_time_ += last_alloc_pct_ * static_cast<double>(to - from);
    elapsed_ms_ += to - from;
  }

  SimCluster cluster_;
  std::vector<topology::WorkloadShape> workload_;  // FGD's target: what the fragmentation series reports
  scheduler::SchedulerConfig config_;
  EventOptions options_;
  std::vector<const SimJob*> order_;
  size_t next_arrival_ = 0;
  std::map<uint64_t, Live> live_;
  size_t waiting_count_ = 0;
  std::priority_queue<std::pair<int64_t, uint64_t>, std::vector<std::pair<int64_t, uint64_t>>, std::greater<>> ends_;
  std::array<std::vector<double>, 3> started_waits_;
  int64_t bind_order_ = 0;
  double alloc_time_ = 0;
  double last_alloc_pct_ = 0;
  int64_t elapsed_ms_ = 0;
  EventRun run_;
};

std::string Number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3f", value);
  return text;
}

}  // namespace

EventRun RunEvents(const std::vector<TraceNode>& nodes, const std::vector<SimJob>& jobs,
                   const std::vector<topology::WorkloadShape>& workload, const scheduler::SchedulerConfig& config,
                   const EventOptions& options) {
  return EventLoop(nodes, jobs, workload, config, options).Run();
}

nlohmann::json EventSummaryJson(const EventRun& run) {
  nlohmann::json out;
  out["jobs"] = run.jobs;
  out["started"] = run.started;
  out["finished"] = run.finished;
  out["never_started"] = run.jobs - std::min(run.jobs, run.started);
  out["preemptions"] = run.preemptions;
  out["cycles"] = run.cycles;
  out["simulated_s"] = static_cast<double>(run.end_ms - (run.series.empty() ? 0 : run.series.front().t_ms)) / 1000.0;
  out["mean_alloc_pct"] = run.mean_alloc_pct;
  double peak = 0;
  for (const auto& point : run.series) peak = std::max(peak, point.alloc_pct);
  out["peak_alloc_pct"] = peak;
  for (size_t c = 0; c < 3; ++c) {
    const std::string cls(ToString(static_cast<PriorityClass>(c)));
    const auto& waits = run.waits_s[c];
    double sum = 0;
    for (double w : waits) sum += w;
    out["wait_s"][cls] = {{"started", waits.size()},
                                 {"mean", waits.empty() ? 0.0 : sum / static_cast<double>(waits.size())},
                                 {"p50", Percentile(waits, 0.5)},
                                 {"p99", Percentile(waits, 0.99)}};
  }
  return out;
}

std::string TimeSeriesCsv(const EventRun& run) {
  std::ostringstream out;
  out << "t_s,alloc_pct,frag_pct,waiting,running,preemptions,wait_s_low,wait_s_medium,wait_s_high\n";
  for (const auto& p : run.series) {
    out << Number(static_cast<double>(p.t_ms) / 1000.0) << ',' << Number(p.alloc_pct) << ',' << Number(p.frag_pct)
        << ',' << p.waiting << ',' << p.running << ',' << p.preemptions;
    for (double wait : p.wait_s) out << ',' << (wait < 0 ? "" : Number(wait));
    out << '\n';
  }
  return out.str();
}

}  // namespace gpool::sim
