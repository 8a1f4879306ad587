// The change feed tells a changed summary from an unchanged one by its print
// (summary_print.h): every field must count, nested ones included, or a
// watcher misses a change.
#include "control/watch/summary_print.h"

#include <gtest/gtest.h>

#include "protocol/messages_client.h"
#include "protocol/messages_nodes.h"

namespace gpool::control {
namespace {

JobSummary PrintedJob() {
  JobSummary job;
  job.job_id = 7;
  job.name = "train";
  job.queue = "research";
  job.state = "Running";
  job.tasks_total = 2;
  return job;
}

NodeSummary PrintedNode() {
  NodeSummary node;
  node.name = "n0";
  node.state = "Ready";
  node.labels = {{"rack", "r1"}};
  node.health.push_back(HealthCondition{});
  return node;
}

TEST(SummaryPrintTest, EqualSummariesPrintAlikeAndAnyFieldChangesThePrint) {
  EXPECT_EQ(SummaryPrint(PrintedJob()), SummaryPrint(PrintedJob()));
  EXPECT_EQ(SummaryPrint(PrintedNode()), SummaryPrint(PrintedNode()));
  const size_t job = SummaryPrint(PrintedJob());
  auto changed = [&](auto change) {
    JobSummary other = PrintedJob();
    change(other);
    return SummaryPrint(other) != job;
  };
  EXPECT_TRUE(changed([](JobSummary& j) { j.state = "Succeeded"; }));
  EXPECT_TRUE(changed([](JobSummary& j) { j.tasks_running = 1; }));
  EXPECT_TRUE(changed([](JobSummary& j) { j.finish_ms = 1; }));
  EXPECT_TRUE(changed([](JobSummary& j) { j.restart_reason = "node lost"; }));
  EXPECT_TRUE(changed([](JobSummary& j) { j.session.state = "Open"; })) << "a nested field";
  // Text cannot move between neighbouring fields unnoticed.
  EXPECT_TRUE(changed([](JobSummary& j) {
    j.name = "trainresearch";
    j.queue = "";
  }));

  const size_t node = SummaryPrint(PrintedNode());
  auto node_changed = [&](auto change) {
    NodeSummary other = PrintedNode();
    change(other);
    return SummaryPrint(other) != node;
  };
  EXPECT_TRUE(node_changed([](NodeSummary& n) { n.cordoned = true; }));
  EXPECT_TRUE(node_changed([](NodeSummary& n) { n.labels["rack"] = "r2"; })) << "a map's value";
  EXPECT_TRUE(node_changed([](NodeSummary& n) { n.taints["gpu"] = ""; }));
  EXPECT_TRUE(node_changed([](NodeSummary& n) { n.health.clear(); })) << "a list of nested values";
  EXPECT_TRUE(node_changed([](NodeSummary& n) { n.gpus_used = 3; }));
}

}  // namespace
}  // namespace gpool::control
