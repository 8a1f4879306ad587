// NicCheck: the node's network links against what they were when the worker
// started.
//
// InfiniBand: every port under <sysfs_root>/class/infiniband/<dev>/ports/<port>/
// (files `state` "4: ACTIVE", `phys_state` "5: LinkUp", `rate`
// "200 Gb/sec (4X HDR)"). The baseline, taken at construction, is the set of
// ports that are ACTIVE and LinkUp with their rate. A baseline port that is
// now not ACTIVE or not LinkUp, or has vanished from sysfs (its adapter fell
// off the bus), is kIbPortDown (fatal), device "ib/<dev>/<port>"; one whose
// rate is below its baseline rate is kIbRateDegraded (degraded). Ports down at
// baseline are never reported (not cabled); a port that comes up later joins
// the baseline, and a rate above the baseline raises it.
//
// Ethernet: interfaces under <sysfs_root>/class/net/<if>/ with a `device`
// entry (physical; bonds, bridges, veths and the loopback have none) that are
// not SR-IOV virtual functions (`device/physfn`: those move into containers'
// namespaces and vanish from the host's view by design). A baseline interface
// (operstate "up") that is now not "up" is kEthDown (degraded), device
// "eth/<if>"; one whose `speed` (Mb/s) is below its baseline is
// kEthSpeedDegraded (degraded). An unreadable speed (-1, or EINVAL on a link
// without carrier) is ignored; an interface that vanishes leaves the baseline
// without a finding.
//
// A file that cannot be read while its port's directory is there reports
// nothing for that port (the check cannot look). Never blocks: sysfs reads.
//
// Thread-safety: one thread (the agent's loop).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/health.h"
#include "worker/health/health_check.h"

namespace gpool::worker {

struct NicCheckOptions {
  std::string sysfs_root = "/sys";
  int64_t interval_ms = 2000;
};

// "200 Gb/sec (4X HDR)" -> 200000 (Mb/s); "2.5 Gb/sec (1X SDR)" -> 2500;
// -1 when it does not parse.
int64_t ParseIbRateMbps(std::string_view rate);

class NicCheck final : public HealthCheck {
 public:
  explicit NicCheck(NicCheckOptions options = {});

  std::string_view name() const override { return "nic"; }
  int64_t interval_ms() const override { return options_.interval_ms; }
  std::vector<HealthKind> kinds() const override;
  std::vector<HealthFinding> Run(int64_t wall_ms) override;

  // What the baseline holds now (tests, logs): "ib/<dev>/<port>" and
  // "eth/<if>" names.
  std::vector<std::string> baseline() const;

 private:
  struct IbBase {
    int64_t rate_mbps = -1;  // -1: not read yet
    std::string rate_text;
  };
  struct EthBase {
    int64_t speed_mbps = -1;  // -1: unknown
  };
  void RunIb(std::vector<HealthFinding>* findings);
  void RunEth(std::vector<HealthFinding>* findings);

  NicCheckOptions options_;
  std::map<std::string, IbBase> ib_;    // "<dev>/<port>"
  std::map<std::string, EthBase> eth_;  // "<if>"
};

}  // namespace gpool::worker
