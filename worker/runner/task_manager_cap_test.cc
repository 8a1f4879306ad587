// TaskManager at its cap of records (options.max_tasks): a node that runs
// short tasks faster than the cap an hour forgets its oldest acknowledged
// finished records early rather than refusing every bind until they expire;
// records it may still need (running, unacknowledged, under a minute old)
// are kept and the bind is refused.
#include <gtest/gtest.h>

#include "protocol/base/testing/fake_clock.h"
#include "protocol/messages_worker.h"
#include "worker/runner/task_manager.h"
#include "worker/runner/task_manager_test_util.h"
#include "worker/runner/testing/fake_process_launcher.h"
#include "worker/test_util.h"

namespace gpool::worker {
namespace {

class TaskManagerCapTest : public ::testing::Test {
 protected:
  void Open(size_t max_tasks) {
    TaskManagerOptions options = testing::TaskManagerTestOptions(node_, dir_, &launcher_, &clock_, log_);
    options.finished_retention_ms = 3'600'000;
    options.max_tasks = max_tasks;
    auto tm = TaskManager::Open(std::move(options));
    ASSERT_TRUE(tm.ok()) << tm.status().ToString();
    tm_ = std::move(tm.value());
  }

  static BindTask Bind(uint64_t job) {
    BindTask bind;
    bind.task = TaskId{JobId(job), 0, 0};
    bind.job_name = "job" + std::to_string(job);
    bind.num_tasks = 1;
    bind.command = {"true"};
    return bind;
  }

  // Binds and starts job `job`'s task; returns its pid.
  int64_t Start(uint64_t job) {
    EXPECT_TRUE(tm_->Bind(Bind(job)).ok());
    tm_->Poll();
    return launcher_.launched().back().pid;
  }

  // Ends it; with `ack`, the coordinator acknowledges every event so far.
  void End(int64_t pid, bool ack) {
    launcher_.Exit(pid, 0);
    tm_->Poll();
    if (!ack) return;
    std::vector<uint64_t> seqs;
    for (const auto& [seq, event] : tm_->Outbox()) seqs.push_back(seq);
    for (uint64_t seq : seqs) tm_->AckEvent(seq);
  }

  size_t Launched() const { return launcher_.launched().size(); }

  NodeSpec node_ = testing::TaskManagerNode(4);
  FakeClock clock_;
  FakeProcessLauncher launcher_;
  testing::TempDir dir_;
  testing::CapturedLog log_;
  std::unique_ptr<TaskManager> tm_;
};

TEST_F(TaskManagerCapTest, AtTheCapTheOldestAcknowledgedRecordsAreForgottenFirst) {
  Open(10);
  for (uint64_t job = 1; job <= 10; ++job) {
    End(Start(job), /*ack=*/true);
    clock_.Advance(1'000);
  }
  clock_.Advance(60'000);
  ASSERT_TRUE(tm_->Bind(Bind(11)).ok()) << "room made, an hour before the retention would have";
  tm_->Poll();
  ASSERT_EQ(Launched(), 11u);
  EXPECT_TRUE(log_.Contains("finished task records forgotten before their retention to make room count=2"))
      << log_.text();
  // Down to 90% of the cap, oldest first: jobs 1 and 2 went, 3 is still known.
  ASSERT_TRUE(tm_->Bind(Bind(3)).ok());
  tm_->Poll();
  EXPECT_EQ(Launched(), 11u) << "a duplicate bind of a remembered task starts nothing";
  ASSERT_TRUE(tm_->Bind(Bind(2)).ok());
  tm_->Poll();
  EXPECT_EQ(Launched(), 12u) << "job 2 was forgotten";
}

TEST_F(TaskManagerCapTest, RecordsStillNeededAreKeptAndTheBindRefused) {
  Open(3);
  const int64_t running = Start(1);
  End(Start(2), /*ack=*/false);
  End(Start(3), /*ack=*/true);  // acknowledges job 2's exit too
  clock_.Advance(59'000);
  auto refused = tm_->Bind(Bind(4));
  EXPECT_EQ(refused.code(), StatusCode::kResourceExhausted) << "the finished records are under a minute old";
  EXPECT_NE(refused.message().find("already tracks 3 tasks"), std::string::npos) << refused.ToString();

  clock_.Advance(1'000);
  ASSERT_TRUE(tm_->Bind(Bind(4)).ok());  // the older of jobs 2 and 3 goes
  tm_->Poll();
  EXPECT_EQ(Launched(), 4u);
  EXPECT_TRUE(tm_->Bind(Bind(5)).ok()) << "one finished record was left to forget";
  tm_->Poll();
  EXPECT_EQ(tm_->Bind(Bind(6)).code(), StatusCode::kResourceExhausted) << "three tasks running: none can go";

  End(running, /*ack=*/false);
  clock_.Advance(120'000);
  EXPECT_EQ(tm_->Bind(Bind(6)).code(), StatusCode::kResourceExhausted)
      << "an exit not yet acknowledged is still to be reported";
}

}  // namespace
}  // namespace gpool::worker
