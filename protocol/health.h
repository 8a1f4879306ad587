// Node health as workers report it and the coordinator commits it: typed
// conditions, one per (kind, device). A worker's health monitor raises a
// condition when a check finds a fault and clears it (drops it from the
// list) when the check passes again; the coordinator's health policy
// decides what a condition does to the node (control/health/).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpool {

// What was found. On the wire and in files by the names in health.cc:
// "xid", "ecc-uncorrectable", "retired-pages-pending", "row-remap-pending",
// "row-remap-failure", "nvlink-down", "gpu-lost", "thermal", "power",
// "ib-port-down", "ib-rate-degraded", "eth-down", "eth-speed-degraded",
// "fabricmanager-down", "peermem-missing", "disk-low", "coordinator-unreachable",
// "slow".
enum class HealthKind : uint8_t {
  kXid,
  kEccUncorrectable,
  kRetiredPagesPending,
  kRowRemapPending,
  kRowRemapFailure,
  kNvlinkDown,
  kGpuLost,
  kThermal,
  kPower,
  kIbPortDown,
  kIbRateDegraded,
  kEthDown,
  kEthSpeedDegraded,
  kFabricmanagerDown,
  kPeermemMissing,
  kDiskLow,
  kCoordinatorUnreachable,
  kSlow,
  // The node's own repairs (issue 50, worker/health/gpu_repair.h and
  // service_check.h): a GPU drained, reset and checked (fatal while it is
  // out of service), and a restart of the fabric manager (a warning: the
  // record and the alert). A coordinator older than these refuses a list
  // that names them (CheckHealthConditions), so a worker tells it only what
  // it knows (HealthForCoordinator; RegisterNodeReply.health_kinds).
  kGpuReset,
  kFabricmanagerRestart,
};
inline constexpr size_t kHealthKindCount = 20;
// The kinds a coordinator from before the node's own repairs knows: the
// first 18. A RegisterNodeReply without health_kinds comes from one.
inline constexpr uint32_t kHealthKindsBeforeRepairs = 18;

// How bad: "fatal" (the device or node cannot run work), "degraded" (it runs,
// slower or with less), "warning" (recorded, nothing fenced). Ordered: a worse
// severity compares greater.
enum class HealthSeverity : uint8_t { kWarning, kDegraded, kFatal };

struct HealthCondition;

// `conditions` as a coordinator that knows only the first `known` kinds must
// be told them (kinds are only ever appended, so a count names what it
// knows): a kind it does not know is reported as the older kind with the
// same effect, or left out where it only informs. gpu-reset (fatal: the GPU
// is out of service while it is reset) goes as gpu-lost, which fences the
// GPU just the same; fabricmanager-restart (a warning, the record of a
// repair) is left out. Sets *changed (when given) if anything was.
std::vector<HealthCondition> HealthForCoordinator(const std::vector<HealthCondition>& conditions, uint32_t known,
                                                  bool* changed = nullptr);

std::string_view ToString(HealthKind k);
std::optional<HealthKind> HealthKindFromString(std::string_view s);
std::string_view ToString(HealthSeverity s);
std::optional<HealthSeverity> HealthSeverityFromString(std::string_view s);

struct HealthCondition {
  std::string kind;      // a HealthKind name
  std::string device;    // "gpu/0", "ib/mlx5_0/1", "eth/eth0", "disk", ""; what `kind` is about
  std::string severity;  // a HealthSeverity name
  int64_t first_seen_ms = 0;  // wall clock, when this condition was raised
  int64_t last_seen_ms = 0;   // wall clock, when a check last found it
  uint64_t count = 1;         // how many times it was found since raised (XIDs: events)
  std::string message;        // what the check saw, for people
  int32_t xid = 0;            // for kind "xid": the last XID code seen
  template <typename V>
  void Fields(V& v) {
    v.Required("kind", kind);
    v.Optional("device", device);
    v.Required("severity", severity);
    v.Optional("first_seen_ms", first_seen_ms);
    v.Optional("last_seen_ms", last_seen_ms);
    v.Optional("count", count);
    v.Optional("message", message);
    v.Optional("xid", xid);
  }
  bool operator==(const HealthCondition&) const = default;
  // (kind, device): at most one condition per key on a node.
  std::string Key() const { return kind + "@" + device; }
};

// The GPU index of a device named "gpu/<index>"; nullopt for any other.
std::optional<uint32_t> GpuIndexOf(std::string_view device);

// Checked at the edge: known kind and severity, sizes within bounds.
// InvalidArgument text, empty when valid.
std::string CheckHealthConditions(const std::vector<HealthCondition>& conditions);

}  // namespace gpool
