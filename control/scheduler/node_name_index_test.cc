// NodeNameIndex resolves names exactly as the std::unordered_map it
// replaced did: every name to its first node, a name it does not hold to
// nothing, names longer than the slot's head compared in full.
#include "control/scheduler/node_name_index.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace gpool::scheduler {
namespace {

std::vector<topology::NodeView> NamedNodes(const std::vector<std::string>& names) {
  std::vector<topology::NodeView> nodes(names.size());
  for (size_t i = 0; i < names.size(); ++i) nodes[i].name = names[i];
  return nodes;
}

TEST(NodeNameIndexTest, EveryNameFindsItsNodeAndOthersFindNothing) {
  std::vector<std::string> names;
  for (int i = 0; i < 5000; ++i) names.push_back("gpu-node-" + std::to_string(i));
  const auto nodes = NamedNodes(names);
  const NodeNameIndex index(nodes);
  for (size_t i = 0; i < names.size(); ++i) {
    ASSERT_EQ(index.Find(names[i]), i) << names[i];
  }
  EXPECT_FALSE(index.Find("gpu-node-5000"));
  EXPECT_FALSE(index.Find("gpu-node-"));
  EXPECT_FALSE(index.Find(""));
}

TEST(NodeNameIndexTest, LongNamesDifferingAfterTheHeadAreToldApart) {
  // Names of one length sharing their first 40 bytes: the slots' heads are
  // all alike, so only the tails (read from the view) tell them apart, and
  // 2,000 of them collide in the table often enough that a lookup which
  // skipped the tail would answer with a neighbour.
  const std::string stem(40, 'r');
  std::vector<std::string> names;
  for (int i = 0; i < 2000; ++i) {
    const std::string digits = std::to_string(10000 + i);
    names.push_back(stem + "-" + digits);
  }
  const auto nodes = NamedNodes(names);
  const NodeNameIndex index(nodes);
  for (size_t i = 0; i < names.size(); ++i) {
    ASSERT_EQ(index.Find(names[i]), i) << names[i];
  }
  for (int i = 2000; i < 4000; ++i) {
    ASSERT_FALSE(index.Find(stem + "-" + std::to_string(10000 + i))) << i;
  }
  EXPECT_FALSE(index.Find(stem.substr(0, 24)));
}

TEST(NodeNameIndexTest, ADuplicateNameResolvesToItsFirstNode) {
  const auto nodes = NamedNodes({"a", "b", "a", "", "b"});
  const NodeNameIndex index(nodes);
  EXPECT_EQ(index.Find("a"), 0u);
  EXPECT_EQ(index.Find("b"), 1u);
  EXPECT_EQ(index.Find(""), 3u);
}

TEST(NodeNameIndexTest, AnEmptyViewFindsNothing) {
  const std::vector<topology::NodeView> nodes;
  const NodeNameIndex index(nodes);
  EXPECT_FALSE(index.Find("gpu-node-0"));
}

}  // namespace
}  // namespace gpool::scheduler
