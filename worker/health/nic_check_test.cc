#include "worker/health/nic_check.h"

#include <filesystem>

#include <gtest/gtest.h>

#include "protocol/health.h"
#include "worker/test_util.h"

namespace gpool::worker {
namespace {

// A fake sysfs: InfiniBand ports and network interfaces as the kernel shows them.
class NicFakeSys {
 public:
  const std::string& root() const { return dir_.path(); }

  void IbPort(const std::string& dev, int port, const std::string& state, const std::string& phys,
              const std::string& rate) const {
    const std::string base = "class/infiniband/" + dev + "/ports/" + std::to_string(port) + "/";
    dir_.Write(base + "state", state + "\n");
    dir_.Write(base + "phys_state", phys + "\n");
    dir_.Write(base + "rate", rate + "\n");
  }
  void IbUp(const std::string& dev, int port, const std::string& rate = "200 Gb/sec (4X HDR)") const {
    IbPort(dev, port, "4: ACTIVE", "5: LinkUp", rate);
  }
  void IbDown(const std::string& dev, int port) const {
    IbPort(dev, port, "1: DOWN", "3: Disabled", "10 Gb/sec (4X SDR)");
  }
  // physical: with a `device` entry.
  void Eth(const std::string& name, const std::string& operstate, const std::string& speed,
           bool physical = true) const {
    const std::string base = "class/net/" + name + "/";
    if (physical) dir_.Write(base + "device/vendor", "0x15b3\n");
    dir_.Write(base + "operstate", operstate + "\n");
    dir_.Write(base + "speed", speed + "\n");
  }
  // A file the check cannot read: a directory where it expects text.
  void MakeUnreadable(const std::string& relative) const {
    const std::filesystem::path p = std::filesystem::path(root()) / relative;
    std::filesystem::remove(p);
    std::filesystem::create_directories(p);
  }
  void Write(const std::string& relative, const std::string& content) const { dir_.Write(relative, content); }
  void Remove(const std::string& relative) const {
    std::filesystem::remove_all(std::filesystem::path(root()) / relative);
  }

 private:
  testing::TempDir dir_;
};

NicCheck NicTestCheck(const NicFakeSys& sys) { return NicCheck(NicCheckOptions{sys.root(), 2000}); }

std::vector<std::string> NicTestKeys(const std::vector<HealthFinding>& findings) {
  std::vector<std::string> keys;
  for (const auto& f : findings) keys.push_back(std::string(ToString(f.kind)) + "@" + f.device);
  return keys;
}

TEST(NicCheckTest, ParsesIbRates) {
  EXPECT_EQ(ParseIbRateMbps("200 Gb/sec (4X HDR)"), 200000);
  EXPECT_EQ(ParseIbRateMbps("2.5 Gb/sec (1X SDR)"), 2500);
  EXPECT_EQ(ParseIbRateMbps("53.125 Gb/sec (1X HDR)"), 53125);
  EXPECT_EQ(ParseIbRateMbps("400 Gb/sec (4X NDR)\n"), 400000);
  EXPECT_EQ(ParseIbRateMbps(""), -1);
  EXPECT_EQ(ParseIbRateMbps("fast"), -1);
  EXPECT_EQ(ParseIbRateMbps("200"), -1);
  EXPECT_EQ(ParseIbRateMbps("1.2.3 Gb/sec"), -1);
  EXPECT_EQ(ParseIbRateMbps("99999999999999999999 Gb/sec"), -1);
}

TEST(NicCheckTest, DefaultsAndKinds) {
  NicCheck check;
  EXPECT_EQ(check.interval_ms(), 2000);
  EXPECT_EQ(check.name(), "nic");
  EXPECT_EQ(check.kinds(), (std::vector<HealthKind>{HealthKind::kIbPortDown, HealthKind::kIbRateDegraded,
                                                    HealthKind::kEthDown, HealthKind::kEthSpeedDegraded}));
}

TEST(NicCheckTest, HealthyBaselineReportsNothing) {
  NicFakeSys sys;
  sys.IbUp("mlx5_0", 1);
  sys.IbUp("mlx5_1", 1);
  sys.IbDown("mlx5_2", 1);  // never cabled
  sys.Eth("eth0", "up", "25000");
  NicCheck check = NicTestCheck(sys);
  EXPECT_EQ(check.baseline(), (std::vector<std::string>{"ib/mlx5_0/1", "ib/mlx5_1/1", "eth/eth0"}));
  EXPECT_TRUE(check.Run(0).empty());
  EXPECT_TRUE(check.Run(1).empty());
}

TEST(NicCheckTest, NoSysfsAtAllReportsNothing) {
  NicCheck check(NicCheckOptions{"/nonexistent/gpool-sys", 2000});
  EXPECT_TRUE(check.baseline().empty());
  EXPECT_TRUE(check.Run(0).empty());
}

TEST(NicCheckTest, IbPortDownIsFatal) {
  NicFakeSys sys;
  sys.IbUp("mlx5_0", 1);
  sys.IbUp("mlx5_1", 1);
  NicCheck check = NicTestCheck(sys);
  sys.IbPort("mlx5_1", 1, "1: DOWN", "2: Polling", "200 Gb/sec (4X HDR)");
  auto findings = check.Run(0);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].kind, HealthKind::kIbPortDown);
  EXPECT_EQ(findings[0].device, "ib/mlx5_1/1");
  EXPECT_EQ(findings[0].severity, HealthSeverity::kFatal);
  EXPECT_NE(findings[0].message.find("1: DOWN"), std::string::npos) << findings[0].message;
  EXPECT_NE(findings[0].message.find("2: Polling"), std::string::npos) << findings[0].message;
  EXPECT_EQ(findings[0].new_events, 0u);

