#include "control/health/policy.h"
#include "protocol/health.h"
#include "protocol/model/health_fence.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>

namespace gpool::health {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

HealthCondition Cond(std::string kind, std::string device, std::string severity, int32_t xid = 0,
                     int64_t first_seen = 1000) {
  HealthCondition c;
  c.kind = std::move(kind);
  c.device = std::move(device);
  c.severity = std::move(severity);
  c.xid = xid;
  c.first_seen_ms = first_seen;
  c.last_seen_ms = first_seen;
  return c;
}

NodeHealthInput Node(std::string name, std::vector<HealthCondition> conditions = {}, uint32_t gpus = 8) {
  NodeHealthInput n;
  n.name = std::move(name);
  n.conditions = std::move(conditions);
  n.gpu_count = gpus;
  return n;
}

// Applies actions the way ClusterState::ApplyHealthFence does, so the next
// input reflects them (the policy's idempotence is defined against this).
void Apply(const std::vector<HealthAction>& actions, HealthPolicyInput& input) {
  auto find = [&](const std::string& name) -> NodeHealthInput& {
    for (auto& n : input.nodes) {
      if (n.name == name) return n;
    }
    ADD_FAILURE() << "no node " << name;
    return input.nodes.front();
  };
  auto cordon = [&](NodeHealthInput& n) {
    if (n.cordoned) return;
    n.cordoned = true;
    n.cordon_reason = "health";
    n.cordon_ms = input.now_ms;
    input.recent_fences.push_back({n.name, input.now_ms});
  };
  for (const HealthAction& action : actions) {
    if (auto* a = std::get_if<SetDeviceHealth>(&action)) {
      auto& list = find(a->node).unhealthy_gpus;
      const bool listed = std::binary_search(list.begin(), list.end(), a->gpu);
      if (!a->healthy && !listed) {
        list.insert(std::lower_bound(list.begin(), list.end(), a->gpu), a->gpu);
        input.recent_fences.push_back({a->node, input.now_ms});
      }
      if (a->healthy && listed) list.erase(std::lower_bound(list.begin(), list.end(), a->gpu));
    } else if (auto* c = std::get_if<Cordon>(&action)) {
      cordon(find(c->node));
    } else if (auto* d = std::get_if<Drain>(&action)) {
      cordon(find(d->node));
    } else if (auto* u = std::get_if<Uncordon>(&action)) {
      auto& n = find(u->node);
      if (n.cordoned && n.cordon_reason == "health") {
        n.cordoned = false;
        n.cordon_reason.clear();
      }
    } else if (std::holds_alternative<BreakerOpen>(action)) {
      input.breaker_open = true;
    } else if (std::holds_alternative<BreakerClose>(action)) {
      input.breaker_open = false;
    } else if (auto* s = std::get_if<Suppressed>(&action)) {
      input.alerted.insert(s->dedupe_key);
    }
  }
}

const HealthPolicyConfig kDefaults;
const XidCatalogue kCatalogue;

std::vector<HealthAction> Eval(const HealthPolicyInput& input, const HealthPolicyConfig& config = kDefaults) {
  return EvaluateHealthPolicy(input, config, kCatalogue);
}

TEST(HealthPolicyTest, ApplicationXidsAreRecordedButNeverFence) {
  HealthPolicyInput input;
  for (int32_t xid : {13, 31, 43, 45, 68, 109}) {
    input.nodes.push_back(Node("n" + std::to_string(xid), {Cond("xid", "gpu/0", "fatal", xid)}));
  }
  EXPECT_THAT(Eval(input), IsEmpty());
  for (const auto& n : input.nodes) EXPECT_TRUE(NodeIsClear(n, kDefaults, kCatalogue)) << n.name;
}

TEST(HealthPolicyTest, AFatalXidMarksTheGpuAndCordonsTheNode) {
  HealthPolicyInput input;
  input.nodes = {Node("a", {Cond("xid", "gpu/2", "fatal", 79)}), Node("b")};
  const auto actions = Eval(input);
  ASSERT_EQ(actions.size(), 2u);
  EXPECT_EQ(std::get<SetDeviceHealth>(actions[0]), (SetDeviceHealth{"a", 2, false, "xid 79 (reboot-node) on gpu/2"}));
  EXPECT_EQ(std::get<Cordon>(actions[1]), (Cordon{"a", "xid 79 (reboot-node) on gpu/2"}));
  Apply(actions, input);
  EXPECT_THAT(Eval(input), IsEmpty());
}

TEST(HealthPolicyTest, DeviceActionDrainDrainsWithTheGrace) {
  HealthPolicyConfig config;
  config.device_action = FenceAction::kDrain;
  config.drain_grace_ms = 1234;
  HealthPolicyInput input;
  input.nodes = {Node("a", {Cond("ecc-uncorrectable", "gpu/1", "fatal")})};
  const auto actions = Eval(input, config);
  ASSERT_EQ(actions.size(), 2u);
  EXPECT_EQ(std::get<Drain>(actions[1]).grace_ms, 1234u);
  config.device_action = FenceAction::kNone;  // the GPU is still marked
  const auto only_gpu = Eval(input, config);
  ASSERT_EQ(only_gpu.size(), 1u);
  EXPECT_TRUE(std::holds_alternative<SetDeviceHealth>(only_gpu[0]));
}

TEST(HealthPolicyTest, NodeLevelConditionsCordonWithoutMarkingGpus) {
  HealthPolicyInput input;
  input.nodes = {Node("a", {Cond("ib-port-down", "ib/mlx5_0/1", "fatal")}),
                 Node("b", {Cond("gpu-lost", "gpu/3", "fatal")}),
                 Node("c", {Cond("coordinator-unreachable", "", "fatal")}),
                 Node("d", {Cond("ib-rate-degraded", "ib/mlx5_0/1", "degraded")})};
  const auto actions = Eval(input);
  ASSERT_EQ(actions.size(), 3u);
  EXPECT_EQ(std::get<Cordon>(actions[0]).node, "a");
  EXPECT_EQ(std::get<SetDeviceHealth>(actions[1]), (SetDeviceHealth{"b", 3, false, "gpu-lost on gpu/3 (fatal)"}));
  EXPECT_EQ(std::get<Cordon>(actions[2]).node, "b");
}

TEST(HealthPolicyTest, RetirementXidsFenceOnlyWithAPendingRemapOnThatGpu) {
  HealthPolicyInput input;
  input.nodes = {Node("a", {Cond("xid", "gpu/0", "fatal", 63), Cond("row-remap-pending", "gpu/1", "degraded")}),
                 Node("b", {Cond("xid", "gpu/0", "fatal", 63), Cond("row-remap-pending", "gpu/0", "degraded")})};
  const auto actions = Eval(input);
  ASSERT_EQ(actions.size(), 2u);
  EXPECT_EQ(std::get<SetDeviceHealth>(actions[0]).node, "b");
}

TEST(HealthPolicyTest, SlowNodesFollowSlowAction) {
  HealthPolicyInput input;
  input.nodes = {Node("a", {Cond("slow", "", "degraded")})};
  EXPECT_THAT(Eval(input), IsEmpty());
  HealthPolicyConfig config;
  config.slow_action = FenceAction::kCordon;
  const auto actions = Eval(input, config);
  ASSERT_EQ(actions.size(), 1u);
  EXPECT_EQ(std::get<Cordon>(actions[0]).node, "a");
}

TEST(HealthPolicyTest, ExemptNodesAreAlertedOnceAndNeverFenced) {
  HealthPolicyInput input;
  input.nodes = {Node("a", {Cond("xid", "gpu/0", "fatal", 48)})};
  input.nodes[0].labels["health.gpool.io/exempt"] = "true";
  const auto actions = Eval(input);
  ASSERT_EQ(actions.size(), 1u);
  const auto& s = std::get<Suppressed>(actions[0]);
  EXPECT_EQ(s.why, "exempt");
  EXPECT_EQ(s.dedupe_key, "suppressed:exempt:a:xid@gpu/0:1000");
  Apply(actions, input);
  EXPECT_THAT(Eval(input), IsEmpty());
  // Another occurrence (raised again later) is alerted again.
  input.nodes[0].conditions[0].first_seen_ms = 5000;
  EXPECT_EQ(Eval(input).size(), 1u);
}

TEST(HealthPolicyTest, TheBreakerStopsFencingAndClosesWhenTheBacklogFits) {
  HealthPolicyConfig config;  // 10 % of 20 nodes: 2 fences per window
  HealthPolicyInput input;
  input.now_ms = 1'000'000;
  for (int i = 0; i < 20; ++i) input.nodes.push_back(Node("n" + std::to_string(10 + i)));
  for (int i = 0; i < 4; ++i) input.nodes[i].conditions = {Cond("xid", "gpu/0", "fatal", 79)};
  auto actions = Eval(input, config);
  ASSERT_GE(actions.size(), 1u);
  EXPECT_EQ(std::get<BreakerOpen>(actions[0]).fenced, 2u);
  EXPECT_EQ(std::get<BreakerOpen>(actions[0]).total, 20u);
  size_t cordons = 0, suppressed = 0;
  for (const auto& a : actions) {
    cordons += std::holds_alternative<Cordon>(a);
    suppressed += std::holds_alternative<Suppressed>(a);
  }
  EXPECT_EQ(cordons, 2u);
  EXPECT_EQ(suppressed, 2u);
  Apply(actions, input);
  EXPECT_THAT(Eval(input, config), IsEmpty());

  // One suppressed node recovers: the other still does not fit beside the two.
  input.nodes[3].conditions.clear();
  input.now_ms += 1000;
  EXPECT_THAT(Eval(input, config), IsEmpty());
  // The window passes: 0 fenced in it + 1 waiting fits, so it closes and fences.
  input.now_ms += config.breaker_window_ms;
  actions = Eval(input, config);
  ASSERT_EQ(actions.size(), 3u);
  EXPECT_TRUE(std::holds_alternative<BreakerClose>(actions[0]));
  EXPECT_EQ(std::get<SetDeviceHealth>(actions[1]).node, "n12");
  EXPECT_EQ(std::get<Cordon>(actions[2]).node, "n12");
  Apply(actions, input);
  EXPECT_THAT(Eval(input, config), IsEmpty());
}

TEST(HealthPolicyTest, SmallClustersHaveNoBreaker) {
  HealthPolicyInput input;
  for (int i = 0; i < 5; ++i) input.nodes.push_back(Node("n" + std::to_string(i), {Cond("gpu-lost", "gpu/0", "fatal")}));
  const auto actions = Eval(input);
  EXPECT_EQ(actions.size(), 10u);
  for (const auto& a : actions) EXPECT_FALSE(std::holds_alternative<BreakerOpen>(a));
}

TEST(HealthPolicyTest, AHealthCordonIsLiftedAfterNClearRounds) {
  HealthPolicyInput input;
  input.nodes = {Node("a", {Cond("xid", "gpu/0", "fatal", 48)})};
  Apply(Eval(input), input);
  NodeHealthInput& a = input.nodes[0];
  ASSERT_TRUE(a.cordoned);
  a.conditions.clear();
  a.health_rounds = 10;
  a.clear_since_rounds = UpdateClearSince(std::nullopt, NodeIsClear(a, kDefaults, kCatalogue), a.health_rounds);
  ASSERT_EQ(a.clear_since_rounds, 10u);
  for (uint64_t rounds : {10, 11, 12}) {
    a.health_rounds = rounds;
    a.clear_since_rounds = UpdateClearSince(a.clear_since_rounds, true, rounds);
    EXPECT_THAT(Eval(input), IsEmpty()) << rounds;
  }
  a.health_rounds = 13;
  const auto actions = Eval(input);
  ASSERT_EQ(actions.size(), 2u);
  EXPECT_EQ(std::get<SetDeviceHealth>(actions[0]), (SetDeviceHealth{"a", 0, true, "clear for 3 health-check rounds"}));
  EXPECT_EQ(std::get<Uncordon>(actions[1]).node, "a");
  Apply(actions, input);
  EXPECT_THAT(Eval(input), IsEmpty());
}

TEST(HealthPolicyTest, AnOperatorCordonStaysButThePolicysGpuMarkIsLifted) {
  HealthPolicyInput input;
  input.nodes = {Node("a")};
  NodeHealthInput& a = input.nodes[0];
  a.cordoned = true;
  a.cordon_reason = "operator";
  a.unhealthy_gpus = {1};
  a.health_rounds = 7;
  a.clear_since_rounds = 1;
  const auto actions = Eval(input);
  ASSERT_EQ(actions.size(), 1u);
  EXPECT_EQ(std::get<SetDeviceHealth>(actions[0]), (SetDeviceHealth{"a", 1, true, "clear for 6 health-check rounds"}));
}

TEST(HealthPolicyTest, AnOperatorUncordonOverridesTheConditionsItSaw) {
  HealthPolicyInput input;
  input.nodes = {Node("a", {Cond("xid", "gpu/0", "fatal", 48, 1000)})};
  input.nodes[0].operator_uncordon_ms = 2000;  // after the XID was raised
  EXPECT_THAT(Eval(input), IsEmpty());
  EXPECT_TRUE(NodeIsClear(input.nodes[0], kDefaults, kCatalogue));
  // A condition raised after the uncordon fences again.
  input.nodes[0].conditions.push_back(Cond("ib-port-down", "ib/mlx5_0/1", "fatal", 0, 3000));
  const auto actions = Eval(input);
  ASSERT_EQ(actions.size(), 1u);
  EXPECT_EQ(std::get<Cordon>(actions[0]), (Cordon{"a", "ib-port-down on ib/mlx5_0/1 (fatal)"}));
}

TEST(HealthPolicyTest, ClearSinceRestartsWithTheWorkersRoundCount) {
  EXPECT_EQ(UpdateClearSince(std::nullopt, false, 5), std::nullopt);
  EXPECT_EQ(UpdateClearSince(4, false, 5), std::nullopt);
  EXPECT_EQ(UpdateClearSince(std::nullopt, true, 5), 5u);
  EXPECT_EQ(UpdateClearSince(4, true, 9), 4u);
  EXPECT_EQ(UpdateClearSince(40, true, 2), 2u);  // the worker restarted
}

TEST(HealthPolicyTest, DisabledDoesNothing) {
  HealthPolicyConfig config;
  config.enabled = false;
  HealthPolicyInput input;
  input.nodes = {Node("a", {Cond("xid", "gpu/0", "fatal", 79)})};
  EXPECT_THAT(Eval(input, config), IsEmpty());
}

// The actions travel by the names the log always had (old entries replay).
TEST(HealthPolicyTest, FenceCommandsUseTheStatesActionNames) {
  EXPECT_EQ(ToFenceCommand(SetDeviceHealth{"a", 3, false, "r"}),
            (FenceCommandFields{"a", HealthFenceAction::kGpuUnhealthy, 3, 0, "r"}));
  EXPECT_EQ(NameOf(ToFenceCommand(SetDeviceHealth{"a", 3, false, "r"}).action), "gpu-unhealthy");
  EXPECT_EQ(NameOf(ToFenceCommand(SetDeviceHealth{"a", 3, true, "r"}).action), "gpu-healthy");
  EXPECT_EQ(ToFenceCommand(Drain{"a", 500, "r"}), (FenceCommandFields{"a", HealthFenceAction::kDrain, 0, 500, "r"}));
  EXPECT_EQ(NameOf(ToFenceCommand(Drain{"a", 500, "r"}).action), "drain");
  EXPECT_EQ(NameOf(ToFenceCommand(Cordon{"a", "r"}).action), "cordon");
  EXPECT_EQ(NameOf(ToFenceCommand(Uncordon{"a", "r"}).action), "uncordon");
  EXPECT_EQ(NameOf(ToFenceCommand(BreakerOpen{1, 2, "r"}).action), "breaker-open");
  EXPECT_EQ(NameOf(ToFenceCommand(BreakerClose{1, 2, "r"}).action), "breaker-close");
  EXPECT_EQ(ToFenceCommand(Suppressed{"a", "exempt", "xid@gpu/0", "r", "k"}),
            (FenceCommandFields{"a", HealthFenceAction::kSuppressed, 0, 0, "k r"}));
  EXPECT_EQ(NameOf(HealthFenceAction::kSuppressed), "suppressed");
}

// --- Properties over random clusters ----------------------------------------

struct World {
  HealthPolicyConfig config;
  HealthPolicyInput input;
};

HealthCondition RandomCondition(std::mt19937_64& rng, uint32_t gpus, int64_t now) {
  const uint32_t gpu = gpus == 0 ? 0 : static_cast<uint32_t>(rng() % (gpus + 1));  // sometimes one it lacks
  const std::string device = "gpu/" + std::to_string(gpu);
  static const int32_t kXids[] = {13, 31, 48, 63, 79, 94, 8, 999, 154};
  switch (rng() % 9) {
    case 0: return Cond("xid", device, "fatal", kXids[rng() % std::size(kXids)], now);
    case 1: return Cond("ecc-uncorrectable", device, rng() % 2 ? "fatal" : "degraded", 0, now);
    case 2: return Cond("ib-port-down", "ib/mlx5_0/1", "fatal", 0, now);
    case 3: return Cond("disk-low", "disk", "degraded", 0, now);
    case 4: return Cond("slow", "", "degraded", 0, now);
    case 5: return Cond("gpu-lost", device, "fatal", 0, now);
    case 6: return Cond("row-remap-pending", device, "degraded", 0, now);
    case 7: return Cond("coordinator-unreachable", "", "fatal", 0, now);
    default: return Cond("fabricmanager-down", "", "fatal", 0, now);
  }
}

World RandomWorld(std::mt19937_64& rng) {
  World w;
  const FenceAction actions[] = {FenceAction::kNone, FenceAction::kCordon, FenceAction::kDrain};
  w.config.device_action = actions[rng() % 3];
  w.config.node_action = actions[rng() % 3];
  w.config.slow_action = actions[rng() % 3];
  const uint32_t ppms[] = {0, 50'000, 100'000, 300'000, 1'000'000};
  w.config.max_fenced_ppm = ppms[rng() % std::size(ppms)];
  w.config.min_nodes_for_breaker = static_cast<uint32_t>(rng() % 12);
  w.config.uncordon_after_clear_rounds = static_cast<uint32_t>(rng() % 4);
  w.config.breaker_window_ms = 10'000;
  w.input.now_ms = 100'000;
  const size_t nodes = 1 + rng() % 30;
  for (size_t i = 0; i < nodes; ++i) {
    NodeHealthInput n = Node("node-" + std::to_string(i), {}, static_cast<uint32_t>(rng() % 9));
    if (rng() % 7 == 0) n.labels[w.config.exempt_label_key] = "true";
    if (rng() % 9 == 0) n.labels[w.config.exempt_label_key] = "false";  // not exempt
    if (rng() % 10 == 0) {
      n.cordoned = true;
      n.cordon_reason = "operator";
    }
    if (rng() % 8 == 0) n.operator_uncordon_ms = w.input.now_ms + static_cast<int64_t>(rng() % 20'000);
    w.input.nodes.push_back(std::move(n));
  }
  return w;
}

bool Exempt(const World& w, const NodeHealthInput& n) {
  auto it = n.labels.find(w.config.exempt_label_key);
  return it != n.labels.end() && it->second == w.config.exempt_label_value;
}

std::string NodeOf(const HealthAction& a) {
  return std::visit(
      [](const auto& x) -> std::string {
        if constexpr (requires { x.node; }) {
          return x.node;
        } else {
          return "";
        }
      },
      a);
}

bool IsFence(const HealthAction& a) {
  if (auto* d = std::get_if<SetDeviceHealth>(&a)) return !d->healthy;
  return std::holds_alternative<Cordon>(a) || std::holds_alternative<Drain>(a);
}

TEST(HealthPolicyPropertyTest, RandomClustersKeepEveryRule) {
  std::mt19937_64 rng(20261102);
  for (int world_index = 0; world_index < 300; ++world_index) {
    World w = RandomWorld(rng);
    const uint64_t total = w.input.nodes.size();
    const bool breaker_applies = total >= w.config.min_nodes_for_breaker;
    for (int step = 0; step < 25; ++step) {
      SCOPED_TRACE("world " + std::to_string(world_index) + " step " + std::to_string(step));
      // The world moves: time, rounds, conditions raised and cleared.
      w.input.now_ms += static_cast<int64_t>(rng() % 4000);
      for (NodeHealthInput& n : w.input.nodes) {
        n.health_rounds += rng() % 3;
        const uint64_t roll = rng() % 10;
        if (roll == 0) {
          n.conditions.push_back(RandomCondition(rng, n.gpu_count, w.input.now_ms));
        } else if (roll == 1) {
          n.conditions.clear();
        } else if (roll == 2 && !n.conditions.empty()) {
          n.conditions.erase(n.conditions.begin() + static_cast<long>(rng() % n.conditions.size()));
        }
        n.clear_since_rounds =
            UpdateClearSince(n.clear_since_rounds, NodeIsClear(n, w.config, kCatalogue), n.health_rounds);
      }
      // Fenced within the window before this step, as the policy counts it.
      std::set<std::string> fenced_before;
      for (const auto& r : w.input.recent_fences) {
        if (r.time_ms >= w.input.now_ms - w.config.breaker_window_ms) fenced_before.insert(r.node);
      }
      for (const auto& n : w.input.nodes) {
        if (n.cordoned && n.cordon_reason == "health" && n.cordon_ms >= w.input.now_ms - w.config.breaker_window_ms) {
          fenced_before.insert(n.name);
        }
      }
      const auto actions = EvaluateHealthPolicy(w.input, w.config, kCatalogue);
      std::set<std::string> newly_fenced;
      for (const HealthAction& a : actions) {
        const std::string name = NodeOf(a);
        const NodeHealthInput* n = nullptr;
        for (const auto& candidate : w.input.nodes) {
          if (candidate.name == name) n = &candidate;
        }
        if (IsFence(a)) {
          ASSERT_NE(n, nullptr);
          // Exempt nodes are never fenced.
          EXPECT_FALSE(Exempt(w, *n)) << name;
          const bool already = (n->cordoned && n->cordon_reason == "health") || !n->unhealthy_gpus.empty();
          if (!already && !fenced_before.count(name)) newly_fenced.insert(name);
        }
        if (auto* u = std::get_if<Uncordon>(&a)) {
          ASSERT_NE(n, nullptr);
          // Only health cordons are lifted, and only after N clear rounds.
          EXPECT_EQ(n->cordon_reason, "health") << u->node;
          EXPECT_TRUE(NodeIsClear(*n, w.config, kCatalogue));
          ASSERT_TRUE(n->clear_since_rounds.has_value());
          EXPECT_GT(w.config.uncordon_after_clear_rounds, 0u);
          EXPECT_GE(n->health_rounds - *n->clear_since_rounds, w.config.uncordon_after_clear_rounds);
        }
        if (auto* d = std::get_if<SetDeviceHealth>(&a); d != nullptr && d->healthy) {
          ASSERT_NE(n, nullptr);
          EXPECT_TRUE(NodeIsClear(*n, w.config, kCatalogue));
        }
      }
      // The breaker: never more nodes fenced in the window than the share allows.
      if (breaker_applies && !newly_fenced.empty()) {
        EXPECT_LE((fenced_before.size() + newly_fenced.size()) * 1'000'000,
                  uint64_t{w.config.max_fenced_ppm} * total);
      }
      Apply(actions, w.input);
      // Idempotence: the same input, now reflecting the actions, asks for nothing.
      EXPECT_THAT(EvaluateHealthPolicy(w.input, w.config, kCatalogue), IsEmpty());
      if (HasFailure()) return;
    }
  }
}

}  // namespace
}  // namespace gpool::health
