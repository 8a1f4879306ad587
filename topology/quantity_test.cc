#include "topology/quantity.h"

#include <gtest/gtest.h>

namespace gpool::topology {
namespace {

TEST(QuantityTest, CpuMilli) {
  EXPECT_EQ(*ParseCpuMilli("8"), 8000u);
  EXPECT_EQ(*ParseCpuMilli("7.5"), 7500u);
  EXPECT_EQ(*ParseCpuMilli("0.25"), 250u);
  EXPECT_EQ(*ParseCpuMilli("0.125"), 125u);
  for (const char* bad : {"", "-1", "1.2345", "abc", "1e3", ".5", "5.", "1..2"}) {
    EXPECT_EQ(ParseCpuMilli(bad).status().code(), StatusCode::kInvalidArgument) << bad;
  }
}

TEST(QuantityTest, MemoryMib) {
  EXPECT_EQ(*ParseMemoryMib("4096"), 4096u);
  EXPECT_EQ(*ParseMemoryMib("64Mi"), 64u);
  EXPECT_EQ(*ParseMemoryMib("80Gi"), 80u * 1024);
  EXPECT_EQ(*ParseMemoryMib("512Gi"), 512u * 1024);
  EXPECT_EQ(*ParseMemoryMib("1.5Ti"), 1536u * 1024);
  EXPECT_EQ(*ParseMemoryMib("2048Ki"), 2u);
  EXPECT_EQ(*ParseMemoryMib("0.5Gi"), 512u);
  for (const char* bad : {"", "80Q", "80G", "80GB", "Gi", "-1Gi", "1.5", "80 Qi", "99999999999999999999Pi"}) {
    EXPECT_FALSE(ParseMemoryMib(bad).ok()) << bad;
  }
  EXPECT_NE(ParseMemoryMib("80Q").status().message().find("not a memory size"), std::string::npos);
}

}  // namespace
}  // namespace gpool::topology