  // Still down: found again. Back up: cleared (nothing reported).
  EXPECT_EQ(check.Run(1).size(), 1u);
  sys.IbUp("mlx5_1", 1);
  EXPECT_TRUE(check.Run(2).empty());
}

TEST(NicCheckTest, IbActiveButPhysicalLinkDownIsDown) {
  NicFakeSys sys;
  sys.IbUp("mlx5_0", 1);
  NicCheck check = NicTestCheck(sys);
  sys.IbPort("mlx5_0", 1, "4: ACTIVE", "7: PhyTest", "200 Gb/sec (4X HDR)");
  EXPECT_EQ(NicTestKeys(check.Run(0)), (std::vector<std::string>{"ib-port-down@ib/mlx5_0/1"}));
}

TEST(NicCheckTest, IbRateBelowBaselineIsDegraded) {
  NicFakeSys sys;
  sys.IbUp("mlx5_0", 1, "200 Gb/sec (4X HDR)");
  NicCheck check = NicTestCheck(sys);
  sys.IbUp("mlx5_0", 1, "100 Gb/sec (2X HDR)");
  auto findings = check.Run(0);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].kind, HealthKind::kIbRateDegraded);
  EXPECT_EQ(findings[0].device, "ib/mlx5_0/1");
  EXPECT_EQ(findings[0].severity, HealthSeverity::kDegraded);
  EXPECT_NE(findings[0].message.find("100 Gb/sec"), std::string::npos) << findings[0].message;
  EXPECT_NE(findings[0].message.find("200 Gb/sec"), std::string::npos) << findings[0].message;

  // The baseline does not follow the degraded rate down.
  EXPECT_EQ(check.Run(1).size(), 1u);
  sys.IbUp("mlx5_0", 1, "200 Gb/sec (4X HDR)");
  EXPECT_TRUE(check.Run(2).empty());
}

TEST(NicCheckTest, IbRateAboveBaselineRaisesIt) {
  NicFakeSys sys;
  sys.IbUp("mlx5_0", 1, "100 Gb/sec (4X EDR)");
  NicCheck check = NicTestCheck(sys);
  sys.IbUp("mlx5_0", 1, "200 Gb/sec (4X HDR)");
  EXPECT_TRUE(check.Run(0).empty());
  sys.IbUp("mlx5_0", 1, "100 Gb/sec (4X EDR)");
  EXPECT_EQ(NicTestKeys(check.Run(1)), (std::vector<std::string>{"ib-rate-degraded@ib/mlx5_0/1"}));
}

