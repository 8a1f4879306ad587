#include "control/scheduler/gpu_picker.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

#include "control/scheduler/scenario.h"
#include "topology/lcg.h"

namespace gpool::scheduler {
namespace {

using topology::NodeView;
using topology::NumaPolicy;

// 8 GPUs in two NVLink groups, 0-3 on NUMA 0 and 4-7 on NUMA 1 (a typical
// PCIe-switch layout); `busy` are allocated.
NodeView TwoGroups(const std::set<uint32_t>& busy) {
  NodeView node = testing::MakeNode("n", 8);
  for (uint32_t i = 0; i < 8; ++i) {
    auto& gpu = node.gpus[i];
    gpu.numa = i < 4 ? 0 : 1;
    const uint32_t base = i < 4 ? 0 : 4;
    for (uint32_t p = base; p < base + 4; ++p) {
      if (p != i) gpu.nvlink_peers.push_back(p);
    }
    gpu.allocated = busy.count(i) > 0;
  }
  return node;
}

DeviceBits FreeGpus(const NodeView& node) {
  DeviceBits free;
  for (const auto& gpu : node.gpus) free.PushBack(gpu.healthy && !gpu.allocated);
  return free;
}

std::vector<size_t> Pick(const NodeView& node, uint32_t count, NumaPolicy numa = NumaPolicy::kNone) {
  auto picked = PickGpus(node, FreeGpus(node), GpuRequest{count, "", numa});
  return picked.value_or(std::vector<size_t>{99});
}

struct Case {
  const char* name;
  std::set<uint32_t> busy;
  uint32_t count;
  NumaPolicy numa;
  std::vector<size_t> expected;  // {99}: refused
};

class GpuPickerTableTest : public ::testing::TestWithParam<Case> {};

TEST_P(GpuPickerTableTest, PicksTheExpectedGpus) {
  const Case& c = GetParam();
  EXPECT_EQ(Pick(TwoGroups(c.busy), c.count, c.numa), c.expected) << c.name;
}

INSTANTIATE_TEST_SUITE_P(
    Layouts, GpuPickerTableTest,
    ::testing::Values(
        Case{"FourTakesAWholeFreeGroup", {}, 4, NumaPolicy::kNone, {0, 1, 2, 3}},
        Case{"FourTakesTheGroupThatIsStillWhole", {1}, 4, NumaPolicy::kNone, {4, 5, 6, 7}},
        Case{"OneComesFromTheBrokenGroup", {5}, 1, NumaPolicy::kNone, {4}},
        Case{"TwoFitExactlyInTheLeftoverOfAGroup", {4, 5}, 2, NumaPolicy::kNone, {6, 7}},
        Case{"ThreeStayInsideOneGroup", {}, 3, NumaPolicy::kNone, {0, 1, 2}},
        Case{"SixSpanGroupsWithTheMostLinks", {}, 6, NumaPolicy::kNone, {0, 1, 2, 3, 4, 5}},
        Case{"SingleNumaRefusesWhenNoNumaNodeHasEnough", {0, 1, 4, 5}, 3, NumaPolicy::kSingleNumaNode, {99}},
        Case{"BestEffortSpansWhenItMust", {0, 1, 4, 5}, 3, NumaPolicy::kBestEffort, {2, 3, 6}},
        Case{"SingleNumaPicksTheFullerNumaNode", {0}, 2, NumaPolicy::kSingleNumaNode, {1, 2}},
        Case{"TooFewFreeGpus", {0, 1, 2, 3, 4, 5, 6}, 2, NumaPolicy::kNone, {99}}),
    [](const ::testing::TestParamInfo<Case>& info) { return std::string(info.param.name); });

TEST(GpuPickerTest, HonoursTheModel) {
  NodeView node = testing::MakeNode("n", 4);
  node.gpus[2].model = node.gpus[3].model = "H100";
  auto picked = PickGpus(node, FreeGpus(node), GpuRequest{2, "H100", NumaPolicy::kNone});
  ASSERT_TRUE(picked);
  EXPECT_EQ(*picked, (std::vector<size_t>{2, 3}));
  EXPECT_FALSE(PickGpus(node, FreeGpus(node), GpuRequest{3, "H100", NumaPolicy::kNone}));
}

// A node whose GPUs list no NVLink peer takes a shortcut; a GPU listing
// itself links nothing either, but sends the same node down the full search,
// which must choose the same GPUs.
TEST(GpuPickerTest, NodesWithoutNvlinkPickWhatTheFullSearchPicks) {
  topology::Lcg rng(11);
  for (int round = 0; round < 2000; ++round) {
    const uint32_t gpus = 1 + static_cast<uint32_t>(rng.Below(16));
    NodeView node = testing::MakeNode("n", gpus);
    for (auto& gpu : node.gpus) {
      gpu.allocated = rng.Below(3) == 0;
      gpu.model = rng.Below(4) == 0 ? "H100" : "A100";
    }
    NodeView self_linked = node;
    self_linked.gpus[0].nvlink_peers = {self_linked.gpus[0].index};
    const GpuRequest request{static_cast<uint32_t>(rng.Below(6)), rng.Below(3) == 0 ? "H100" : "",
                             NumaPolicy::kNone};
    ASSERT_EQ(PickGpus(node, FreeGpus(node), request), PickGpus(self_linked, FreeGpus(node), request))
        << "round " << round;
  }
}

// Property: over random layouts the picker only hands out free GPUs of the
// model asked, each once, exactly as many as asked, on one NUMA node when
// that is required; and it refuses only when that is impossible.
TEST(GpuPickerTest, RandomLayoutsAreNeverOverCommitted) {
  topology::Lcg rng(7);
  auto next = [&rng](uint64_t mod) { return rng.Below(mod); };
  for (int round = 0; round < 3000; ++round) {
    const uint32_t gpus = 1 + static_cast<uint32_t>(next(16));
    NodeView node = testing::MakeNode("n", gpus);
    for (auto& gpu : node.gpus) {
      gpu.numa = static_cast<int32_t>(next(3)) - 1;
      gpu.allocated = next(3) == 0;
      gpu.healthy = next(10) != 0;
      gpu.model = next(4) == 0 ? "H100" : "A100";
      for (uint32_t p = 0; p < gpus; ++p) {
        if (p != gpu.index && next(3) == 0) gpu.nvlink_peers.push_back(p);
      }
    }
    const auto free = FreeGpus(node);
    const GpuRequest request{static_cast<uint32_t>(next(6)), next(3) == 0 ? "H100" : "",
                             static_cast<NumaPolicy>(next(3))};
    auto picked = PickGpus(node, free, request);
    std::map<int32_t, uint32_t> eligible_per_numa;
    uint32_t eligible = 0;
    for (size_t s = 0; s < node.gpus.size(); ++s) {
      if (free[s] && (request.model.empty() || node.gpus[s].model == request.model)) {
        ++eligible;
        ++eligible_per_numa[node.gpus[s].numa];
      }
    }
    uint32_t most_on_one_numa = 0;
    for (const auto& [numa, count] : eligible_per_numa) most_on_one_numa = std::max(most_on_one_numa, count);
    const bool possible = request.count == 0 || (request.numa == NumaPolicy::kSingleNumaNode
                                                     ? most_on_one_numa >= request.count
                                                     : eligible >= request.count);
    ASSERT_EQ(picked.has_value(), possible) << "round " << round;
    if (!picked) continue;
    ASSERT_EQ(picked->size(), request.count);
    std::set<size_t> distinct(picked->begin(), picked->end());
    ASSERT_EQ(distinct.size(), picked->size());
    std::set<int32_t> numas;
    for (size_t s : *picked) {
      ASSERT_TRUE(free[s]) << "round " << round;
      ASSERT_TRUE(request.model.empty() || node.gpus[s].model == request.model);
      numas.insert(node.gpus[s].numa);
    }
    ASSERT_TRUE(request.numa != NumaPolicy::kSingleNumaNode || request.count == 0 || numas.size() == 1u);
  }
}

}  // namespace
}  // namespace gpool::scheduler
