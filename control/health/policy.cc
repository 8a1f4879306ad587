#include "control/health/policy.h"
#include "protocol/health.h"
#include "protocol/model/health_fence.h"

#include <algorithm>
#include <map>
#include <utility>

namespace gpool::health {
namespace {

// Names in this file are unique within gpool_health (unity builds join its
// .cc files): policy helpers start with Policy or say what they are.
constexpr uint64_t kPolicyPpmScale = 1'000'000;

bool IsRemapKind(std::string_view kind) {
  return kind == "retired-pages-pending" || kind == "row-remap-pending" || kind == "row-remap-failure";
}

FenceAction Worse(FenceAction a, FenceAction b) { return static_cast<uint8_t>(a) >= static_cast<uint8_t>(b) ? a : b; }

bool NeverFences(const HealthPolicyConfig& config, HealthKind kind) {
  return std::find(config.never_fence.begin(), config.never_fence.end(), kind) != config.never_fence.end();
}

// The node-level action and the GPUs one node's findings ask for.
struct NodeWants {
  std::vector<uint32_t> gpus;  // sorted, distinct
  FenceAction action = FenceAction::kNone;
  std::vector<const Finding*> fencing;  // the findings that ask for anything
};

NodeWants PolicyWants(const std::vector<Finding>& findings, const HealthPolicyConfig& config) {
  NodeWants wants;
  for (const Finding& f : findings) {
    FenceAction action = FenceAction::kNone;
    switch (f.scope) {
      case FenceScope::kNone: continue;
      case FenceScope::kDevice: action = config.device_action; break;
      case FenceScope::kNode:
      case FenceScope::kLost: action = config.node_action; break;
      case FenceScope::kSlow: action = config.slow_action; break;
    }
    const bool marks = f.gpu.has_value() && (f.scope == FenceScope::kDevice || f.scope == FenceScope::kLost);
    if (marks) wants.gpus.push_back(*f.gpu);
    wants.action = Worse(wants.action, action);
    if (marks || action != FenceAction::kNone) wants.fencing.push_back(&f);
  }
  std::sort(wants.gpus.begin(), wants.gpus.end());
  wants.gpus.erase(std::unique(wants.gpus.begin(), wants.gpus.end()), wants.gpus.end());
  return wants;
}

std::string PolicyReasonText(const std::vector<const Finding*>& fencing) {
  std::string text;
  size_t shown = 0;
  for (const Finding* f : fencing) {
    if (shown == 3) {
      text += "; and " + std::to_string(fencing.size() - shown) + " more";
      break;
    }
    text += (text.empty() ? "" : "; ") + f->reason;
    ++shown;
  }
  return text;
}

bool Contains(const std::vector<uint32_t>& sorted, uint32_t value) {
  return std::binary_search(sorted.begin(), sorted.end(), value);
}

// Whether fencing `count` nodes in all leaves the share within the limit.
bool BreakerAllows(uint64_t count, uint64_t total, const HealthPolicyConfig& config) {
  return count * kPolicyPpmScale <= uint64_t{config.max_fenced_ppm} * total;
}

std::string BreakerText(uint64_t fenced, uint64_t total, const HealthPolicyConfig& config) {
  return std::to_string(fenced) + " of " + std::to_string(total) + " nodes fenced by health within " +
         std::to_string(config.breaker_window_ms / 1000) + " s (limit " +
         std::to_string(config.max_fenced_ppm / 10'000) + "." +
         std::to_string(config.max_fenced_ppm % 10'000 / 1'000) + "%)";
}

}  // namespace

std::vector<Finding> FindingsOf(const NodeHealthInput& node, const HealthPolicyConfig& config,
                                const XidCatalogue& catalogue) {
  std::vector<uint32_t> remap_pending;
  for (const HealthCondition& c : node.conditions) {
    if (!IsRemapKind(c.kind)) continue;
    if (auto gpu = GpuIndexOf(c.device)) remap_pending.push_back(*gpu);
  }
  std::sort(remap_pending.begin(), remap_pending.end());

  std::vector<Finding> findings;
  findings.reserve(node.conditions.size());
  for (const HealthCondition& c : node.conditions) {
    Finding f;
    f.condition = &c;
    const std::optional<HealthKind> kind = HealthKindFromString(c.kind);
    const HealthSeverity severity = HealthSeverityFromString(c.severity).value_or(HealthSeverity::kWarning);
    std::optional<uint32_t> gpu = GpuIndexOf(c.device);
    if (gpu && *gpu >= node.gpu_count) gpu.reset();  // not a GPU the node has: fence the node instead
    const std::string where = c.device.empty() ? "" : " on " + c.device;
    if (!kind || NeverFences(config, *kind)) {
      f.scope = FenceScope::kNone;
    } else if (node.operator_uncordon_ms > 0 && c.first_seen_ms <= node.operator_uncordon_ms) {
      f.scope = FenceScope::kNone;
      f.reason = c.kind + where + " (overridden by the operator's uncordon)";
    } else if (*kind == HealthKind::kXid) {
      const bool pending = gpu.has_value() && Contains(remap_pending, *gpu);
      const XidClass cls = catalogue.Classify(c.xid, pending);
      f.scope = Fences(cls) ? (gpu ? FenceScope::kDevice : FenceScope::kNode) : FenceScope::kNone;
      f.reason = "xid " + std::to_string(c.xid) + " (" + std::string(ToString(cls)) + ")" + where;
    } else if (*kind == HealthKind::kSlow) {
      f.scope = FenceScope::kSlow;
    } else if (severity >= config.fence_min_severity) {
      if (*kind == HealthKind::kGpuLost) {
        f.scope = FenceScope::kLost;
      } else {
        f.scope = gpu ? FenceScope::kDevice : FenceScope::kNode;
      }
    }
    if (f.scope == FenceScope::kDevice || f.scope == FenceScope::kLost) f.gpu = gpu;
    if (f.reason.empty()) f.reason = c.kind + where + " (" + c.severity + ")";
    findings.push_back(std::move(f));
  }
  return findings;
}

bool NodeIsClear(const NodeHealthInput& node, const HealthPolicyConfig& config, const XidCatalogue& catalogue) {
  const std::vector<Finding> findings = FindingsOf(node, config, catalogue);
  return PolicyWants(findings, config).fencing.empty();
}

std::optional<uint64_t> UpdateClearSince(std::optional<uint64_t> previous, bool clear_now, uint64_t health_rounds) {
  if (!clear_now) return std::nullopt;
  if (previous && *previous <= health_rounds) return previous;
  return health_rounds;
}

std::vector<HealthAction> EvaluateHealthPolicy(const HealthPolicyInput& input, const HealthPolicyConfig& config,
                                               const XidCatalogue& catalogue) {
  std::vector<HealthAction> out;
  if (!config.enabled) return out;

  std::vector<const NodeHealthInput*> nodes;
  nodes.reserve(input.nodes.size());
  for (const NodeHealthInput& n : input.nodes) nodes.push_back(&n);
  std::sort(nodes.begin(), nodes.end(), [](const auto* a, const auto* b) { return a->name < b->name; });

  const uint64_t total = input.cluster_size != 0 ? input.cluster_size : input.nodes.size();
  const bool breaker_applies = total > 0 && total >= config.min_nodes_for_breaker;
  const int64_t window_start = input.now_ms - config.breaker_window_ms;

  // Nodes fenced by health within the window.
  std::set<std::string> fenced;
  for (const FenceRecord& r : input.recent_fences) {
    if (r.time_ms >= window_start) fenced.insert(r.node);
  }
  for (const NodeHealthInput* n : nodes) {
    if (n->cordoned && n->cordon_reason == "health" && n->cordon_ms >= window_start) fenced.insert(n->name);
  }

  struct Plan {
    const NodeHealthInput* node = nullptr;
    std::vector<Finding> findings;
    NodeWants wants;
    std::vector<uint32_t> new_gpus;  // to mark unhealthy
    bool new_node_fence = false;     // to cordon or drain
    bool exempt = false;
    bool already_fenced = false;     // counted already: further fences need no room
    bool denied = false;             // held back by the breaker
  };
  std::vector<Plan> plans;
  plans.reserve(nodes.size());
  size_t waiting = 0;  // nodes not yet fenced that want a fence (the breaker's candidates)
  for (const NodeHealthInput* n : nodes) {
    Plan p;
    p.node = n;
    p.findings = FindingsOf(*n, config, catalogue);
    p.wants = PolicyWants(p.findings, config);
    for (uint32_t gpu : p.wants.gpus) {
      if (!Contains(n->unhealthy_gpus, gpu)) p.new_gpus.push_back(gpu);
    }
    p.new_node_fence = p.wants.action != FenceAction::kNone && !n->cordoned;
    auto label = n->labels.find(config.exempt_label_key);
    p.exempt = label != n->labels.end() && label->second == config.exempt_label_value;
    // Fenced now, or within the window (since lifted): one more fence on it
    // adds no node to the breaker's count.
    p.already_fenced =
        (n->cordoned && n->cordon_reason == "health") || !n->unhealthy_gpus.empty() || fenced.count(n->name) != 0;
    if (!p.exempt && !p.already_fenced && (!p.new_gpus.empty() || p.new_node_fence)) ++waiting;
    plans.push_back(std::move(p));
  }

  // The breaker: decide who may be fenced before acting on anyone.
  bool open = input.breaker_open;
  if (open && (!breaker_applies || BreakerAllows(fenced.size() + waiting, total, config))) {
    out.push_back(BreakerClose{static_cast<uint32_t>(fenced.size()), static_cast<uint32_t>(total),
                               "back under the limit: " + BreakerText(fenced.size(), total, config)});
    open = false;
  }
  uint64_t count = fenced.size();
  bool refused_any = false;
  for (Plan& p : plans) {
    const bool wants_new = !p.new_gpus.empty() || p.new_node_fence;
    if (p.exempt || p.already_fenced || !wants_new) continue;
    if (!breaker_applies) continue;
    if (!open && BreakerAllows(count + 1, total, config)) {
      ++count;
      continue;
    }
    p.denied = true;
    refused_any = true;
  }
  if (!open && refused_any) {
    out.push_back(BreakerOpen{static_cast<uint32_t>(count), static_cast<uint32_t>(total),
                              "stopped fencing: " + BreakerText(count, total, config) +
                                  "; one more would pass the limit"});
  }

  for (const Plan& p : plans) {
    const NodeHealthInput& n = *p.node;
    const std::string reason = PolicyReasonText(p.wants.fencing);
    const bool held = p.exempt || p.denied;
    if (!held) {
      for (uint32_t gpu : p.new_gpus) {
        std::string why;
        for (const Finding* f : p.wants.fencing) {
          if (f->gpu == gpu) why += (why.empty() ? "" : "; ") + f->reason;
        }
        out.push_back(SetDeviceHealth{n.name, gpu, false, why});
      }
    }
    // Lifting (rule 4): clear for enough rounds.
    const bool clear = p.wants.fencing.empty();
    const bool clear_long_enough = clear && config.uncordon_after_clear_rounds > 0 && n.clear_since_rounds &&
                                   n.health_rounds >= *n.clear_since_rounds &&
                                   n.health_rounds - *n.clear_since_rounds >= config.uncordon_after_clear_rounds;
    if (clear_long_enough) {
      const std::string lift = "clear for " + std::to_string(n.health_rounds - *n.clear_since_rounds) +
                               " health-check rounds";
      for (uint32_t gpu : n.unhealthy_gpus) out.push_back(SetDeviceHealth{n.name, gpu, true, lift});
      if (n.cordoned && n.cordon_reason == "health") out.push_back(Uncordon{n.name, lift});
    }
    if (!held && p.new_node_fence) {
      if (p.wants.action == FenceAction::kDrain) {
        out.push_back(Drain{n.name, config.drain_grace_ms, reason});
      } else {
        out.push_back(Cordon{n.name, reason});
      }
    }
    if (held && (!p.new_gpus.empty() || p.new_node_fence)) {
      const std::string why = p.exempt ? "exempt" : "breaker";
      for (const Finding* f : p.wants.fencing) {
        const HealthCondition& c = *f->condition;
        std::string key = "suppressed:" + why + ":" + n.name + ":" + c.Key() + ":" + std::to_string(c.first_seen_ms);
        if (input.alerted.count(key)) continue;
        std::string text = p.exempt ? "not fenced: node " + n.name + " carries " + config.exempt_label_key + "=" +
                                          config.exempt_label_value
                                    : "not fenced: the health circuit breaker is open";
        out.push_back(Suppressed{n.name, why, c.Key(), text + " (" + f->reason + ")", std::move(key)});
      }
    }
  }
  return out;
}

FenceCommandFields ToFenceCommand(const HealthAction& action) {
  using A = HealthFenceAction;
  struct Visitor {
    FenceCommandFields operator()(const SetDeviceHealth& a) const {
      return {a.node, a.healthy ? A::kGpuHealthy : A::kGpuUnhealthy, a.gpu, 0, a.reason};
    }
    FenceCommandFields operator()(const Cordon& a) const { return {a.node, A::kCordon, 0, 0, a.reason}; }
    FenceCommandFields operator()(const Drain& a) const { return {a.node, A::kDrain, 0, a.grace_ms, a.reason}; }
    FenceCommandFields operator()(const Uncordon& a) const { return {a.node, A::kUncordon, 0, 0, a.reason}; }
    FenceCommandFields operator()(const BreakerOpen& a) const { return {"", A::kBreakerOpen, 0, 0, a.reason}; }
    FenceCommandFields operator()(const BreakerClose& a) const { return {"", A::kBreakerClose, 0, 0, a.reason}; }
    FenceCommandFields operator()(const Suppressed& a) const {
      return {a.node, A::kSuppressed, 0, 0, a.dedupe_key + " " + a.reason};
    }
  };
  return std::visit(Visitor{}, action);
}

}  // namespace gpool::health
