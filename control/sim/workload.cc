#include "control/sim/workload.h"

#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "control/scheduler/fragmentation.h"
#include "control/sim/sim_cluster.h"

namespace gpool::sim {

namespace {

std::string JoinModels(const std::vector<std::string>& models) {
  std::string joined;
  for (const auto& model : models) joined += (joined.empty() ? "" : "|") + model;
  return joined;
}

topology::PriorityClass ClassOfQos(const std::string& qos) {
  if (qos == "LS") return topology::PriorityClass::kHigh;
  if (qos == "BE") return topology::PriorityClass::kLow;
  return topology::PriorityClass::kMedium;
}

// A share's size relative to a device is known only once placed; its
// compute percentage is the best guess before.
uint64_t PerGpuMilli(const Resources& need) {
  if (need.gpus == 0) return 0;
  if (need.gpu_memory_mib == 0 && need.gpu_compute_pct == 0) return 1000;
  return uint64_t{need.gpu_compute_pct} * 10;
}

}  // namespace

SimJob JobFromTracePod(const TracePod& pod, uint64_t id) {
  SimJob sim;
  sim.arrival_ms = pod.creation_time * 1000;
  const int64_t ran = pod.deletion_time - std::max(pod.scheduled_time, pod.creation_time);
  sim.duration_ms = ran > 0 ? ran * 1000 : -1;
  auto& job = sim.job;
  job.id = JobId(id);
  job.queue = "default";
  job.priority_class = ClassOfQos(pod.qos);
  job.node_policy = pod.node_policy;
  job.gpu_policy = pod.gpu_policy;
  topology::PendingTask task;
  task.resources.gpus = pod.num_gpu;
  task.resources.cpu_milli = pod.cpu_milli;
  task.resources.memory_mib = pod.memory_mib;
  if (pod.num_gpu > 0) task.resources.gpu_model = JoinModels(pod.gpu_spec);
  if (pod.num_gpu > 0 && pod.gpu_milli < 1000) task.resources.gpu_memory_mib = pod.gpu_milli * kTraceGpuUnits / 1000;
  sim.gpu_milli = uint64_t{pod.num_gpu} * (pod.num_gpu > 0 ? std::min<uint32_t>(pod.gpu_milli, 1000) : 0);
  job.tasks.push_back(std::move(task));
  return sim;
}

std::vector<SimJob> JobsFromTrace(const std::vector<TracePod>& pods) {
  std::vector<SimJob> jobs;
  jobs.reserve(pods.size());
  for (size_t i = 0; i < pods.size(); ++i) jobs.push_back(JobFromTracePod(pods[i], i + 1));
  return jobs;
}

std::vector<topology::WorkloadShape> TraceWorkload(const std::vector<TracePod>& pods) {
  std::vector<topology::WorkloadShape> samples;
  samples.reserve(pods.size());
  for (const auto& pod : pods) {
    samples.push_back({pod.num_gpu, pod.num_gpu > 0 ? std::min<uint32_t>(pod.gpu_milli, 1000) : 1000, pod.cpu_milli,
                       pod.num_gpu > 0 ? JoinModels(pod.gpu_spec) : "", 0, pod.memory_mib});
  }
  return scheduler::TargetWorkload(samples);
}

Result<std::vector<SimJob>> ParseJsonlWorkload(const std::string& text, const std::string& source) {
  static const std::set<std::string> kFields = {"name",     "arrival_s",  "duration_s",     "queue",
                                                "priority_class", "replicas", "gpus",    "cpu_milli",
                                                "memory_mib", "gpu_model", "gpu_memory_mib", "gpu_compute_pct",
                                                "node_policy", "gpu_policy"};
  std::vector<SimJob> jobs;
  std::istringstream lines(text);
  std::string line;
  for (size_t number = 1; std::getline(lines, line); ++number) {
    const auto first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos || line[first] == '#') continue;
    const std::string where = source + ":" + std::to_string(number) + ": ";
    nlohmann::json object = nlohmann::json::parse(line, nullptr, false);
    if (object.is_discarded() || !object.is_object()) {
      return Status::InvalidArgument(where + "not a JSON object");
    }
    for (const auto& [key, value] : object.items()) {
      if (!kFields.count(key)) return Status::InvalidArgument(where + "unknown field '" + key + "'");
    }
    auto number_of = [&](const char* key, double fallback, double low, double high) -> Result<double> {
      if (!object.contains(key)) return fallback;
      const auto& value = object[key];
      if (!value.is_number()) return Status::InvalidArgument(where + key + ": not a number");
      const double v = value.get<double>();
      if (v < low || v > high) {
        return Status::InvalidArgument(where + key + ": " + value.dump() + " is outside " + std::to_string(low) +
                                       ".." + std::to_string(high));
      }
      return v;
    };
    auto string_of = [&](const char* key, const std::string& fallback) -> Result<std::string> {
      if (!object.contains(key)) return fallback;
      if (!object[key].is_string()) return Status::InvalidArgument(where + key + ": not a string");
      return object[key].get<std::string>();
    };
    if (!object.contains("arrival_s")) return Status::InvalidArgument(where + "arrival_s: required");
    SimJob sim;
    GPOOL_ASSIGN_OR_RETURN(const double arrival, number_of("arrival_s", 0, 0, 1e10));
    GPOOL_ASSIGN_OR_RETURN(const double duration, number_of("duration_s", -1, -1, 1e10));
    GPOOL_ASSIGN_OR_RETURN(const double replicas, number_of("replicas", 1, 1, 10000));
    GPOOL_ASSIGN_OR_RETURN(const double gpus, number_of("gpus", 0, 0, 64));
    GPOOL_ASSIGN_OR_RETURN(const double cpu, number_of("cpu_milli", 0, 0, 1e9));
    GPOOL_ASSIGN_OR_RETURN(const double memory, number_of("memory_mib", 0, 0, 1e10));
    GPOOL_ASSIGN_OR_RETURN(const double gpu_memory, number_of("gpu_memory_mib", 0, 0, 1e7));
    GPOOL_ASSIGN_OR_RETURN(const double compute, number_of("gpu_compute_pct", 0, 0, 100));
    GPOOL_ASSIGN_OR_RETURN(std::string cls, string_of("priority_class", "medium"));
    if (!PriorityClassFromString(cls)) return NotOneOf<PriorityClass>(where + "priority_class", cls);
    if (gpus == 0 && cpu == 0) return Status::InvalidArgument(where + "the job asks for neither GPUs nor CPU");
    sim.arrival_ms = static_cast<int64_t>(arrival * 1000);
    sim.duration_ms = duration < 0 ? -1 : static_cast<int64_t>(duration * 1000);
    auto& job = sim.job;
    job.id = JobId(jobs.size() + 1);
    GPOOL_ASSIGN_OR_RETURN(job.queue, string_of("queue", "default"));
    GPOOL_ASSIGN_OR_RETURN(job.user, string_of("name", "job-" + std::to_string(jobs.size() + 1)));
    job.priority_class = *PriorityClassFromString(cls);
    for (const char* key : {"node_policy", "gpu_policy"}) {
      GPOOL_ASSIGN_OR_RETURN(std::string name, string_of(key, "default"));
      auto policy = PlacementPolicyFromString(name);
      if (!policy) return NotOneOf<PlacementPolicy>(where + key, name);
      (std::string_view(key) == "node_policy" ? job.node_policy : job.gpu_policy) = *policy;
    }
    Resources need;
    need.gpus = static_cast<uint32_t>(gpus);
    need.cpu_milli = static_cast<uint64_t>(cpu);
    need.memory_mib = static_cast<uint64_t>(memory);
    GPOOL_ASSIGN_OR_RETURN(need.gpu_model, string_of("gpu_model", ""));
    need.gpu_memory_mib = static_cast<uint64_t>(gpu_memory);
    need.gpu_compute_pct = static_cast<uint32_t>(compute);
    for (uint32_t r = 0; r < static_cast<uint32_t>(replicas); ++r) {
      job.tasks.push_back(topology::PendingTask{r, 0, need});
      sim.gpu_milli += need.gpus * PerGpuMilli(need);
    }
    jobs.push_back(std::move(sim));
  }
  return jobs;
}

Result<std::vector<SimJob>> LoadJsonlWorkload(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::NotFound(path + ": cannot open the workload file");
  std::stringstream text;
  text << in.rdbuf();
  return ParseJsonlWorkload(text.str(), path);
}

}  // namespace gpool::sim
