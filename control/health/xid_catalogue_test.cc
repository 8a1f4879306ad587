#include "control/health/xid_catalogue.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gpool::health {
namespace {

using ::testing::ElementsAre;

TEST(XidCatalogueTest, ApplicationErrorsByDefaultAreTheDocumentedOnes) {
  EXPECT_THAT(XidCatalogue::DefaultCodes(XidClass::kApplication), ElementsAre(13, 31, 43, 45, 68, 109));
  const XidCatalogue catalogue;
  for (int32_t xid : {13, 31, 43, 45, 68, 109}) {
    EXPECT_EQ(catalogue.Classify(xid, false), XidClass::kApplication) << xid;
    // A pending remap on the same GPU does not make a program's fault the hardware's.
    EXPECT_EQ(catalogue.Classify(xid, true), XidClass::kApplication) << xid;
    EXPECT_FALSE(Fences(catalogue.Classify(xid, true))) << xid;
  }
}

TEST(XidCatalogueTest, ResetAndRebootBucketsFence) {
  const XidCatalogue catalogue;
  for (int32_t xid : {46, 48, 62, 74, 92, 94, 95, 119, 120, 140, 144, 150, 154}) {
    EXPECT_EQ(catalogue.Classify(xid, false), XidClass::kResetGpu) << xid;
    EXPECT_TRUE(Fences(catalogue.Classify(xid, false))) << xid;
  }
  EXPECT_EQ(catalogue.Classify(79, false), XidClass::kRebootNode);
  EXPECT_TRUE(Fences(XidClass::kRebootNode));
}

TEST(XidCatalogueTest, RetirementXidsFenceOnlyWithARemapPending) {
  const XidCatalogue catalogue;
  for (int32_t xid : {63, 64}) {
    EXPECT_EQ(catalogue.Classify(xid, false), XidClass::kInformational) << xid;
    EXPECT_EQ(catalogue.Classify(xid, true), XidClass::kResetGpu) << xid;
  }
}

TEST(XidCatalogueTest, CodesOutsideTheTableAreInformational) {
  const XidCatalogue catalogue;
  for (int32_t xid : {0, 1, 8, 57, 99, 153, 100000, -5}) {
    EXPECT_EQ(catalogue.Classify(xid, true), XidClass::kInformational) << xid;
    EXPECT_FALSE(Fences(catalogue.Classify(xid, true)));
  }
}

TEST(XidCatalogueTest, OverridesWinAndAreUnconditional) {
  const XidCatalogue catalogue(XidOverrides{.application = {48, 8}, .fatal = {13, 57, 63, 79}});
  EXPECT_EQ(catalogue.Classify(48, true), XidClass::kApplication);  // the operator knows better
  EXPECT_EQ(catalogue.Classify(8, false), XidClass::kApplication);
  EXPECT_EQ(catalogue.Classify(13, false), XidClass::kFatalOther);
  EXPECT_EQ(catalogue.Classify(57, false), XidClass::kFatalOther);
  EXPECT_EQ(catalogue.Classify(63, false), XidClass::kResetGpu);  // fatal even without a pending remap
  EXPECT_EQ(catalogue.Classify(79, false), XidClass::kRebootNode);  // keeps its more specific bucket
  // Codes no override names keep the table's answer.
  EXPECT_EQ(catalogue.Classify(31, false), XidClass::kApplication);
  EXPECT_EQ(catalogue.Classify(74, false), XidClass::kResetGpu);
}

TEST(XidCatalogueTest, ClassNamesAreDistinct) {
  EXPECT_EQ(ToString(XidClass::kApplication), "application");
  EXPECT_EQ(ToString(XidClass::kResetGpu), "reset-gpu");
  EXPECT_EQ(ToString(XidClass::kRebootNode), "reboot-node");
  EXPECT_EQ(ToString(XidClass::kFatalOther), "fatal");
  EXPECT_EQ(ToString(XidClass::kInformational), "informational");
}

}  // namespace
}  // namespace gpool::health
