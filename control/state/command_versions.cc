#include "control/state/command_versions.h"

#include <type_traits>
#include <utility>

namespace gpool::state {
namespace {

constexpr uint32_t kIssue50 = 2;

StateVersionNeed Needs(uint32_t version, std::string what) { return {version, std::move(what)}; }

StateVersionNeed ForJob(const JobSpec& spec) {
  // Once, not per submission: this runs on every proposal.
  static const JobSpec defaults;
  if (!spec.node_policy.empty() && spec.node_policy != defaults.node_policy) {
    return Needs(kIssue50, "a job's node_policy");
  }
  if (!spec.gpu_policy.empty() && spec.gpu_policy != defaults.gpu_policy) {
    return Needs(kIssue50, "a job's gpu_policy");
  }
  for (const auto& group : spec.tasks) {
    if (group.resources.exclusive_cores) return Needs(kIssue50, "exclusive cores");
    if (group.scale.Enabled()) return Needs(kIssue50, "a task group's scale rules");
  }
  return {};
}

StateVersionNeed ForQueue(const UpdateQueue& update) {
  if (update.op == QueueOp::kGrantClass || update.op == QueueOp::kRevokeClass) {
    return Needs(kIssue50, "a class grant");
  }
  if (!update.keep.empty()) return Needs(kIssue50, "a queue update that keeps fields it leaves out");
  static const QueueSpec defaults;
  if (update.spec.preempting_classes != defaults.preempting_classes ||
      update.spec.low_reclaimable != defaults.low_reclaimable) {
    return Needs(kIssue50, "a queue's preemption policy");
  }
  return {};
}

}  // namespace

StateVersionNeed StateVersionNeeded(const CommandBody& body) {
  return std::visit(
      [](const auto& cmd) -> StateVersionNeed {
        using T = std::decay_t<decltype(cmd)>;
        if constexpr (std::is_same_v<T, CreditCmd>) {
          return Needs(kIssue50, "a credit account");
        } else if constexpr (std::is_same_v<T, ScaleJobCmd>) {
          return Needs(kIssue50, "a scale rule's decision");
        } else if constexpr (std::is_same_v<T, UpdatePricesCmd>) {
          if (cmd.keep_billing || !(cmd.table.billing == BillingRules{})) {
            return Needs(kIssue50, "billing rules in the price table");
          }
          return {};
        } else if constexpr (std::is_same_v<T, SubmitJobCmd>) {
          return ForJob(cmd.spec);
        } else if constexpr (std::is_same_v<T, UpdateQueueCmd>) {
          return ForQueue(cmd.update);
        } else {
          return {};
        }
      },
      body);
}

}  // namespace gpool::state
