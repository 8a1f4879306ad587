// The loop stall meter (issue 49): a slow turn lands in its bucket and in the
// window's max, the time between turns (the poll's wait) is not counted, and
// the max forgets a spike once two windows have passed.
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
  auto turn = [&meter](int64_t at_ns, int64_t work_ns) {
    meter.PollReturned(at_ns);
    meter.PollCalled(at_ns + work_ns);
  };
  turn(0, 200 * kMs);
  EXPECT_NEAR(meter.window_max_seconds(), 0.2, 1e-9);
  // Into the next window: the spike is still within the last 10-20 s.
  turn(LoopStallMeter::kWindowNs + 1 * kMs, 1 * kMs);
  EXPECT_NEAR(meter.window_max_seconds(), 0.2, 1e-9);
  // Two windows on, only the small turns remain.
  turn(2 * LoopStallMeter::kWindowNs + 2 * kMs, 2 * kMs);
  EXPECT_NEAR(meter.window_max_seconds(), 0.001, 1e-9);
  // After an idle gap of more than two windows, nothing from before it.
  turn(10 * LoopStallMeter::kWindowNs, 3 * kMs);
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

}  // namespace
}  // namespace gpool::control
