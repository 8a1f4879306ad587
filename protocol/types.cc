#include "protocol/types.h"

#include <array>

namespace gpool {

void Resources::Pack(wire::Packer& p) const {
  p.BeginMap(3);
  p.Field("gpus", gpus);
  p.Field("cpu_milli", cpu_milli);
  p.Field("memory_mib", memory_mib);
}

void Resources::Unpack(wire::ObjectReader& r) {
  r.Optional("gpus", &gpus);
  r.Optional("cpu_milli", &cpu_milli);
  r.Optional("memory_mib", &memory_mib);
}

void TaskGroupSpec::Pack(wire::Packer& p) const {
  p.BeginMap(5);
  p.Field("name", name);
  p.Field("replicas", replicas);
  p.Field("command", command);
  p.Field("env", env);
  p.Field("resources", resources);
}

void TaskGroupSpec::Unpack(wire::ObjectReader& r) {
  r.Optional("name", &name);
  r.Optional("replicas", &replicas);
  r.Required("command", &command);
  r.Optional("env", &env);
  r.Optional("resources", &resources);
}

uint32_t JobSpec::TotalTasks() const {
  uint64_t total = 0;
  for (const auto& group : tasks) total += group.replicas;
  return total > UINT32_MAX ? UINT32_MAX : static_cast<uint32_t>(total);
}

void JobSpec::Pack(wire::Packer& p) const {
  p.BeginMap(4);
  p.Field("name", name);
  p.Field("queue", queue);
  p.Field("priority", priority);
  p.Field("tasks", tasks);
}

void JobSpec::Unpack(wire::ObjectReader& r) {
  r.Required("name", &name);
  r.Optional("queue", &queue);
  r.Optional("priority", &priority);
  r.Required("tasks", &tasks);
}

void GpuInfo::Pack(wire::Packer& p) const {
  p.BeginMap(8);
  p.Field("index", index);
  p.Field("uuid", uuid);
  p.Field("vendor", vendor);
  p.Field("model", model);
  p.Field("memory_mib", memory_mib);
  p.Field("numa", numa);
  p.Field("nvlink_peers", nvlink_peers);
  p.Field("healthy", healthy);
}

void GpuInfo::Unpack(wire::ObjectReader& r) {
  r.Required("index", &index);
  r.Required("uuid", &uuid);
  r.Optional("vendor", &vendor);
  r.Optional("model", &model);
  r.Optional("memory_mib", &memory_mib);
  r.Optional("numa", &numa);
  r.Optional("nvlink_peers", &nvlink_peers);
  r.Optional("healthy", &healthy);
}

void NumaInfo::Pack(wire::Packer& p) const {
  p.BeginMap(3);
  p.Field("id", id);
  p.Field("cpu_milli", cpu_milli);
  p.Field("memory_mib", memory_mib);
}

void NumaInfo::Unpack(wire::ObjectReader& r) {
  r.Required("id", &id);
  r.Optional("cpu_milli", &cpu_milli);
  r.Optional("memory_mib", &memory_mib);
}

void NicInfo::Pack(wire::Packer& p) const {
  p.BeginMap(3);
  p.Field("name", name);
  p.Field("leaf_switch", leaf_switch);
  p.Field("speed_gbps", speed_gbps);
}

void NicInfo::Unpack(wire::ObjectReader& r) {
  r.Required("name", &name);
  r.Optional("leaf_switch", &leaf_switch);
  r.Optional("speed_gbps", &speed_gbps);
}

void NodeSpec::Pack(wire::Packer& p) const {
  p.BeginMap(8);
  p.Field("name", name);
  p.Field("hostname", hostname);
  p.Field("cpu_milli", cpu_milli);
  p.Field("memory_mib", memory_mib);
  p.Field("gpus", gpus);
  p.Field("numa", numa);
  p.Field("nics", nics);
  p.Field("labels", labels);
}

void NodeSpec::Unpack(wire::ObjectReader& r) {
  r.Required("name", &name);
  r.Optional("hostname", &hostname);
  r.Required("cpu_milli", &cpu_milli);
  r.Required("memory_mib", &memory_mib);
  r.Optional("gpus", &gpus);
  r.Optional("numa", &numa);
  r.Optional("nics", &nics);
  r.Optional("labels", &labels);
}

namespace {

constexpr std::array<std::string_view, 5> kJobStates = {"Pending", "Running", "Succeeded", "Failed", "Cancelled"};
constexpr std::array<std::string_view, 7> kTaskStates = {"Pending",   "Bound",     "Running", "Succeeded",
                                                         "Failed",    "Cancelled", "Lost"};
constexpr std::array<std::string_view, 2> kNodeStates = {"Ready", "NotReady"};

template <typename E, size_t N>
std::optional<E> FromName(const std::array<std::string_view, N>& names, std::string_view s) {
  for (size_t i = 0; i < N; ++i) {
    if (names[i] == s) return static_cast<E>(i);
  }
  return std::nullopt;
}

}  // namespace

std::string_view ToString(JobState s) { return kJobStates[static_cast<size_t>(s)]; }
std::string_view ToString(TaskState s) { return kTaskStates[static_cast<size_t>(s)]; }
std::string_view ToString(NodeState s) { return kNodeStates[static_cast<size_t>(s)]; }
std::optional<JobState> JobStateFromString(std::string_view s) { return FromName<JobState>(kJobStates, s); }
std::optional<TaskState> TaskStateFromString(std::string_view s) { return FromName<TaskState>(kTaskStates, s); }
std::optional<NodeState> NodeStateFromString(std::string_view s) { return FromName<NodeState>(kNodeStates, s); }

bool IsTerminal(JobState s) { return s == JobState::kSucceeded || s == JobState::kFailed || s == JobState::kCancelled; }
bool IsTerminal(TaskState s) {
  return s == TaskState::kSucceeded || s == TaskState::kFailed || s == TaskState::kCancelled || s == TaskState::kLost;
}

}  // namespace gpool
