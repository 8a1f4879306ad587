// ClusterState::nodes_needing_health (what a health policy round walks):
// after every command of a random script (registrations with and without
// conditions, worker reports, GPU fences and lifts, the policy's cordons,
// drains and lifts, operators' cordons, probe results, lost nodes) and
// across snapshots, it is exactly the nodes NeedsHealthLook says.
#include <random>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "control/state/cluster_state.h"
#include "control/state/test_specs.h"
#include "protocol/health.h"
#include "protocol/model/health_fence.h"
#include "protocol/model/node_update.h"
#include "protocol/model/probe.h"

namespace gpool::state {
namespace {

std::set<std::string> Expected(const ClusterState& state) {
  std::set<std::string> out;
  for (const auto& [name, node] : state.nodes()) {
    if (ClusterState::NeedsHealthLook(node)) out.insert(name);
  }
  return out;
}

std::vector<HealthCondition> Conditions(std::mt19937& random) {
  std::vector<HealthCondition> out;
  for (uint32_t n = random() % 3; n > 0; --n) {
    HealthCondition c;
    c.kind = random() % 2 == 0 ? "xid" : "ecc-uncorrectable";
    c.device = "gpu/" + std::to_string(random() % 4);
    c.severity = random() % 2 == 0 ? "fatal" : "degraded";
    c.xid = c.kind == "xid" ? 79 : 0;
    out.push_back(c);
  }
  return out;
}

TEST(HealthIndexStateTest, TheNodesNeedingAHealthLookAreExactlyThoseWithSomethingWrongAfterEveryCommand) {
  const std::vector<std::string> names = {"n1", "n2", "n3", "n4", "n5", "absent"};
  for (uint32_t seed = 1; seed <= 4; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937 random(seed);
    ClusterState state;
    uint64_t index = 0;
    size_t needing_seen = 0;
    for (int step = 0; step < 1'000; ++step) {
      if (step % 100 == 99) {
        // A snapshot and a restore (every hundredth step: under the
        // sanitizers a restore costs what a hundred commands do): the set is
        // rebuilt from the nodes.
        ClusterState restored;
        ASSERT_TRUE(restored.Restore(state.Snapshot()).ok());
        ASSERT_EQ(restored.nodes_needing_health(), Expected(restored)) << "step " << step;
        ASSERT_EQ(restored.nodes_needing_health(), state.nodes_needing_health()) << "step " << step;
        continue;
      }
      const std::string& node = names[random() % names.size()];
      CommandBody body;
      switch (random() % 7) {
        case 0: {
          RegisterNodeCmd reg{testing::MakeNode(node, 4), {}};
          reg.health = random() % 2 == 0 ? Conditions(random) : std::vector<HealthCondition>{};
          body = reg;
          break;
        }
        case 1:
          body = NodeHealthCmd{node, Conditions(random)};
          break;
        case 2:
          body = HealthFenceCmd{node,
                                random() % 2 == 0 ? HealthFenceAction::kGpuUnhealthy : HealthFenceAction::kGpuHealthy,
                                static_cast<uint32_t>(random() % 4), 0, "xid 79"};
          break;
        case 3: {
          const HealthFenceAction actions[] = {HealthFenceAction::kCordon, HealthFenceAction::kDrain,
                                               HealthFenceAction::kUncordon};
          body = HealthFenceCmd{node, actions[random() % 3], 0, 0, "policy"};
          break;
        }
        case 4: {
          UpdateNode update;
          update.node = node;
          update.op = random() % 2 == 0 ? NodeUpdateOp::kCordon : NodeUpdateOp::kUncordon;
          body = UpdateNodeCmd{update};
          break;
        }
        case 5:
          body = ProbeResultCmd{ProbeKind::kNetwork, {ProbeResult{.node = node, .slow = random() % 2 == 0}}};
          break;
        default:
          body = NodeStateCmd{node, random() % 2 == 0 ? NodeState::kLost : NodeState::kNotReady};
          break;
      }
      ++index;
      state.Apply(index, Command{static_cast<int64_t>(1000 * index), std::move(body)});
      ASSERT_EQ(state.nodes_needing_health(), Expected(state)) << "step " << step;
      needing_seen += state.nodes_needing_health().size();
    }
    EXPECT_GT(needing_seen, 500u);  // the script kept some nodes in the set
  }
}

}  // namespace
}  // namespace gpool::state
