// `gpool probe network` on a real cluster on 127.0.0.1: four workers, one of
// which sits behind a fake slow link of 20 MiB/s. gpool knows nothing of it:
// the probe jobs run slow_link/slow_link_probe.sh (--probe-bin), which puts
// gpool-probe on that node (its worker hands SLOW_LINK_MIB_S to its tasks)
// over a paced send() (slow_link/slow_send.cc, LD_PRELOAD), so each of its
// bulk rounds lasts at least bytes / 20 MiB/s. The probe must flag exactly
// that node, and the coordinator must then show a `slow` condition on it
// (and on no other) in ListNodes and `gpool nodes`.
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>

#include "client/client.h"
#include "protocol/health.h"
#include "protocol/messages_client.h"
#include "protocol/messages_nodes.h"
#include "tests/local_cluster.h"
#include "tests/ready_cluster.h"

namespace gpool::testing {
namespace {

using namespace std::chrono_literals;

constexpr int kSlowWorker = 3;

LocalClusterOptions ProbeClusterOptions() {
  LocalClusterOptions options;
  options.workers = 4;
  options.gpus_per_worker = 1;
  options.worker_env = {{kSlowWorker, {{"SLOW_LINK_MIB_S", "20"}}}};
  // Tasks inherit a variable of the worker's only when it names it.
  options.worker_flags = {{kSlowWorker, {"--task-env-pass", "SLOW_LINK_MIB_S"}}};
  // The ring reaches each node at its hostname: loopback here, whatever the machine's name resolves to.
  options.worker_hostname = "127.0.0.1";
  return options;
}

class ProbeTest : public ::testing::Test {
 protected:
  ProbeTest() : cluster_(ProbeClusterOptions()) {}
  void SetUp() override { ASSERT_NO_FATAL_FAILURE(StartReadyCluster(cluster_, client_)); }

  // The gpool CLI with a longer limit than LocalCluster::Cli's: the probe waits for its jobs.
  CommandResult Gpool(std::vector<std::string> args) {
    std::vector<std::string> argv = {GPOOL_CLI_BIN, "--coordinator", cluster_.client_endpoint()};
    const std::vector<std::string> security = cluster_.CliSecurityArgs();
    argv.insert(argv.end(), security.begin(), security.end());
    argv.insert(argv.end(), args.begin(), args.end());
    return RunCommand(argv, 150s);
  }

  // The output line of `table` that starts with `node`.
  static std::string Line(const std::string& table, const std::string& node) {
    std::istringstream in(table);
    for (std::string line; std::getline(in, line);) {
      if (line.rfind(node + " ", 0) == 0) return line;
    }
    return "";
  }

  LocalCluster cluster_;
  std::unique_ptr<Client> client_;
};

TEST_F(ProbeTest, ANodeBehindASlowLinkIsFlaggedSlowAndShowsInNodes) {
  // 3 rounds of 8 MiB: 1.2 s at 20 MiB/s on the slow node, milliseconds on the others.
  CommandResult probe =
      Gpool({"probe", "network", "--bytes", "8Mi", "--timeout", "60s", "--probe-bin", GPOOL_SLOW_LINK_PROBE});
  ASSERT_EQ(probe.exit_code, 0) << probe.out << probe.err;
  const std::string slow = cluster_.NodeName(kSlowWorker);
  for (int i = 0; i < 4; ++i) {
    const std::string node = cluster_.NodeName(i);
    const std::string line = Line(probe.out, node);
    ASSERT_FALSE(line.empty()) << node << " missing from:\n" << probe.out;
    // NODE BANDWIDTH LATENCY SLOW NOTE
    std::istringstream fields(line);
    std::string name, bandwidth, latency, flagged;
    fields >> name >> bandwidth >> latency >> flagged;
    EXPECT_EQ(flagged, node == slow ? "yes" : "no") << probe.out;
    if (node == slow) {
      EXPECT_LE(std::stod(bandwidth), 20.5) << probe.out;
    }
  }

  // The coordinator committed it: a slow condition on that node only.
  auto nodes = client_->ListNodes();
  ASSERT_TRUE(nodes.ok()) << nodes.status().ToString();
  for (const auto& node : nodes->nodes) {
    const bool has_slow = std::any_of(node.health.begin(), node.health.end(), [](const HealthCondition& c) {
      return c.kind == "slow" && c.device == "probe/network";
    });
    EXPECT_EQ(has_slow, node.name == slow) << node.name;
  }
  CommandResult listed = cluster_.Cli({"nodes"});
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_NE(Line(listed.out, slow).find("slow"), std::string::npos) << listed.out;
  EXPECT_EQ(Line(listed.out, cluster_.NodeName(0)).find("slow"), std::string::npos) << listed.out;

  // The probe jobs all ended: nothing is left running.
  auto jobs = client_->ListJobs(/*include_finished=*/false, 100);
  ASSERT_TRUE(jobs.ok());
  EXPECT_TRUE(jobs->jobs.empty());
}

}  // namespace
}  // namespace gpool::testing
