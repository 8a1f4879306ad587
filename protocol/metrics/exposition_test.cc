#include "protocol/metrics/exposition.h"

#include <gtest/gtest.h>

namespace gpool::metrics {
namespace {

TEST(ExpositionTest, WritesFamiliesInTheTextFormat) {
  Exposition out;
  out.Family("gpool_jobs", Type::kGauge, "Jobs by state.");
  out.Sample({{"state", "pending"}}, 3);
  out.Sample({{"state", "running"}}, 2.5);
  out.Single("gpool_raft_commits_total", Type::kCounter, "Commits.", 10);
  EXPECT_EQ(out.text(),
            "# HELP gpool_jobs Jobs by state.\n# TYPE gpool_jobs gauge\n"
            "gpool_jobs{state=\"pending\"} 3\ngpool_jobs{state=\"running\"} 2.5\n"
            "# HELP gpool_raft_commits_total Commits.\n# TYPE gpool_raft_commits_total counter\n"
            "gpool_raft_commits_total 10\n");
  EXPECT_EQ(out.families(), 2u);
}

TEST(ExpositionTest, EscapesLabelValuesAndHelp) {
  Exposition out;
  out.Family("gpool_x", Type::kGauge, "a\\b\nc");
  out.Sample({{"node", "a\"b\\c\nd"}}, 1);
  EXPECT_EQ(out.text(), "# HELP gpool_x a\\\\b\\nc\n# TYPE gpool_x gauge\ngpool_x{node=\"a\\\"b\\\\c\\nd\"} 1\n");
}

TEST(ExpositionTest, NumbersInPrometheusForm) {
  std::string s;
  AppendNumber(s, 1.0 / 0.0);
  s += ' ';
  AppendNumber(s, -1.0 / 0.0);
  s += ' ';
  AppendNumber(s, 0.0 / 0.0);
  s += ' ';
  AppendNumber(s, 1e20);
  s += ' ';
  AppendNumber(s, -42);
  EXPECT_EQ(s, "+Inf -Inf NaN 1e+20 -42");
}

TEST(ExpositionTest, HistogramBucketsAreCumulativeWithInf) {
  Histogram h({0.1, 1});
  h.Observe(0.05);
  h.Observe(0.5);
  h.Observe(0.5);
  h.Observe(7);
  Exposition out;
  out.Family("gpool_lat_seconds", Type::kHistogram, "L.");
  out.Observe({{"op", "x"}}, h);
  EXPECT_EQ(out.text(),
            "# HELP gpool_lat_seconds L.\n# TYPE gpool_lat_seconds histogram\n"
            "gpool_lat_seconds_bucket{op=\"x\",le=\"0.1\"} 1\n"
            "gpool_lat_seconds_bucket{op=\"x\",le=\"1\"} 3\n"
            "gpool_lat_seconds_bucket{op=\"x\",le=\"+Inf\"} 4\n"
            "gpool_lat_seconds_sum{op=\"x\"} 8.05\n"
            "gpool_lat_seconds_count{op=\"x\"} 4\n");
}

TEST(ExpositionTest, BoundsIncrease) {
  for (const auto& bounds : {LatencyBounds(), WaitBounds(), CountBounds()}) {
    ASSERT_FALSE(bounds.empty());
    for (size_t i = 1; i < bounds.size(); ++i) EXPECT_LT(bounds[i - 1], bounds[i]);
  }
}

}  // namespace
}  // namespace gpool::metrics
