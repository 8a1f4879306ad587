// HealthForCoordinator (health.h): a worker tells a coordinator only the
// health kinds it knows, since an older one refuses a whole list that names
// one it does not (CheckHealthConditions), and with it the registration or
// heartbeat: in a rolling upgrade that put workers first, a node whose GPU
// was being reset could not register at all.
#include <gtest/gtest.h>

#include "protocol/health.h"

namespace gpool {
namespace {

HealthCondition Condition(HealthKind kind, std::string device, HealthSeverity severity, std::string message) {
  HealthCondition c;
  c.kind = std::string(ToString(kind));
  c.device = std::move(device);
  c.severity = std::string(ToString(severity));
  c.message = std::move(message);
  c.first_seen_ms = 1000;
  c.count = 2;
  return c;
}

TEST(HealthForCoordinatorTest, AnOlderCoordinatorIsToldOnlyKindsItKnowsWithTheSameEffect) {
  const std::vector<HealthCondition> health = {
      Condition(HealthKind::kDiskLow, "disk", HealthSeverity::kDegraded, "12 MiB free"),
      Condition(HealthKind::kGpuReset, "gpu/3", HealthSeverity::kFatal, "draining for a reset: ECC"),
      Condition(HealthKind::kFabricmanagerRestart, "", HealthSeverity::kWarning, "restarted by systemd"),
  };
  bool changed = false;
  const auto told = HealthForCoordinator(health, kHealthKindsBeforeRepairs, &changed);
  EXPECT_TRUE(changed);
  ASSERT_EQ(told.size(), 2u) << "the fabric manager's restart only informs: left out";
  EXPECT_EQ(told[0].kind, "disk-low");
  EXPECT_EQ(told[0].message, "12 MiB free");
  // The GPU stays fenced: gpu-lost is fatal on the same device.
  EXPECT_EQ(told[1].kind, "gpu-lost");
  EXPECT_EQ(told[1].device, "gpu/3");
  EXPECT_EQ(told[1].severity, "fatal");
  EXPECT_EQ(told[1].first_seen_ms, 1000);
  EXPECT_EQ(told[1].count, 2u);
  EXPECT_NE(told[1].message.find("gpu-reset"), std::string::npos) << told[1].message;
  EXPECT_NE(told[1].message.find("draining for a reset: ECC"), std::string::npos) << told[1].message;
  for (const auto& c : told) {
    EXPECT_LT(static_cast<uint32_t>(*HealthKindFromString(c.kind)), kHealthKindsBeforeRepairs) << c.kind;
  }
}

TEST(HealthForCoordinatorTest, ACoordinatorThatKnowsEveryKindIsToldTheListAsItIs) {
  const std::vector<HealthCondition> health = {
      Condition(HealthKind::kGpuReset, "gpu/0", HealthSeverity::kFatal, "resetting"),
      Condition(HealthKind::kXid, "gpu/1", HealthSeverity::kFatal, "xid 79"),
  };
  bool changed = true;
  const auto told = HealthForCoordinator(health, static_cast<uint32_t>(kHealthKindCount), &changed);
  EXPECT_FALSE(changed);
  ASSERT_EQ(told.size(), 2u);
  EXPECT_EQ(told[0].kind, "gpu-reset");
  EXPECT_EQ(told[0].message, "resetting");
  EXPECT_EQ(told[1].kind, "xid");
}

// Whatever kind is added later, and whatever the severity, an older
// coordinator accepts what it is told: every kind it does not know has its
// row (the static_assert in health.cc stops a build that adds one without).
TEST(HealthForCoordinatorTest, EveryKindIsToldToEveryOlderCoordinatorAsOneItAccepts) {
  for (uint32_t known = kHealthKindsBeforeRepairs; known <= kHealthKindCount; ++known) {
    for (size_t k = 0; k < kHealthKindCount; ++k) {
      for (HealthSeverity severity : {HealthSeverity::kWarning, HealthSeverity::kDegraded, HealthSeverity::kFatal}) {
        const auto told =
            HealthForCoordinator({Condition(static_cast<HealthKind>(k), "gpu/0", severity, "m")}, known);
        for (const auto& c : told) {
          EXPECT_LT(static_cast<uint32_t>(*HealthKindFromString(c.kind)), known)
              << ToString(static_cast<HealthKind>(k)) << " told to a coordinator of " << known << " kinds";
          EXPECT_EQ(c.severity, ToString(severity));
        }
        if (k < known) {
          EXPECT_EQ(told.size(), 1u) << "a kind it knows is told as it is";
        }
      }
    }
  }
}

}  // namespace
}  // namespace gpool
