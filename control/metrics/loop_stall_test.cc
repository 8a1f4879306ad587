// The loop stall meter (issue 49): a slow turn lands in its bucket and in the
// window's max, the time between turns (the poll's wait) is not counted, and
// the max forgets a spike once two windows have passed; a slow turn is
// broken down by phase.
#include "control/metrics/loop_stall.h"

#include <gtest/gtest.h>

#include "control/metrics/coordinator_metrics.h"
#include "control/worker_table.h"

namespace gpool::control {
namespace {

constexpr int64_t kMs = 1'000'000;

// Buckets (not cumulative) below `le`, from the meter's histogram.
uint64_t CountBelow(const metrics::Histogram& h, double le) {
  uint64_t n = 0;
  for (size_t i = 0; i < h.bounds().size() && h.bounds()[i] <= le; ++i) n += h.counts()[i];
  return n;
}

TEST(LoopStallMeterTest, SlowTurnIsRecordedAndWaitsAreNot) {
  LoopStallMeter meter;
  meter.PollCalled(0);  // the first poll: no turn before it
  EXPECT_EQ(meter.iterations().count(), 0u);
  // A fast turn after a long wait in the poll: only the 1 ms of work counts.
  meter.PollReturned(500 * kMs);
  meter.PollCalled(501 * kMs);
  // A slow turn: 80 ms of work.
  meter.PollReturned(600 * kMs);
  meter.PollCalled(680 * kMs);
  ASSERT_EQ(meter.iterations().count(), 2u);
  EXPECT_NEAR(meter.iterations().sum(), 0.081, 1e-9);
  EXPECT_EQ(CountBelow(meter.iterations(), 0.001), 1u);
  EXPECT_EQ(CountBelow(meter.iterations(), 0.05), 1u);  // the slow one is over the 50 ms budget
  EXPECT_EQ(CountBelow(meter.iterations(), 0.1), 2u);
  EXPECT_NEAR(meter.window_max_seconds(), 0.080, 1e-9);
  // A PollCalled without a PollReturned (a poll interrupted by a signal)
  // records nothing.
  meter.PollCalled(900 * kMs);
  EXPECT_EQ(meter.iterations().count(), 2u);
}

TEST(LoopStallMeterTest, WindowMaxForgetsASpikeAfterTwoWindows) {
  LoopStallMeter meter;
  constexpr int64_t kW = LoopStallMeter::kWindowNs;
  // A turn ending at `end_ns` that took `work_ns`.
  auto turn = [&meter](int64_t end_ns, int64_t work_ns) {
    meter.PollReturned(end_ns - work_ns);
    meter.PollCalled(end_ns);
  };
  turn(200 * kMs, 200 * kMs);  // the first window starts here
  EXPECT_NEAR(meter.window_max_seconds(), 0.2, 1e-9);
  turn(kW + 100 * kMs, 1 * kMs);  // still the first window
  EXPECT_NEAR(meter.window_max_seconds(), 0.2, 1e-9);
  // The second window: the spike is within the last 10-20 s, still seen.
  turn(kW + 300 * kMs, 2 * kMs);
  EXPECT_NEAR(meter.window_max_seconds(), 0.2, 1e-9);
  // The third: only what the second held and this one.
  turn(2 * kW + 400 * kMs, 1 * kMs);
  EXPECT_NEAR(meter.window_max_seconds(), 0.002, 1e-9);
  // After an idle gap of two windows or more, nothing from before it.
  turn(10 * kW, 3 * kMs);
  EXPECT_NEAR(meter.window_max_seconds(), 0.003, 1e-9);
}

// What /metrics says of it: the histogram and the max, by name.
TEST(LoopStallMeterTest, RenderedOnTheMetricsPage) {
  state::ClusterState state;
  ControlMetrics recorded(state);
  recorded.loop.PollReturned(0);
  recorded.loop.PollCalled(80 * kMs);
  WorkerTable workers;
  CoordinatorMetricsInput input;
  input.state = &state;
  input.recorded = &recorded;
  input.workers = &workers;
  input.replica_id = "1";
  input.version = "test";
  const std::string page = RenderCoordinatorMetrics(input);
  EXPECT_NE(page.find("# TYPE gpool_loop_iteration_seconds histogram\n"), std::string::npos) << page;
  EXPECT_NE(page.find("\ngpool_loop_iteration_seconds_bucket{le=\"0.05\"} 0\n"), std::string::npos) << page;
  EXPECT_NE(page.find("\ngpool_loop_iteration_seconds_bucket{le=\"0.1\"} 1\n"), std::string::npos) << page;
  EXPECT_NE(page.find("\ngpool_loop_iteration_seconds_count 1\n"), std::string::npos) << page;
  EXPECT_NE(page.find("\ngpool_loop_iteration_max_seconds 0.08\n"), std::string::npos) << page;
}

// A slow turn says where its time went, phase by phase; a fast one says
// nothing and leaves the last slow turn's account as it was.
TEST(LoopStallMeterTest, ASlowTurnIsBrokenDownByThePhasesTheLoopMarked) {
  LoopStallMeter meter;
  meter.PollReturned(0);
  meter.Phase("raft", 5 * kMs);
  meter.Phase("apply", 150 * kMs);
  meter.PollCalled(151 * kMs);
  EXPECT_EQ(meter.last_slow_turn(), "raft:5 apply:145 rest:1");
  meter.PollReturned(200 * kMs);
  meter.Phase("raft", 210 * kMs);
  meter.PollCalled(220 * kMs);  // 20 ms: not slow
  EXPECT_EQ(meter.last_slow_turn(), "raft:5 apply:145 rest:1");
  meter.Phase("raft", 300 * kMs);  // between turns (in the poll): not counted
  meter.PollReturned(400 * kMs);
  meter.PollCalled(520 * kMs);
  EXPECT_EQ(meter.last_slow_turn(), "rest:120") << "marks of the turn before are not carried over";
}

}  // namespace
}  // namespace gpool::control
