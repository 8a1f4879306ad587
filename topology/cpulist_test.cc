#include "topology/cpulist.h"

#include <gtest/gtest.h>

namespace gpool::topology {
namespace {

using Ids = std::vector<uint32_t>;

TEST(CpuListTest, Parses) {
  EXPECT_EQ(ParseCpuList("0-3,8,10-11\n"), (Ids{0, 1, 2, 3, 8, 10, 11}));
  EXPECT_EQ(ParseCpuList("5"), (Ids{5}));
  EXPECT_EQ(ParseCpuList(""), Ids{});
  EXPECT_EQ(ParseCpuList("3,1,1-2"), (Ids{1, 2, 3})) << "sorted, each id once";
}

TEST(CpuListTest, RefusesMalformed) {
  for (const char* bad : {"3-1", "a-b", "1,", ",1", "1--2", "-1", "0-70000", "1 2", "0-"}) {
    EXPECT_FALSE(ParseCpuList(bad).has_value()) << bad;
  }
}

TEST(CpuListTest, Formats) {
  EXPECT_EQ(FormatCpuList({3, 0, 1, 2, 8}), "0-3,8");
  EXPECT_EQ(FormatCpuList({4}), "4");
  EXPECT_EQ(FormatCpuList({}), "");
  EXPECT_EQ(FormatCpuList({1, 1, 2, 5, 6, 9}), "1-2,5-6,9");
  EXPECT_EQ(FormatCpuList(*ParseCpuList("0-31,64-95")), "0-31,64-95");
}

}  // namespace
}  // namespace gpool::topology
