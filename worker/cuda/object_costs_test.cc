#include "worker/cuda/object_costs.h"

#include <gtest/gtest.h>

namespace gpool::cuda {
namespace {

TEST(ObjectCosts, UnsetOrNoneChargesNothing) {
  ObjectCosts costs;
  for (const char* text : {static_cast<const char*>(nullptr), "", "none"}) {
    EXPECT_TRUE(ParseObjectCosts(text, &costs));
    EXPECT_FALSE(costs.enabled);
  }
}

TEST(ObjectCosts, DefaultIsTheDocumentedEstimates) {
  ObjectCosts costs;
  ASSERT_TRUE(ParseObjectCosts("default", &costs));
  EXPECT_TRUE(costs.enabled);
  EXPECT_EQ(costs.context_bytes, kDefaultContextBytes);
  EXPECT_EQ(costs.module_bytes, kDefaultModuleBytes);
  EXPECT_EQ(costs.stream_bytes, kDefaultStreamBytes);
}

TEST(ObjectCosts, NamedCostsTakeSuffixesAndKeepTheOthersDefaults) {
  ObjectCosts costs;
  ASSERT_TRUE(ParseObjectCosts("context=300M,stream=512K", &costs));
  EXPECT_TRUE(costs.enabled);
  EXPECT_EQ(costs.context_bytes, 300ull << 20);
  EXPECT_EQ(costs.stream_bytes, 512ull << 10);
  EXPECT_EQ(costs.module_bytes, kDefaultModuleBytes);
  ASSERT_TRUE(ParseObjectCosts("module=1G", &costs));
  EXPECT_EQ(costs.module_bytes, 1ull << 30);
  ASSERT_TRUE(ParseObjectCosts("stream=0", &costs));
  EXPECT_EQ(costs.stream_bytes, 0u);
}

TEST(ObjectCosts, AnythingElseIsRefused) {
  ObjectCosts costs;
  for (const char* text : {"context", "context=", "context=lots", "contexts=1M", "context=1T", "context=1M,",
                           "context=1M;module=1M", "=1M", "context=-1", "context=99999999999999G"}) {
    EXPECT_FALSE(ParseObjectCosts(text, &costs)) << text;
    EXPECT_FALSE(costs.enabled) << text;
  }
}

}  // namespace
}  // namespace gpool::cuda
