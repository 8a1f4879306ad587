#include "protocol/health.h"
#include "protocol/event.h"

#include <array>
#include <charconv>

namespace gpool {
namespace {

constexpr std::array<std::string_view, kHealthKindCount> kKinds = {
    "xid",          "ecc-uncorrectable", "retired-pages-pending", "row-remap-pending",
    "row-remap-failure", "nvlink-down",  "gpu-lost",              "thermal",
    "power",        "ib-port-down",      "ib-rate-degraded",      "eth-down",
    "eth-speed-degraded", "fabricmanager-down", "peermem-missing", "disk-low",
    "coordinator-unreachable", "slow", "gpu-reset", "fabricmanager-restart"};
constexpr std::array<std::string_view, 3> kSeverities = {"warning", "degraded", "fatal"};

// More conditions than any node can honestly have (8 GPUs x 18 kinds plus
// NICs): a longer list is a broken or hostile worker.
constexpr size_t kMaxConditions = 512;
constexpr size_t kMaxDevice = 128;
constexpr size_t kMaxMessage = 1024;

constexpr std::array<std::string_view, kEventKindCount> kEventKinds = {
    "health-raised", "health-cleared", "node-cordoned", "node-uncordoned", "node-not-ready",
    "node-ready",    "node-lost",      "task-lost",     "task-requeued",   "task-preempted",
    "task-reclaimed", "health-breaker-open", "health-breaker-closed", "health-fence-suppressed",
    "task-over-share", "alert-firing", "alert-resolved", "job-scaled"};

}  // namespace

std::string_view ToString(EventKind k) { return kEventKinds[static_cast<size_t>(k)]; }
std::optional<EventKind> EventKindFromString(std::string_view s) {
  for (size_t i = 0; i < kEventKinds.size(); ++i) {
    if (kEventKinds[i] == s) return static_cast<EventKind>(i);
  }
  return std::nullopt;
}

std::string_view ToString(HealthKind k) { return kKinds[static_cast<size_t>(k)]; }
std::optional<HealthKind> HealthKindFromString(std::string_view s) {
  for (size_t i = 0; i < kKinds.size(); ++i) {
    if (kKinds[i] == s) return static_cast<HealthKind>(i);
  }
  return std::nullopt;
}
std::string_view ToString(HealthSeverity s) { return kSeverities[static_cast<size_t>(s)]; }
std::optional<HealthSeverity> HealthSeverityFromString(std::string_view s) {
  for (size_t i = 0; i < kSeverities.size(); ++i) {
    if (kSeverities[i] == s) return static_cast<HealthSeverity>(i);
  }
  return std::nullopt;
}

std::optional<uint32_t> GpuIndexOf(std::string_view device) {
  constexpr std::string_view kPrefix = "gpu/";
  if (device.substr(0, kPrefix.size()) != kPrefix) return std::nullopt;
  const std::string_view digits = device.substr(kPrefix.size());
  uint32_t index = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
  if (ec != std::errc() || end != digits.data() + digits.size() || digits.empty()) return std::nullopt;
  return index;
}

namespace {

// What a kind added after kHealthKindsBeforeRepairs is told to an older
// coordinator as; nullopt: left out. Every new kind needs its row.
std::optional<HealthKind> HealthKindForOlderCoordinator(HealthKind kind) {
  static_assert(kHealthKindCount == 20, "a new health kind: say here what an older coordinator is told instead");
  switch (kind) {
    case HealthKind::kGpuReset: return HealthKind::kGpuLost;
    case HealthKind::kFabricmanagerRestart: return std::nullopt;
    default: return kind;
  }
}

}  // namespace

std::vector<HealthCondition> HealthForCoordinator(const std::vector<HealthCondition>& conditions, uint32_t known,
                                                  bool* changed) {
  std::vector<HealthCondition> out;
  out.reserve(conditions.size());
  bool any = false;
  for (const HealthCondition& c : conditions) {
    const std::optional<HealthKind> kind = HealthKindFromString(c.kind);
    if (!kind || static_cast<uint32_t>(*kind) < known) {
      out.push_back(c);
      continue;
    }
    any = true;
    const std::optional<HealthKind> older = HealthKindForOlderCoordinator(*kind);
    if (!older) continue;
    HealthCondition told = c;
    told.kind = std::string(ToString(*older));
    told.message = "(" + c.kind + ", reported as " + told.kind + " to a coordinator older than it) " + c.message;
    out.push_back(std::move(told));
  }
  if (changed != nullptr) *changed = any;
  return out;
}

std::string CheckHealthConditions(const std::vector<HealthCondition>& conditions) {
  if (conditions.size() > kMaxConditions) {
    return "a node reports at most " + std::to_string(kMaxConditions) + " health conditions, not " +
           std::to_string(conditions.size());
  }
  for (const auto& c : conditions) {
    if (!HealthKindFromString(c.kind)) return "unknown health condition kind '" + c.kind.substr(0, 64) + "'";
    if (!HealthSeverityFromString(c.severity)) {
      return "health condition severity '" + c.severity.substr(0, 64) + "' is not one of warning, degraded or fatal";
    }
    if (c.device.size() > kMaxDevice) return "health condition device names are at most 128 bytes";
    if (c.message.size() > kMaxMessage) return "health condition messages are at most 1024 bytes";
  }
  return "";
}

}  // namespace gpool
