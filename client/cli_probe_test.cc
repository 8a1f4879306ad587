// `gpool probe network|gpu` (cli_probe.cc) against a FakeCluster whose probe
// jobs "run" when polled: each ends with a canned log, as gpool-probe would
// have printed it on that node.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "client/cli.h"
#include "client/cli_test_fixture.h"
#include "client/probe/probe_line.h"
#include "client/testing/fake_client.h"
#include "protocol/messages_client.h"
#include "protocol/messages_nodes.h"
#include "protocol/model/probe.h"

namespace gpool::client::testing {

class ProbeCliTest : public CliTest {
 protected:
  // How a node's probe job ends: its final state and its log; Pending: never ends.
  struct Outcome {
    JobState state = JobState::kSucceeded;
    std::string log;
  };

  ProbeCliTest() {
    for (int i = 0; i < 4; ++i) AddNode("node-" + std::to_string(i), "Ready", i == 1 ? "" : "host-" + std::to_string(i));
    AddNode("down", "NotReady", "host-down");
    AddNode("fenced", "Ready,Cordoned", "host-fenced").cordoned = true;
    cluster_->on_get_job = [this](FakeCluster& cluster, uint64_t job_id) {
      auto& job = cluster.jobs.at(job_id);
      if (job.summary.state != "Pending") return;
      const std::string node = job.spec.node_selector.at("gpool.io/node");
      auto it = outcomes_.find(node);
      if (it == outcomes_.end() || it->second.state == JobState::kPending) return;
      cluster.logs[{job_id, 0}] = it->second.log;
      cluster.SetJobState(job_id, it->second.state, it->second.state == JobState::kFailed ? "exit code 1" : "");
    };
  }

  NodeSummary& AddNode(const std::string& name, const std::string& state, const std::string& hostname) {
    NodeSummary n;
    n.name = name;
    n.state = state;
    n.hostname = hostname;
    n.pool = "public";
    n.gpus_total = 8;
    cluster_->nodes.nodes.push_back(n);
    return cluster_->nodes.nodes.back();
  }

  void Network(const std::string& node, double mib_s) {
    outcomes_[node] = {JobState::kSucceeded, "starting\n" + probe::FormatNetworkLine({mib_s, 40, "peer:1"}) + "\n"};
  }

  const SubmitJob& SubmitFor(const std::string& node) {
    for (const auto& s : cluster_->submits) {
      if (s.spec.node_selector.at("gpool.io/node") == node) return s;
    }
    ADD_FAILURE() << "no probe job for " << node;
    return cluster_->submits.at(0);
  }

  // The line of the table that starts with `node`.
  std::string Row(const std::string& node) {
    const std::string out = out_.str();
    const size_t at = out.find("\n" + node + " ");
    if (at == std::string::npos) return "";
    return out.substr(at + 1, out.find('\n', at + 1) - at - 1);
  }

