#include "protocol/types.h"

#include <array>

namespace gpool {

uint32_t JobSpec::TotalTasks() const {
  uint64_t total = 0;
  for (const auto& group : tasks) total += group.replicas;
  return total > UINT32_MAX ? UINT32_MAX : static_cast<uint32_t>(total);
}

namespace {

constexpr std::array<std::string_view, 5> kJobStates = {"Pending", "Running", "Succeeded", "Failed", "Cancelled"};
constexpr std::array<std::string_view, kNodePoolCount> kNodePools = {"public", "pooled", "exclusive"};
constexpr auto kTaskStates = EnumNames<TaskState>::kNames;
constexpr auto kNodeStates = EnumNames<NodeState>::kNames;
constexpr std::array<std::string_view, 3> kRestartPolicies = {"never", "on-failure", "on-node-loss"};
constexpr std::array<std::string_view, kPriorityClassCount> kPriorityClasses = {"low", "medium", "high", "system"};
constexpr std::array<std::string_view, 3> kNumaPolicies = {"none", "best-effort", "single-numa-node"};
constexpr std::array<std::string_view, 3> kNetworkModes = {"none", "best-effort", "single-switch"};
constexpr std::array<std::string_view, 3> kPlacementPolicies = {"default", "binpack", "spread"};
constexpr std::array<std::string_view, 3> kSharingQos = {"best-effort", "fixed-share", "burst-share"};
constexpr auto kTaskEventKinds = EnumNames<TaskEventKind>::kNames;

template <typename E, size_t N>
std::optional<E> FromName(const std::array<std::string_view, N>& names, std::string_view s) {
  for (size_t i = 0; i < N; ++i) {
    if (names[i] == s) return static_cast<E>(i);
  }
  return std::nullopt;
}

template <size_t N>
std::string ChoicesOf(const std::array<std::string_view, N>& names) {
  std::string out;
  for (size_t i = 0; i < N; ++i) {
    if (i > 0) out += i + 1 == N ? " or " : ", ";
    out += names[i];
  }
  return out;
}

}  // namespace

std::string_view ToString(JobState s) { return kJobStates[static_cast<size_t>(s)]; }
std::string_view ToString(TaskState s) { return kTaskStates[static_cast<size_t>(s)]; }
std::string_view ToString(NodeState s) { return kNodeStates[static_cast<size_t>(s)]; }
std::optional<JobState> JobStateFromString(std::string_view s) { return FromName<JobState>(kJobStates, s); }
std::optional<TaskState> TaskStateFromString(std::string_view s) { return FromName<TaskState>(kTaskStates, s); }
std::optional<NodeState> NodeStateFromString(std::string_view s) { return FromName<NodeState>(kNodeStates, s); }
std::string_view ToString(NodePool p) { return kNodePools[static_cast<size_t>(p)]; }
std::optional<NodePool> NodePoolFromString(std::string_view s) { return FromName<NodePool>(kNodePools, s); }
std::string_view ToString(PriorityClass c) { return kPriorityClasses[static_cast<size_t>(c)]; }
std::optional<PriorityClass> PriorityClassFromString(std::string_view s) {
  return FromName<PriorityClass>(kPriorityClasses, s);
}
std::string_view ToString(NumaPolicy p) { return kNumaPolicies[static_cast<size_t>(p)]; }
std::optional<NumaPolicy> NumaPolicyFromString(std::string_view s) { return FromName<NumaPolicy>(kNumaPolicies, s); }
std::string_view ToString(NetworkMode m) { return kNetworkModes[static_cast<size_t>(m)]; }
std::optional<NetworkMode> NetworkModeFromString(std::string_view s) {
  return FromName<NetworkMode>(kNetworkModes, s);
}
std::string_view ToString(PlacementPolicy p) { return kPlacementPolicies[static_cast<size_t>(p)]; }
std::optional<PlacementPolicy> PlacementPolicyFromString(std::string_view s) {
  return FromName<PlacementPolicy>(kPlacementPolicies, s);
}
std::string_view ToString(SharingQos q) { return kSharingQos[static_cast<size_t>(q)]; }
std::optional<SharingQos> SharingQosFromString(std::string_view s) { return FromName<SharingQos>(kSharingQos, s); }
std::string_view ToString(TaskEventKind k) { return kTaskEventKinds[static_cast<size_t>(k)]; }
std::optional<TaskEventKind> TaskEventKindFromString(std::string_view s) {
  return FromName<TaskEventKind>(kTaskEventKinds, s);
}
template <>
std::string Choices<NodePool>() { return ChoicesOf(kNodePools); }
template <>
std::string Choices<PriorityClass>() {  // highest first, as users rank them
  return ChoicesOf(std::array<std::string_view, kPriorityClassCount>{"system", "high", "medium", "low"});
}
template <>
std::string Choices<NumaPolicy>() { return ChoicesOf(kNumaPolicies); }
template <>
std::string Choices<NetworkMode>() { return ChoicesOf(kNetworkModes); }
template <>
std::string Choices<PlacementPolicy>() { return ChoicesOf(kPlacementPolicies); }
template <>
std::string Choices<SharingQos>() { return ChoicesOf(kSharingQos); }
template <>
std::string Choices<TaskEventKind>() { return ChoicesOf(kTaskEventKinds); }
template <>
std::string Choices<RestartPolicy>() { return ChoicesOf(kRestartPolicies); }
std::string_view ToString(RestartPolicy p) { return kRestartPolicies[static_cast<size_t>(p)]; }
std::optional<RestartPolicy> RestartPolicyFromString(std::string_view s) {
  return FromName<RestartPolicy>(kRestartPolicies, s);
}

bool IsTerminal(JobState s) { return s == JobState::kSucceeded || s == JobState::kFailed || s == JobState::kCancelled; }
bool IsTerminal(TaskState s) {
  return s == TaskState::kSucceeded || s == TaskState::kFailed || s == TaskState::kCancelled || s == TaskState::kLost;
}

std::string DeviceUuid(const GpuInfo& gpu, const DeviceGrant& grant) {
  if (grant.mig_profile.empty()) return gpu.uuid;
  if (gpu.mig_mode == "static") {
    for (const auto& instance : gpu.mig_instances) {
      if (instance.profile == grant.mig_profile && instance.start == grant.mig_start) return instance.uuid;
    }
    return "";
  }
  return "MIG-" + gpu.uuid + "-" + grant.mig_profile + "-" + std::to_string(grant.mig_start);
}

const GpuInfo* FindGpu(const NodeSpec& node, uint32_t index) {
  for (const auto& gpu : node.gpus) {
    if (gpu.index == index) return &gpu;
  }
  return nullptr;
}

}  // namespace gpool
