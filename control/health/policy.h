// The health policy: what the coordinator does about the health conditions
// its workers report. A pure function over a snapshot (no clock, no I/O, no
// state of its own), in the manner of the scheduler: the leader builds a
// HealthPolicyInput from the committed state and its worker table, calls
// EvaluateHealthPolicy, and proposes each returned action as a command
// (ToFenceCommand gives HealthFenceCmd's fields). Once those commands are
// applied and reflected in the next input, the same input yields no actions:
// the policy is idempotent, so calling it every loop turn, or again on a new
// leader, never repeats a fence.
//
// The rules, in the order they apply to each node:
//  1. What a condition asks for (FindingsOf):
//     - an XID is classified by the catalogue (xid_catalogue.h): application
//       and informational XIDs are recorded and never fence, whatever
//       severity the worker gave them; reset-gpu, reboot-node and fatal XIDs
//       fence their GPU. XIDs 63/64 fence only with a remap pending on that GPU.
//     - a kind listed in never_fence never fences.
//     - a condition first seen at or before the operator's last uncordon of
//       the node (operator_uncordon_ms) never fences: the operator overrode it.
//     - `slow` (gpool probe) fences the node by slow_action.
//     - any other condition at least fence_min_severity: on "gpu/<i>" it marks
//       GPU i unhealthy and fences the node by device_action; elsewhere (NIC,
//       fabric manager, disk, ...) it fences the node by node_action. gpu-lost
//       does both: the GPU is marked and the node fenced by node_action.
//  2. Exempt nodes (admin label exempt_label_key=exempt_label_value) are
//     never fenced: each fence the policy would make becomes one Suppressed
//     alert instead.
//  3. The circuit breaker (only in clusters of at least
//     min_nodes_for_breaker nodes): a node counts as fenced in the window if
//     recent_fences has it within breaker_window_ms of now, or it is
//     cordoned by health since then (GPU marks carry no time in the state:
//     the caller passes them in recent_fences). A fence on a node not yet fenced is
//     made only while fenced + 1 <= max_fenced_fraction x nodes; the first
//     one refused opens the breaker (BreakerOpen, once), and every refused
//     fence becomes a Suppressed alert. While open, no node not yet fenced is
//     fenced. It closes (BreakerClose) when everything waiting to be fenced
//     fits: fenced + waiting <= fraction x nodes; those then get fenced in
//     the same evaluation. Nodes fenced now or within the window may get
//     further fences (one more bad GPU, a re-fence after a lift) either way:
//     they add no node to the count.
//  4. Lifting: a node cordoned by health whose conditions have been clear
//     (nothing in it would fence, rule 1) for uncordon_after_clear_rounds
//     consecutive health-check rounds is uncordoned, and the GPUs the policy
//     marked unhealthy on it are marked healthy again. An operator's cordon
//     is never lifted. uncordon_after_clear_rounds = 0 turns lifting off.
//     A marked GPU on a node that is not cordoned by health is restored by
//     the same rule.
//  5. With `enabled = false` the policy returns nothing.
//
// Thread rules: none; everything is a value.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "control/health/policy_config.h"
#include "control/health/xid_catalogue.h"
#include "protocol/health.h"
#include "protocol/model/health_fence.h"