  std::map<std::string, Outcome> outcomes_;
};

TEST_F(ProbeCliTest, NetworkRingFlagsTheSlowNodeAndReportsEveryMeasuredNode) {
  Network("node-0", 1000);
  Network("node-1", 1010);
  Network("node-2", 990);
  Network("node-3", 20);
  ASSERT_EQ(Run({"probe", "network", "--probe-bin", "/opt/gpool/gpool-probe", "--port-base", "30000", "--bytes",
                 "8Mi", "--timeout", "30s"}),
            kExitOk)
      << err_.str();

  // One job per Ready, uncordoned node, in name order, pinned by its built-in label.
  ASSERT_EQ(cluster_->submits.size(), 4u);
  const std::string ring = "host-0:30000,127.0.0.1:30001,host-2:30002,host-3:30003";
  for (int i = 0; i < 4; ++i) {
    const std::string node = "node-" + std::to_string(i);
    const JobSpec& spec = SubmitFor(node).spec;
    EXPECT_EQ(spec.name, "probe-network");
    EXPECT_EQ(spec.node_selector, (std::map<std::string, std::string>{{"gpool.io/node", node}}));
    EXPECT_EQ(spec.restart.policy, "never");
    ASSERT_EQ(spec.tasks.size(), 1u);
    EXPECT_EQ(spec.tasks[0].resources.gpus, 0u);
    EXPECT_EQ(spec.tasks[0].command,
              (std::vector<std::string>{"/opt/gpool/gpool-probe", "network", "--rank", std::to_string(i), "--ring", ring,
                                        "--timeout-ms", "30000", "--bytes", "8Mi"}));
  }

  ASSERT_EQ(cluster_->probe_reports.size(), 1u);
  const ReportProbe& report = cluster_->probe_reports[0];
  EXPECT_EQ(report.kind, ProbeKind::kNetwork);
  ASSERT_EQ(report.results.size(), 4u);
  for (const auto& r : report.results) {
    EXPECT_EQ(r.slow, r.node == "node-3") << r.node;
    EXPECT_EQ(r.latency_us, 40u);
  }
  EXPECT_EQ(report.results[3].bandwidth_kib_s, 20u * 1024);
  EXPECT_EQ(report.results[3].message, "20.0 MiB/s, median 995.0, MAD x1.01, below 895.5");

  EXPECT_EQ(Row("node-3"), "node-3  20.0              40.0         yes   to peer:1");
  EXPECT_EQ(Row("node-0"), "node-0  1000.0            40.0         no    to peer:1");
  EXPECT_NE(out_.str().find("median 995.0 MiB/s, MAD x1.01, slow below 895.5"), std::string::npos) << out_.str();
  EXPECT_NE(out_.str().find("1 of 4 flagged"), std::string::npos) << out_.str();
  EXPECT_EQ(Row("down"), "");
  EXPECT_EQ(Row("fenced"), "");
}

TEST_F(ProbeCliTest, AFailedJobIsNotMeasuredNotFlaggedAndTheExitSaysIncomplete) {
  Network("node-0", 1000);
  Network("node-1", 1010);
  Network("node-2", 990);
  outcomes_["node-3"] = {JobState::kFailed,
                         probe::FormatErrorLine("network", "DeadlineExceeded: could not connect to host-0:30000") + "\n"};
  EXPECT_EQ(Run({"probe", "network", "--probe-bin", "gpool-probe"}), kExitJobUnsuccessful);
  ASSERT_EQ(cluster_->probe_reports.size(), 1u);
  EXPECT_EQ(cluster_->probe_reports[0].results.size(), 3u);
  for (const auto& r : cluster_->probe_reports[0].results) EXPECT_FALSE(r.slow);
  EXPECT_NE(Row("node-3").find("not measured: job 4 Failed: exit code 1; DeadlineExceeded: could not connect"),
            std::string::npos)
      << out_.str();
  EXPECT_NE(err_.str().find("probe incomplete: 1 of 4 nodes not measured"), std::string::npos) << err_.str();
}

TEST_F(ProbeCliTest, JobsThatDoNotFinishInTimeAreCancelled) {
  Network("node-0", 1000);
  Network("node-1", 1000);
  Network("node-2", 1000);
  outcomes_["node-3"] = {JobState::kPending, ""};
  EXPECT_EQ(Run({"probe", "network", "--timeout", "10s"}), kExitJobUnsuccessful);
  ASSERT_EQ(cluster_->cancels.size(), 1u);
  EXPECT_EQ(cluster_->cancels[0].job_id, 4u);
  EXPECT_NE(Row("node-3").find("did not finish in time (cancelled)"), std::string::npos) << out_.str();
  // It waited for the tasks' own timeout and the grace, on the fake clock, and no longer.
  int64_t slept = 0;
  for (int64_t ms : sleeps_) slept += ms;
  EXPECT_GE(slept, 10'000 + 15'000);
  EXPECT_LT(slept, 10'000 + 15'000 + 1'000);
  ASSERT_EQ(cluster_->probe_reports.size(), 1u);
  EXPECT_EQ(cluster_->probe_reports[0].results.size(), 3u);
}

TEST_F(ProbeCliTest, NamedNodesAndFewerThanThreeFlagNothing) {
  Network("node-0", 1000);
  Network("node-2", 10);
  ASSERT_EQ(Run({"probe", "network", "--nodes", "node-2,node-0,node-2", "--port-base", "40000"}), kExitOk) << err_.str();
  ASSERT_EQ(cluster_->submits.size(), 2u);
  EXPECT_EQ(cluster_->submits[0].spec.tasks[0].command[5], "host-2:40000,host-0:40001");
  ASSERT_EQ(cluster_->probe_reports.size(), 1u);
  for (const auto& r : cluster_->probe_reports[0].results) EXPECT_FALSE(r.slow);
  EXPECT_NE(out_.str().find("2 of 2 nodes measured: the rule needs 3 or more, so no node is flagged"),
            std::string::npos)
      << out_.str();
}

TEST_F(ProbeCliTest, GpuAsksForOneGpuPerNodeAndNoDriverIsNotMeasured) {
  for (int i = 0; i < 3; ++i) {
    outcomes_["node-" + std::to_string(i)] = {JobState::kSucceeded,
                                              probe::FormatGpuLine({0, "H100", 20000.0 + i, 21000}) + "\n"};
  }
  outcomes_["node-3"] = {JobState::kSucceeded, probe::FormatErrorLine("gpu", "no CUDA driver") + "\n"};
  EXPECT_EQ(Run({"probe", "gpu", "--k", "2.5"}), kExitJobUnsuccessful);
  ASSERT_EQ(cluster_->submits.size(), 4u);
  EXPECT_EQ(cluster_->submits[0].spec.tasks[0].resources.gpus, 1u);
  EXPECT_EQ(cluster_->submits[0].spec.tasks[0].command[1], "gpu");
  EXPECT_EQ(cluster_->submits[0].spec.name, "probe-gpu");
  ASSERT_EQ(cluster_->probe_reports.size(), 1u);
  EXPECT_EQ(cluster_->probe_reports[0].kind, ProbeKind::kGpu);
  EXPECT_EQ(cluster_->probe_reports[0].results.size(), 3u);
  EXPECT_NE(Row("node-3").find("not measured: no CUDA driver"), std::string::npos) << out_.str();
  EXPECT_NE(Row("node-0").find("1 GPU"), std::string::npos) << out_.str();
}

TEST_F(ProbeCliTest, JsonPrintsTheReport) {
  for (int i = 0; i < 4; ++i) Network("node-" + std::to_string(i), 1000);
  ASSERT_EQ(Run({"probe", "network", "--json"}), kExitOk) << err_.str();
  auto j = nlohmann::json::parse(out_.str());
  EXPECT_EQ(j["kind"], "network");
  EXPECT_EQ(j["results"].size(), 4u);
  EXPECT_EQ(err_.str(), "");
}

TEST_F(ProbeCliTest, IdleProbesOnlyNodesWithoutTasks) {
  for (int i = 0; i < 4; ++i) Network("node-" + std::to_string(i), 1000);
  cluster_->nodes.nodes[0].tasks = 2;
  ASSERT_EQ(Run({"probe", "network", "--idle"}), kExitOk) << err_.str();
  ASSERT_EQ(cluster_->submits.size(), 3u);
  EXPECT_EQ(Row("node-0"), "");
  // Nothing idle: nothing to do, and no error for a timer to report.
  for (auto& n : cluster_->nodes.nodes) n.tasks = 1;
  EXPECT_EQ(Run({"probe", "network", "--idle"}), kExitOk);
  EXPECT_EQ(err_.str(), "gpool: no idle node to probe\n");
  EXPECT_EQ(cluster_->submits.size(), 3u);
}

TEST_F(ProbeCliTest, BadRequestsAreRefusedBeforeAnythingIsSubmitted) {
  EXPECT_EQ(Run({"probe", "disk"}), kExitUsage);
  EXPECT_EQ(err_.str(), "gpool: InvalidArgument: probe: expected network or gpu, got 'disk'\nRun 'gpool --help' for usage.\n");
  EXPECT_EQ(Run({"probe"}), kExitUsage);
  EXPECT_EQ(Run({"probe", "network", "--k", "0"}), kExitUsage);
  EXPECT_EQ(err_.str(), "gpool: InvalidArgument: --k: expected a number above 0 and at most 100, got '0'\n");
  EXPECT_EQ(Run({"probe", "network", "--bytes", "lots"}), kExitUsage);
  EXPECT_EQ(Run({"probe", "network", "--timeout", "0"}), kExitUsage);
  EXPECT_EQ(Run({"probe", "network", "--port-base", "65534"}), kExitUsage);
  EXPECT_EQ(Run({"probe", "network", "--nodes", "nope"}), kExitNotFound);
  EXPECT_EQ(Run({"probe", "network", "--nodes", "fenced"}), kExitError);
  EXPECT_NE(err_.str().find("uncordon it first"), std::string::npos) << err_.str();
  EXPECT_TRUE(cluster_->submits.empty());
  EXPECT_TRUE(cluster_->probe_reports.empty());
}

}  // namespace gpool::client::testing
