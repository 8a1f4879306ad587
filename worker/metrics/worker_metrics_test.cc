#include "protocol/health.h"
#include "worker/metrics/worker_metrics.h"

#include <gtest/gtest.h>

namespace gpool::worker {
namespace {

TEST(WorkerMetricsTest, ReportsMeasuredGpusAndLeavesUnmeasuredOnesOut) {
  LinkStats link;
  link.heartbeats_sent = 7;
  link.binds = 2;
  link.command_seconds.Observe(0.002);
  std::vector<GpuInfo> gpus = {GpuInfo{.index = 0, .uuid = "GPU-a", .model = "H100"},
                               GpuInfo{.index = 1, .uuid = "GPU-b", .model = "H100"}};
  std::vector<GpuSample> samples = {GpuSample{.index = 0, .known = true, .utilization_pct = 42,
                                              .memory_used_bytes = 1 << 30, .memory_total_bytes = 80ull << 30},
                                    GpuSample{.index = 1, .known = false}};
  std::vector<HealthCondition> health = {HealthCondition{.kind = "xid", .device = "gpu/1", .severity = "fatal"}};
  WorkerMetricsInput in;
  in.node = "n1";
  in.version = "0.1.0";
  in.link = &link;
  in.registered = true;
  in.coordinator_silent_ms = 250;
  in.tasks_running = 3;
  in.gpus = &gpus;
  in.health = &health;
  in.samples = &samples;
  TaskLogJanitor::Totals task_logs;
  task_logs.removed_logs = 12;
  task_logs.removed_bytes = 3'000;
  task_logs.kept_logs = 5;
  task_logs.kept_bytes = 700;
  in.task_logs = &task_logs;
  const std::string page = RenderWorkerMetrics(in);
  for (const char* line : {"gpool_worker_registered 1\n", "gpool_worker_task_logs_removed_total 12\n",
                           "gpool_worker_task_logs_removed_bytes_total 3000\n", "gpool_worker_task_logs_kept 5\n",
                           "gpool_worker_task_logs_kept_bytes 700\n", "gpool_worker_tasks_running 3\n",
                           "gpool_worker_heartbeats_sent_total 7\n", "gpool_worker_commands_total{type=\"bind\"} 2\n",
                           "gpool_worker_coordinator_silence_seconds 0.25\n",
                           "gpool_worker_health_conditions{kind=\"xid\",severity=\"fatal\"} 1\n",
                           "gpool_gpu_utilization_ratio{node=\"n1\",gpu=\"0\",uuid=\"GPU-a\",model=\"H100\"} 0.42\n",
                           "gpool_gpu_memory_used_bytes{node=\"n1\",gpu=\"0\",uuid=\"GPU-a\",model=\"H100\"} 1073741824\n",
                           "gpool_worker_command_duration_seconds_count 1\n"}) {
    EXPECT_NE(page.find(line), std::string::npos) << line << "\n" << page;
  }
  // GPU 1 was not measured: no series, rather than a 0 % that would look idle.
  EXPECT_EQ(page.find("gpu=\"1\""), std::string::npos) << page;
}

TEST(WorkerMetricsTest, WithoutNvmlThereAreNoGpuFamilies) {
  LinkStats link;
  WorkerMetricsInput in;
  in.node = "n1";
  in.link = &link;
  const std::string page = RenderWorkerMetrics(in);
  EXPECT_EQ(page.find("gpool_gpu_"), std::string::npos);
  EXPECT_EQ(page.find("gpool_worker_task_logs_"), std::string::npos) << "no retention, no series";
  EXPECT_NE(page.find("# TYPE gpool_worker_info gauge"), std::string::npos);
}

}  // namespace
}  // namespace gpool::worker
