// Operator node commands on a real cluster: a cordoned node keeps its
// running task but gets no new ones, across a coordinator restart; labels
// and pools show in `gpool nodes`; bad requests are refused with the right
// exit codes and change nothing.
#include <gtest/gtest.h>

#include "client/client.h"
#include "protocol/messages_client.h"
#include "protocol/messages_nodes.h"
#include "protocol/model/node_update.h"
#include "tests/local_cluster.h"
#include "tests/ready_cluster.h"

namespace gpool::testing {
namespace {

using namespace std::chrono_literals;

class NodeAdminTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_NO_FATAL_FAILURE(StartReadyCluster(cluster_, client_)); }

  static JobSpec Job(const std::string& name, uint32_t gpus, std::string script) {
    return ShellJob(name, gpus, std::move(script));
  }

  // The node a job's task 0 runs on, once it is Running.
  std::string RunningOn(uint64_t job) {
    std::string node;
    WaitFor(
        [&] {
          auto reply = client_->GetJob(JobId(job));
          if (!reply.ok() || reply->summary.state != "Running") return false;
          node = reply->tasks.at(0).node;
          return true;
        },
        30s);
    return node;
  }

  const NodeSummary* Find(const ListNodesReply& nodes, const std::string& name) {
    for (const auto& n : nodes.nodes) {
      if (n.name == name) return &n;
    }
    return nullptr;
  }

  LocalCluster cluster_;
  std::unique_ptr<Client> client_;
};

TEST_F(NodeAdminTest, CordonedNodeKeepsItsTaskButGetsNoNewOnesAcrossARestart) {
  auto first = client_->Submit(Job("first", 1, "sleep 600"), "first");
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  const std::string busy = RunningOn(first->job_id);
  ASSERT_FALSE(busy.empty());

  CommandResult cordon = cluster_.Cli({"node", "cordon", busy});
  ASSERT_EQ(cordon.exit_code, 0) << cordon.out << cordon.err;
  EXPECT_NE(cordon.out.find("cordoned"), std::string::npos) << cordon.out;

  // A restart of the coordinator keeps the cordon: it is replicated state.
  cluster_.KillCoordinator();
  cluster_.StartCoordinator();
  ASSERT_TRUE(WaitFor([&] { return cluster_.AllNodesReady(); }, 30s)) << cluster_.Cli({"nodes"}).out;

  // Binpack would prefer the busy node (fewest free GPUs); the cordon wins.
  for (int i = 0; i < 3; ++i) {
    auto next = client_->Submit(Job("next-" + std::to_string(i), 1, "sleep 600"), "next-" + std::to_string(i));
    ASSERT_TRUE(next.ok()) << next.status().ToString();
    EXPECT_NE(RunningOn(next->job_id), busy) << "a task was placed on the cordoned node";
  }
  auto still = client_->GetJob(JobId(first->job_id));
  ASSERT_TRUE(still.ok());
  EXPECT_EQ(still->summary.state, "Running") << "cordoning must not stop running work";

  auto nodes = client_->ListNodes();
  ASSERT_TRUE(nodes.ok());
  const NodeSummary* node = Find(*nodes, busy);
  ASSERT_NE(node, nullptr);
  EXPECT_TRUE(node->cordoned);
  EXPECT_EQ(node->state, "Ready,Cordoned");

  CommandResult uncordon = cluster_.Cli({"node", "uncordon", busy});
  ASSERT_EQ(uncordon.exit_code, 0) << uncordon.err;
  nodes = client_->ListNodes();
  ASSERT_TRUE(nodes.ok());
  EXPECT_FALSE(Find(*nodes, busy)->cordoned);
}

TEST_F(NodeAdminTest, LabelsAndPoolsShowAndBadRequestsChangeNothing) {
  const std::string name = cluster_.NodeName(0);
  CommandResult label = cluster_.Cli({"node", "label", name, "team=vision", "rack=r7"});
  ASSERT_EQ(label.exit_code, 0) << label.out << label.err;
  CommandResult unlabel = cluster_.Cli({"node", "label", name, "rack-"});
  ASSERT_EQ(unlabel.exit_code, 0) << unlabel.out << unlabel.err;
  CommandResult pool = cluster_.Cli({"node", "pool", name, "exclusive"});
  ASSERT_EQ(pool.exit_code, 0) << pool.out << pool.err;

  auto nodes = client_->ListNodes();
  ASSERT_TRUE(nodes.ok());
  const NodeSummary* node = Find(*nodes, name);
  ASSERT_NE(node, nullptr);
  EXPECT_EQ(node->pool, "exclusive");
  EXPECT_EQ(node->labels.count("team"), 1u);
  EXPECT_EQ(node->labels.count("rack"), 0u);
  EXPECT_EQ(Find(*nodes, cluster_.NodeName(1))->pool, "public");

  // Refused, typed, and nothing changes.
  EXPECT_EQ(cluster_.Cli({"node", "cordon", "no-such-node"}).exit_code, 3);
  EXPECT_EQ(cluster_.Cli({"node", "pool", name, "shared"}).exit_code, 2);
  EXPECT_EQ(cluster_.Cli({"node", "label", name, "bad key=x"}).exit_code, 2);
  // The server checks too: a request that skips the CLI's checks.
  UpdateNode raw;
  raw.node = name;
  raw.op = NodeUpdateOp::kLabel;
  raw.labels = {{"team", "has space"}};
  auto refused = client_->UpdateNode(raw);
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument) << refused.status().ToString();
  auto after = client_->ListNodes();
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(Find(*after, name)->labels, node->labels);
  EXPECT_EQ(Find(*after, name)->pool, "exclusive");
}

}  // namespace
}  // namespace gpool::testing