TEST(NicCheckTest, PortDownAtBaselineIsNeverReportedAndJoinsWhenItComesUp) {
  NicFakeSys sys;
  sys.IbDown("mlx5_0", 1);
  NicCheck check = NicTestCheck(sys);
  EXPECT_TRUE(check.baseline().empty());
  EXPECT_TRUE(check.Run(0).empty());

  sys.IbUp("mlx5_0", 1, "200 Gb/sec (4X HDR)");
  EXPECT_TRUE(check.Run(1).empty());
  EXPECT_EQ(check.baseline(), (std::vector<std::string>{"ib/mlx5_0/1"}));

  // Now part of the baseline: going down again is reported, as is a lower rate.
  sys.IbDown("mlx5_0", 1);
  EXPECT_EQ(NicTestKeys(check.Run(2)), (std::vector<std::string>{"ib-port-down@ib/mlx5_0/1"}));
  sys.IbUp("mlx5_0", 1, "50 Gb/sec (1X HDR)");
  EXPECT_EQ(NicTestKeys(check.Run(3)), (std::vector<std::string>{"ib-rate-degraded@ib/mlx5_0/1"}));
}

TEST(NicCheckTest, AnIbDeviceThatVanishesIsDown) {
  NicFakeSys sys;
  sys.IbUp("mlx5_0", 1);
  sys.IbUp("mlx5_1", 1);
  NicCheck check = NicTestCheck(sys);
  sys.Remove("class/infiniband/mlx5_1");
  auto findings = check.Run(0);
  ASSERT_EQ(NicTestKeys(findings), (std::vector<std::string>{"ib-port-down@ib/mlx5_1/1"}));
  EXPECT_EQ(findings[0].severity, HealthSeverity::kFatal);
}

TEST(NicCheckTest, IbVirtualFunctionsAreIgnored) {
  NicFakeSys sys;
  sys.IbUp("mlx5_4", 1);
  sys.IbUp("mlx5_5", 1);
  std::filesystem::create_directories(std::filesystem::path(sys.root()) / "class/infiniband/mlx5_5/device/physfn");
  NicCheck check = NicTestCheck(sys);
  EXPECT_EQ(check.baseline(), (std::vector<std::string>{"ib/mlx5_4/1"}));
  sys.Remove("class/infiniband/mlx5_5");
  EXPECT_TRUE(check.Run(0).empty());
}

TEST(NicCheckTest, EthDownAndSpeedDegraded) {
  NicFakeSys sys;
  sys.Eth("eth0", "up", "100000");
  sys.Eth("eth1", "up", "25000");
  sys.Eth("eth2", "down", "-1");  // not up at baseline: never reported
  NicCheck check = NicTestCheck(sys);
  EXPECT_EQ(check.baseline(), (std::vector<std::string>{"eth/eth0", "eth/eth1"}));

  sys.Eth("eth0", "down", "-1");
  sys.Eth("eth1", "up", "10000");
  auto findings = check.Run(0);
  ASSERT_EQ(NicTestKeys(findings),
            (std::vector<std::string>{"eth-down@eth/eth0", "eth-speed-degraded@eth/eth1"}));
  EXPECT_EQ(findings[0].severity, HealthSeverity::kDegraded);
  EXPECT_NE(findings[0].message.find("down"), std::string::npos);
  EXPECT_EQ(findings[1].severity, HealthSeverity::kDegraded);
  EXPECT_NE(findings[1].message.find("10000"), std::string::npos) << findings[1].message;
  EXPECT_NE(findings[1].message.find("25000"), std::string::npos) << findings[1].message;

  sys.Eth("eth0", "up", "100000");
  sys.Eth("eth1", "up", "25000");
  EXPECT_TRUE(check.Run(1).empty());
}

TEST(NicCheckTest, EthUpLaterJoinsTheBaseline) {
  NicFakeSys sys;
  sys.Eth("eth0", "down", "-1");
  NicCheck check = NicTestCheck(sys);
  EXPECT_TRUE(check.baseline().empty());
  sys.Eth("eth0", "up", "25000");
  EXPECT_TRUE(check.Run(0).empty());
  sys.Eth("eth0", "lowerlayerdown", "-1");
  EXPECT_EQ(NicTestKeys(check.Run(1)), (std::vector<std::string>{"eth-down@eth/eth0"}));
}

