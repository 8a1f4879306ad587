// The event-driven simulator: arrivals, waits, departures, preemption and
// the time series, on clusters small enough to follow by hand.
#include "control/sim/event_sim.h"

#include <gtest/gtest.h>

#include "control/sim/plot.h"
#include "control/sim/policies.h"
#include "control/sim/trace.h"
#include "control/sim/workload.h"

namespace gpool::sim {
namespace {

std::vector<TraceNode> OneNode(uint32_t gpus) { return {TraceNode{"n0", 64000, 262144, gpus, "A100"}}; }

SimJob Job(uint64_t id, int64_t arrival_s, int64_t duration_s, uint32_t gpus,
           topology::PriorityClass cls = topology::PriorityClass::kMedium) {
  SimJob sim;
  sim.arrival_ms = arrival_s * 1000;
  sim.duration_ms = duration_s < 0 ? -1 : duration_s * 1000;
  sim.job.id = JobId(id);
  sim.job.queue = "default";
  sim.job.priority_class = cls;
  sim.job.tasks.push_back(topology::PendingTask{0, 0, Resources{gpus, 1000, 1024, ""}});
  sim.gpu_milli = gpus * 1000;
  return sim;
}

// Two 2-GPU jobs on a 2-GPU node: the second waits until the first ends.
TEST(EventSimTest, JobsWaitForRoomAndStartWhenItFrees) {
  const std::vector<SimJob> jobs = {Job(1, 0, 100, 2), Job(2, 10, 50, 2)};
  const EventRun run = RunEvents(OneNode(2), jobs, {}, *PolicyConfig("default"), EventOptions{});
  EXPECT_EQ(run.started, 2u);
  EXPECT_EQ(run.finished, 2u);
  ASSERT_EQ(run.waits_s[1].size(), 2u);
  EXPECT_DOUBLE_EQ(run.waits_s[1][0], 0);
  EXPECT_DOUBLE_EQ(run.waits_s[1][1], 90);  // arrived at 10 s, started at 100 s
  EXPECT_EQ(run.end_ms, 150'000);
  // The cluster was fully allocated the whole time.
  EXPECT_NEAR(run.mean_alloc_pct, 100.0, 1e-9);
  const auto summary = EventSummaryJson(run);
  EXPECT_EQ(summary.at("never_started").get<uint64_t>(), 0u);
  EXPECT_DOUBLE_EQ(summary.at("wait_s").at("medium").at("p99").get<double>(), 90);
}

// A trace whose pods carry node_policy: two 1-GPU pods that spread hold one
// GPU of each 2-GPU node, so the 2-GPU pod after them waits for one to end;
// packed, they leave it a whole node.
TEST(EventSimTest, TracePodsPlacementPolicyDecidesWhetherALargePodWaits) {
  const std::vector<TraceNode> nodes = {TraceNode{"n0", 64000, 262144, 2, "A100"},
                                        TraceNode{"n1", 64000, 262144, 2, "A100"}};
  for (const std::string policy : {"spread", "binpack"}) {
    const std::string csv =
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli,creation_time,deletion_time,scheduled_time,node_policy\n"
        "a,1000,1024,1,1000,0,100,0," + policy + "\n"
        "b,1000,1024,1,1000,0,100,0," + policy + "\n"
        "c,1000,1024,2,1000,1,11,1,\n";
    auto pods = ParseTracePods(csv, "policy.csv");
    ASSERT_TRUE(pods.ok()) << pods.status().ToString();
    const EventRun run = RunEvents(nodes, JobsFromTrace(*pods), {}, *PolicyConfig("default"), EventOptions{});
    EXPECT_EQ(run.finished, 3u) << policy;
    ASSERT_EQ(run.waits_s[1].size(), 3u) << policy;
    // Starts in order: a and b at 0 s, then c (arrived at 1 s).
    EXPECT_DOUBLE_EQ(run.waits_s[1][2], policy == "spread" ? 99 : 0) << policy;
  }
}

// Cycles on the grid: an arrival between two cycles waits for the next.
TEST(EventSimTest, CyclesRunOnTheGrid) {
  EventOptions options;
  options.cycle_ms = 5000;
  const std::vector<SimJob> jobs = {Job(1, 0, 10, 1), Job(2, 3, 10, 1)};
  const EventRun run = RunEvents(OneNode(2), jobs, {}, *PolicyConfig("default"), options);
  ASSERT_EQ(run.waits_s[1].size(), 2u);
  EXPECT_DOUBLE_EQ(run.waits_s[1][1], 2);  // arrived at 3 s, cycle at 5 s
}

// A high-class job preempts a low-class one under the default configuration
// (which runs preempt); the victim waits again and runs after.
TEST(EventSimTest, PreemptionRequeuesTheVictim) {
  const std::vector<SimJob> jobs = {Job(1, 0, 1000, 2, topology::PriorityClass::kLow),
                                    Job(2, 10, 100, 2, topology::PriorityClass::kHigh)};
  const EventRun run = RunEvents(OneNode(2), jobs, {}, *PolicyConfig("default"), EventOptions{});
  EXPECT_GE(run.preemptions, 1u);
  ASSERT_EQ(run.waits_s[2].size(), 1u);
  EXPECT_LE(run.waits_s[2][0], 5.0);
  EXPECT_EQ(run.started, 3u);  // the victim started twice
  EXPECT_EQ(run.finished, 2u);
  EXPECT_GT(run.series.back().preemptions, 0u);
}

// A job larger than the cluster never starts and does not keep the loop alive.
TEST(EventSimTest, ImpossibleJobEndsTheRunWithoutStarting) {
  const std::vector<SimJob> jobs = {Job(1, 0, 10, 4), Job(2, 0, 10, 1)};
  const EventRun run = RunEvents(OneNode(2), jobs, {}, *PolicyConfig("default"), EventOptions{});
  EXPECT_EQ(run.started, 1u);
  EXPECT_EQ(EventSummaryJson(run).at("never_started").get<uint64_t>(), 1u);
}

TEST(EventSimTest, TimeSeriesCsvAndPlotScript) {
  const std::vector<SimJob> jobs = {Job(1, 0, 10, 1)};
  const std::vector<topology::WorkloadShape> workload = {{2, 1000, 1000, "", 1.0}};
  const EventRun run = RunEvents(OneNode(2), jobs, workload, *PolicyConfig("fragmentation"), EventOptions{});
  const std::string csv = TimeSeriesCsv(run);
  EXPECT_EQ(csv.substr(0, csv.find('\n')),
            "t_s,alloc_pct,frag_pct,waiting,running,preemptions,wait_s_low,wait_s_medium,wait_s_high");
  // After the first cycle one GPU of two is used and a 2-GPU shape no longer fits.
  EXPECT_NE(csv.find("\n0.000,50.000,50.000,0,1,0,,0.000,\n"), std::string::npos) << csv;
  const std::string script = TimeSeriesScript(run, "fragmentation", "/tmp/x.png");
  EXPECT_NE(script.find("'GPU allocated %'"), std::string::npos);
}

}  // namespace
}  // namespace gpool::sim