namespace gpool::health {

// One node as the policy sees it.
struct NodeHealthInput {
  std::string name;
  bool cordoned = false;
  std::string cordon_reason;   // "operator" or "health" (who cordoned it); "" when not cordoned
  int64_t cordon_ms = 0;       // wall clock of the cordon; counts toward the breaker's window when by health
  std::map<std::string, std::string> labels;  // the admin labels (where the exempt label lives)
  std::vector<HealthCondition> conditions;    // as committed (NodeRecord::health)
  uint32_t gpu_count = 0;                      // GPUs the node has (indices 0..gpu_count-1)
  std::vector<uint32_t> unhealthy_gpus;        // GPUs the policy has marked unhealthy (NodeRecord::unhealthy_gpus)
  // Clear rounds: health_rounds from the node's latest heartbeat, and the
  // health_rounds at which its conditions last became clear (nullopt: not
  // clear now, or not seen clear yet). Keep the latter with UpdateClearSince.
  uint64_t health_rounds = 0;
  std::optional<uint64_t> clear_since_rounds;
  // Wall clock of the operator's last uncordon of this node (0: none). The
  // operator has seen the conditions raised before it and put the node back:
  // those no longer fence (a manual uncordon ends the automation for them);
  // a condition raised after it fences as usual.
  int64_t operator_uncordon_ms = 0;
};

// A health fence made at some time: a node cordoned or drained, or one of its
// GPUs marked unhealthy, by the policy. The caller passes every one it made
// within the breaker's window (from the committed event stream, or the fence
// commands it saw applied); older ones are ignored. A health cordon still in
// place counts by its cordon_ms without being listed; a GPU mark counts only
// when listed here.
struct FenceRecord {
  std::string node;
  int64_t time_ms = 0;
};

struct HealthPolicyInput {
  std::vector<NodeHealthInput> nodes;  // any order; the output is in node-name order
  // Nodes in the cluster for the breaker's share; 0: nodes.size().
  uint32_t cluster_size = 0;
  std::vector<FenceRecord> recent_fences;
  bool breaker_open = false;          // as committed (ClusterState::health_breaker_open)
  std::set<std::string> alerted;      // Suppressed::dedupe_key values already committed
  int64_t now_ms = 0;                 // the caller's wall clock (only compared with fence times)
};

// --- Actions ------------------------------------------------------------------

struct SetDeviceHealth {
  std::string node;
  uint32_t gpu = 0;
  bool healthy = false;
  std::string reason;
  bool operator==(const SetDeviceHealth&) const = default;
};
struct Cordon {
  std::string node;
  std::string reason;
  bool operator==(const Cordon&) const = default;
};
// Cordon, and stop the node's running tasks with grace_ms, to be requeued.
struct Drain {
  std::string node;
  uint32_t grace_ms = 0;
  std::string reason;
  bool operator==(const Drain&) const = default;
};
struct Uncordon {
  std::string node;
  std::string reason;
  bool operator==(const Uncordon&) const = default;
};
struct BreakerOpen {
  uint32_t fenced = 0;  // nodes fenced in the window
  uint32_t total = 0;   // nodes in the cluster
  std::string reason;
  bool operator==(const BreakerOpen&) const = default;
};
struct BreakerClose {
  uint32_t fenced = 0;
  uint32_t total = 0;
  std::string reason;
  bool operator==(const BreakerClose&) const = default;
};
// A fence the policy held back: record and alert only.
struct Suppressed {
  std::string node;
  std::string why;        // "exempt" | "breaker"
  std::string condition;  // the condition's key, kind@device
  std::string reason;     // for people
  // "suppressed:<why>:<node>:<kind@device>:<first_seen_ms>": one alert per
  // occurrence; pass it back in HealthPolicyInput::alerted once committed.
  std::string dedupe_key;
  bool operator==(const Suppressed&) const = default;
};

using HealthAction = std::variant<SetDeviceHealth, Cordon, Drain, Uncordon, BreakerOpen, BreakerClose, Suppressed>;

// Order: a breaker change first, then per node in name order: GPU marks,
// then the node's cordon/drain/uncordon, then its Suppressed alerts.
std::vector<HealthAction> EvaluateHealthPolicy(const HealthPolicyInput& input, const HealthPolicyConfig& config,
                                               const XidCatalogue& catalogue);

// --- Helpers for the caller -------------------------------------------------

// What one condition asks the policy to do (rule 1).
enum class FenceScope : uint8_t {
  kNone,    // recorded only
  kDevice,  // mark the GPU unhealthy, fence the node by device_action
  kNode,    // fence the node by node_action
  kLost,    // gpu-lost: mark the GPU and fence the node by node_action
  kSlow,    // fence the node by slow_action
};
struct Finding {
  const HealthCondition* condition = nullptr;
  FenceScope scope = FenceScope::kNone;
  std::optional<uint32_t> gpu;  // the GPU to mark, for kDevice and kLost on a GPU the node has
  std::string reason;           // "xid 79 (reboot-node) on gpu/3"
};
std::vector<Finding> FindingsOf(const NodeHealthInput& node, const HealthPolicyConfig& config,
                                const XidCatalogue& catalogue);

// True when nothing on the node would fence (rule 1): the "clear" of
// uncordon_after_clear_rounds.
bool NodeIsClear(const NodeHealthInput& node, const HealthPolicyConfig& config, const XidCatalogue& catalogue);

// The next clear_since_rounds, given the previous one, whether the node is
// clear now and its health_rounds now. Call it whenever either changes (a
// heartbeat, a committed condition change). A worker restart restarts its
// round count, so rounds below the mark restart the count.
std::optional<uint64_t> UpdateClearSince(std::optional<uint64_t> previous, bool clear_now, uint64_t health_rounds);

// The fields of the HealthFenceCmd (control/state/commands.h) that carries
// an action (protocol/model/health_fence.h). A Suppressed's reason starts
// with its dedupe key and " ".
struct FenceCommandFields {
  std::string node;
  HealthFenceAction action = HealthFenceAction::kCordon;
  uint32_t gpu = 0;
  uint32_t grace_ms = 0;
  std::string reason;
  bool operator==(const FenceCommandFields&) const = default;
};
FenceCommandFields ToFenceCommand(const HealthAction& action);

}  // namespace gpool::health