TEST(NicCheckTest, UnreadableSpeedIsIgnored) {
  NicFakeSys sys;
  sys.Eth("eth0", "up", "25000");
  sys.Eth("eth1", "up", "-1");  // speed unknown at baseline
  NicCheck check = NicTestCheck(sys);
  sys.Eth("eth0", "up", "-1");
  EXPECT_TRUE(check.Run(0).empty());
  sys.MakeUnreadable("class/net/eth0/speed");  // EINVAL-like: no value
  EXPECT_TRUE(check.Run(1).empty());
  sys.Eth("eth1", "up", "10000");  // first speed seen becomes its baseline
  EXPECT_TRUE(check.Run(2).empty());
  sys.Eth("eth1", "up", "1000");
  EXPECT_EQ(NicTestKeys(check.Run(3)), (std::vector<std::string>{"eth-speed-degraded@eth/eth1"}));
}

TEST(NicCheckTest, VirtualInterfacesAreIgnored) {
  NicFakeSys sys;
  sys.Eth("lo", "unknown", "-1", /*physical=*/false);
  sys.Eth("bond0", "up", "50000", /*physical=*/false);
  sys.Eth("docker0", "up", "10000", /*physical=*/false);
  sys.Eth("ens1f0v3", "up", "25000");
  std::filesystem::create_directories(std::filesystem::path(sys.root()) / "class/net/ens1f0v3/device/physfn");
  NicCheck check = NicTestCheck(sys);
  EXPECT_TRUE(check.baseline().empty());
  sys.Eth("bond0", "down", "-1", false);
  sys.Eth("docker0", "up", "1000", false);
  sys.Eth("ens1f0v3", "down", "-1");
  EXPECT_TRUE(check.Run(0).empty());
}

TEST(NicCheckTest, VanishedEthInterfaceLeavesTheBaselineQuietly) {
  NicFakeSys sys;
  sys.Eth("eth0", "up", "25000");
  NicCheck check = NicTestCheck(sys);
  sys.Remove("class/net/eth0");
  EXPECT_TRUE(check.Run(0).empty());
  EXPECT_TRUE(check.baseline().empty());
}

TEST(NicCheckTest, UnreadableOrGarbageFilesNeverCrash) {
  NicFakeSys sys;
  sys.IbUp("mlx5_0", 1);
  sys.IbUp("mlx5_1", 1);
  sys.IbUp("mlx5_2", 1);
  sys.Eth("eth0", "up", "25000");
  sys.MakeUnreadable("class/infiniband/mlx5_2/ports/1/state");  // unreadable at baseline: not in it
  NicCheck check = NicTestCheck(sys);
  EXPECT_EQ(check.baseline(), (std::vector<std::string>{"ib/mlx5_0/1", "ib/mlx5_1/1", "eth/eth0"}));

  // Cannot look: nothing reported for that port.
  sys.MakeUnreadable("class/infiniband/mlx5_0/ports/1/phys_state");
  // Garbage rate: nothing to compare.
  sys.IbUp("mlx5_1", 1, "garbage");
  // Garbage speed and an unreadable operstate.
  sys.Eth("eth0", "up", "fast");
  EXPECT_TRUE(check.Run(0).empty());
  sys.MakeUnreadable("class/net/eth0/operstate");
  EXPECT_TRUE(check.Run(1).empty());

  // Empty files: the state is not ACTIVE.
  sys.IbPort("mlx5_1", 1, "", "", "");
  EXPECT_EQ(NicTestKeys(check.Run(2)), (std::vector<std::string>{"ib-port-down@ib/mlx5_1/1"}));

  // A `ports` that is a file, a device directory without ports.
  sys.Remove("class/infiniband/mlx5_0/ports");
  sys.Write("class/infiniband/mlx5_0/ports", "x");
  auto findings = check.Run(3);
  EXPECT_EQ(NicTestKeys(findings),
            (std::vector<std::string>{"ib-port-down@ib/mlx5_0/1", "ib-port-down@ib/mlx5_1/1"}));
}

}  // namespace
}  // namespace gpool::worker
