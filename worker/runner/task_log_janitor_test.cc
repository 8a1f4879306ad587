// TaskLogJanitor: the logs of tasks no longer live go by age, by number and
// by bytes, oldest first, a bounded amount of work per step; live tasks'
// logs and files not named like a log stay. Then the same through a
// TaskManager's Poll.
#include "worker/runner/task_log_janitor.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "protocol/base/testing/fake_clock.h"
#include "worker/runner/task_env.h"
#include "worker/runner/task_manager.h"
#include "worker/runner/task_manager_test_util.h"
#include "worker/runner/testing/fake_process_launcher.h"
#include "worker/test_util.h"

namespace gpool::worker {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kHourMs = 3'600'000;

TaskId Task(uint64_t job) { return TaskId{JobId(job), 0, 0}; }

void WriteFile(const std::string& path, size_t bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << std::string(bytes, 'x');
}

void SetMtime(const std::string& path, int64_t wall_ms) {
  struct timespec times[2];
  times[0].tv_sec = times[1].tv_sec = wall_ms / 1000;
  times[0].tv_nsec = times[1].tv_nsec = (wall_ms % 1000) * 1'000'000;
  ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, 0), 0) << path;
}

TEST(ParseTaskLogNameTest, OnlyATasksOwnLogNameIsOne) {
  auto task = ParseTaskLogName("17.3.2.log");
  ASSERT_TRUE(task.has_value());
  EXPECT_EQ(*task, (TaskId{JobId(17), 3, 2}));
  for (const char* other : {"17.3.2.log.1", "17.3.2.log.dropped", "17.3.2.hostfile", "17.3.log", "17.3.2.1.log",
                            "a.0.0.log", "+1.0.0.log", "-1.0.0.log", " 1.0.0.log", "1..0.log", ".log", "log",
                            "1.0.4294967296.log", "123456789012345678901.0.0.log", "1.0.0.LOG"}) {
    EXPECT_FALSE(ParseTaskLogName(other).has_value()) << other;
  }
}

class TaskLogJanitorTest : public ::testing::Test {
 protected:
  void SetUp() override { fs::create_directories(dir()); }
  std::string dir() const { return temp_.path() + "/tasks"; }
  std::string LogOf(uint64_t job) const { return TaskLogPath(dir(), Task(job)); }

  // Job `job`'s log, `bytes` long, last written `age_ms` ago.
  void Log(uint64_t job, int64_t age_ms, size_t bytes = 10) {
    WriteFile(LogOf(job), bytes);
    SetMtime(LogOf(job), clock_.WallMs() - age_ms);
  }

  // Steps until the pass under way ends; returns how many steps it took.
  int Pass(TaskLogJanitor& janitor) {
    int steps = 0;
    do {
      janitor.Step(live_);
      ++steps;
    } while (janitor.pass_in_progress() && steps < 10'000);
    return steps;
  }

  std::set<uint64_t> Remaining() const {
    std::set<uint64_t> jobs;
    for (const auto& entry : fs::directory_iterator(dir())) {
      if (!fs::is_regular_file(entry.symlink_status())) continue;  // the decoys below
      if (auto task = ParseTaskLogName(entry.path().filename().string())) jobs.insert(task->job.value());
    }
    return jobs;
  }

  TaskLogJanitor Janitor(TaskLogRetention retention) { return TaskLogJanitor(dir(), retention, &clock_, log_.logger()); }

  testing::TempDir temp_;
  FakeClock clock_;
  testing::CapturedLog log_;
  std::set<uint64_t> live_jobs_;
  TaskLogJanitor::LivePredicate live_ = [this](const TaskId& id) { return live_jobs_.count(id.job.value()) > 0; };
};

TEST_F(TaskLogJanitorTest, OldLogsGoWithWhatCappingLeftAndLiveTasksAndOtherFilesStay) {
  Log(1, 8 * 24 * kHourMs);  // past a week
  WriteFile(LogOf(1) + ".1", 5);
  WriteFile(LogOf(1) + ".dropped", 3);
  Log(2, 6 * 24 * kHourMs);  // within it
  Log(3, 30 * 24 * kHourMs);  // older still, but its task runs (a quiet one)
  live_jobs_ = {3};
  WriteFile(dir() + "/4.0.0.hostfile", 5);
  SetMtime(dir() + "/4.0.0.hostfile", clock_.WallMs() - 30 * 24 * kHourMs);
  fs::create_directories(dir() + "/5.0.0.log");  // a directory named like a log is not one
  fs::create_symlink(dir() + "/4.0.0.hostfile", dir() + "/6.0.0.log");

  TaskLogJanitor janitor = Janitor(TaskLogRetention{});  // the defaults: a week, 10,000 logs
  Pass(janitor);
  EXPECT_EQ(Remaining(), (std::set<uint64_t>{2, 3}));
  EXPECT_FALSE(fs::exists(LogOf(1) + ".1"));
  EXPECT_FALSE(fs::exists(LogOf(1) + ".dropped"));
  EXPECT_TRUE(fs::exists(dir() + "/4.0.0.hostfile"));
  EXPECT_TRUE(fs::is_directory(dir() + "/5.0.0.log"));
  EXPECT_TRUE(fs::is_symlink(dir() + "/6.0.0.log"));
  EXPECT_EQ(janitor.totals().removed_logs, 1u);
  EXPECT_EQ(janitor.totals().removed_bytes, 15u);  // the .log's and the .log.1's
  EXPECT_EQ(janitor.totals().kept_logs, 1u);        // job 2; job 3 is live, not counted
  EXPECT_TRUE(log_.Contains("task logs removed count=1 bytes=15 older_than_retention=1")) << log_.text();

  // The next pass waits its turn: a log that ages meanwhile goes then.
  SetMtime(LogOf(2), clock_.WallMs() - 8 * 24 * kHourMs);
  clock_.Advance(TaskLogJanitor::kPassEveryMs - 1);
  janitor.Step(live_);
  EXPECT_FALSE(janitor.pass_in_progress());
  EXPECT_EQ(Remaining(), (std::set<uint64_t>{2, 3}));
  clock_.Advance(1);
  Pass(janitor);
  EXPECT_EQ(Remaining(), (std::set<uint64_t>{3}));
  EXPECT_EQ(janitor.totals().passes, 2u);
}

TEST_F(TaskLogJanitorTest, PastMaxLogsTheOldestGoInBoundedStepsWhateverTheDirectoryOrder) {
  // More logs than a step reads and than it removes, in no particular order.
  constexpr uint64_t kLogs = 3'000;
  for (uint64_t job = 1; job <= kLogs; ++job) Log(job, static_cast<int64_t>(kLogs - job) * 1'000);
  live_jobs_ = {7};  // old, but live: kept, and not one of the 100
  TaskLogJanitor janitor = Janitor(TaskLogRetention{0, 100, 0});

  janitor.Step(live_);
  EXPECT_TRUE(janitor.pass_in_progress());
  EXPECT_LE(kLogs - Remaining().size(), TaskLogJanitor::kRemovalsPerStep);
  const int steps = Pass(janitor) + 1;
  EXPECT_GE(steps, static_cast<int>(kLogs / TaskLogJanitor::kEntriesPerStep));

  std::set<uint64_t> expected = {7};
  for (uint64_t job = kLogs - 99; job <= kLogs; ++job) expected.insert(job);
  EXPECT_EQ(Remaining(), expected);
  EXPECT_EQ(janitor.totals().removed_logs, kLogs - 101);
  EXPECT_TRUE(log_.Contains("past_max_logs=2899")) << log_.text();

  // The directory outgrew its limit: the next pass comes in seconds, not a
  // minute, and trims what was written meanwhile.
  for (uint64_t job = kLogs + 1; job <= kLogs + 50; ++job) Log(job, 0);
  clock_.Advance(TaskLogJanitor::kBusyPassEveryMs);
  Pass(janitor);
  EXPECT_EQ(Remaining().size(), 101u);
  EXPECT_EQ(janitor.totals().passes, 2u);
  // That pass removed logs past the limit too; one that removes none goes
  // back to a minute.
  clock_.Advance(TaskLogJanitor::kBusyPassEveryMs);
  Pass(janitor);
  EXPECT_EQ(janitor.totals().passes, 3u);
  clock_.Advance(TaskLogJanitor::kBusyPassEveryMs);
  janitor.Step(live_);
  EXPECT_FALSE(janitor.pass_in_progress());
  EXPECT_EQ(janitor.totals().passes, 3u);
}

TEST_F(TaskLogJanitorTest, PastMaxBytesTheOldestGoAndALogBoundAgainMeanwhileStays) {
  // 400 logs of 100 bytes (job 400 the newest), a cap of 10,000 bytes: the
  // newest 100 stay. More are doomed than one step removes, so a task can
  // be bound again between the read and the removal.
  for (uint64_t job = 1; job <= 400; ++job) Log(job, static_cast<int64_t>(400 - job) * 1'000, 100);
  TaskLogJanitor janitor = Janitor(TaskLogRetention{0, 0, 10'000});
  janitor.Step(live_);
  ASSERT_TRUE(janitor.pass_in_progress());
  std::set<uint64_t> left = Remaining();
  ASSERT_GT(left.size(), 100u);
  const uint64_t rebound = *left.begin();  // doomed, not removed yet
  ASSERT_LE(rebound, 300u);
  live_jobs_ = {rebound};
  Pass(janitor);

  std::set<uint64_t> expected = {rebound};
  for (uint64_t job = 301; job <= 400; ++job) expected.insert(job);
  EXPECT_EQ(Remaining(), expected);
  EXPECT_EQ(janitor.totals().kept_bytes, 10'000u);
}

TEST_F(TaskLogJanitorTest, ARotatedLogCountsItsBytesAndANewestLogOverTheCapGoesToo) {
  Log(1, 2'000, 100);
  Log(2, 1'000, 100);
  WriteFile(LogOf(2) + ".1", 200);
  TaskLogJanitor janitor = Janitor(TaskLogRetention{0, 0, 250});
  Pass(janitor);
  // Job 2 holds 300 bytes with its .1: over the cap alone.
  EXPECT_TRUE(Remaining().empty());

  Log(3, 0, 100);
  clock_.Advance(TaskLogJanitor::kPassEveryMs);
  Pass(janitor);
  EXPECT_EQ(Remaining(), (std::set<uint64_t>{3}));
}

TEST_F(TaskLogJanitorTest, ADiskShortOfSpaceLosesTheOldestLogsUntilTheShortfallIsCoveredAndDoesNotWait) {
  // No other limit: ten logs of 100 bytes (job 10 the newest) on a disk
  // 250 bytes short of the 1,000 wanted free.
  for (uint64_t job = 1; job <= 10; ++job) Log(job, static_cast<int64_t>(10 - job) * 1'000, 100);
  uint64_t free_bytes = 750;
  int probes = 0;
  TaskLogRetention retention{0, 0, 0};
  retention.min_free_bytes = 1'000;
  TaskLogJanitor janitor(dir(), retention, &clock_, log_.logger(), [&](const std::string& path) -> Result<uint64_t> {
    EXPECT_EQ(path, dir());
    ++probes;
    return free_bytes;
  });
  Pass(janitor);
  EXPECT_EQ(Remaining(), (std::set<uint64_t>{4, 5, 6, 7, 8, 9, 10}));  // 300 bytes freed, the oldest first
  EXPECT_TRUE(log_.Contains("disk_short=3")) << log_.text();

  // Enough free now: the pass 5 s later (the last one had to remove logs)
  // removes nothing, and the next waits its minute, the disk looked at every
  // few seconds meanwhile.
  free_bytes = 5'000;
  Log(11, 0, 100);
  clock_.Advance(TaskLogJanitor::kBusyPassEveryMs);
  Pass(janitor);
  EXPECT_EQ(janitor.totals().passes, 2u);
  EXPECT_EQ(Remaining(), (std::set<uint64_t>{4, 5, 6, 7, 8, 9, 10, 11}));
  const int before = probes;
  clock_.Advance(TaskLogJanitor::kPressureCheckEveryMs);
  janitor.Step(live_);
  EXPECT_FALSE(janitor.pass_in_progress());
  EXPECT_EQ(probes, before + 1);
  janitor.Step(live_);
  EXPECT_EQ(probes, before + 1) << "not on every step";
  // Short again: a pass starts at the next check, well before the minute.
  free_bytes = 900;
  clock_.Advance(TaskLogJanitor::kPressureCheckEveryMs);
  Pass(janitor);
  EXPECT_EQ(Remaining(), (std::set<uint64_t>{5, 6, 7, 8, 9, 10, 11}));
  EXPECT_EQ(janitor.totals().passes, 3u);
  // A live task's log is not the disk's to take.
  free_bytes = 0;
  live_jobs_ = {5, 6, 7, 8, 9, 10, 11};
  clock_.Advance(TaskLogJanitor::kPressureCheckEveryMs);
  Pass(janitor);
  EXPECT_EQ(Remaining().size(), 7u);
}

TEST_F(TaskLogJanitorTest, WithTheAgeAloneNothingIsHeldButEveryLogIsCounted) {
  for (uint64_t job = 1; job <= 50; ++job) Log(job, static_cast<int64_t>(job) * kHourMs);
  TaskLogJanitor janitor = Janitor(TaskLogRetention{24 * kHourMs, 0, 0});
  Pass(janitor);
  EXPECT_EQ(Remaining().size(), 24u);  // 1 h to 24 h old
  EXPECT_EQ(janitor.totals().kept_logs, 24u);
  EXPECT_EQ(janitor.totals().kept_bytes, 240u);
  EXPECT_EQ(janitor.totals().removed_logs, 26u);
}

// What capping left beside a log whose .log is gone has no limit that would
// count it: it goes on the next pass, unless its task is live; beside a .log
// that stays, it stays.
TEST_F(TaskLogJanitorTest, WhatCappingLeftGoesOnceItsLogIsGoneUnlessItsTaskIsLive) {
  WriteFile(LogOf(1) + ".1", 7);  // its .log removed by hand
  WriteFile(LogOf(1) + ".dropped", 2);
  WriteFile(LogOf(2) + ".dropped", 4);  // a .dropped alone
  WriteFile(LogOf(3) + ".1", 5);  // a live task's: its .log is being rotated
  live_jobs_ = {3};
  Log(4, kHourMs);  // a kept log's .1 stays with it
  WriteFile(LogOf(4) + ".1", 6);
  WriteFile(dir() + "/x.0.0.log.1", 1);  // not named like a task's
  WriteFile(dir() + "/5.0.0.log.2", 1);
  fs::create_directories(dir() + "/6.0.0.log.1");
  fs::create_directories(dir() + "/7.0.0.log");  // not a log: what is beside it is not the worker's
  WriteFile(dir() + "/7.0.0.log.1", 1);

  TaskLogJanitor janitor = Janitor(TaskLogRetention{});
  Pass(janitor);
  for (const char* gone : {"1.0.0.log.1", "1.0.0.log.dropped", "2.0.0.log.dropped"}) {
    EXPECT_FALSE(fs::exists(dir() + "/" + gone)) << gone;
  }
  for (const char* kept : {"3.0.0.log.1", "4.0.0.log", "4.0.0.log.1", "x.0.0.log.1", "5.0.0.log.2", "6.0.0.log.1",
                           "7.0.0.log.1"}) {
    EXPECT_TRUE(fs::exists(dir() + "/" + kept)) << kept;
  }
  EXPECT_EQ(janitor.totals().removed_logs, 3u);
  EXPECT_EQ(janitor.totals().removed_bytes, 13u);
  EXPECT_EQ(janitor.totals().kept_logs, 1u);  // job 4
  EXPECT_TRUE(log_.Contains("orphans=3")) << log_.text();
}

TEST(ParseCappedLogNameTest, OnlyWhatCappingLeavesBesideATasksLogIsNamedSo) {
  EXPECT_EQ(ParseCappedLogName("17.0.2.log.1"), (TaskId{JobId(17), 0, 2}));
  EXPECT_EQ(ParseCappedLogName("17.3.0.log.dropped"), (TaskId{JobId(17), 3, 0}));
  for (const char* other : {"17.0.2.log", "17.0.2.log.2", ".log.1", "17.0.log.1", "17.0.2.log.1.1", "a.0.0.log.1",
                            "17.0.2.log.dropped.1", "17.0.-2.log.1", ".log.dropped"}) {
    EXPECT_EQ(ParseCappedLogName(other), std::nullopt) << other;
  }
}

// Through the TaskManager: a finished, acknowledged task's log goes at the
// retention; a running task's and an unacknowledged one's stay.
TEST(TaskManagerLogRetentionTest, PollRemovesOnlyLogsOfTasksNoLongerLive) {
  NodeSpec node = testing::TaskManagerNode(4);
  FakeClock clock;
  FakeProcessLauncher launcher;
  testing::TempDir dir;
  testing::CapturedLog log;
  TaskManagerOptions options = testing::TaskManagerTestOptions(node, dir, &launcher, &clock, log);
  options.log_retention = TaskLogRetention{kHourMs, 0, 0};
  auto opened = TaskManager::Open(options);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  TaskManager& tm = **opened;

  auto start = [&](uint64_t job) {
    BindTask bind;
    bind.task = Task(job);
    bind.job_name = "job" + std::to_string(job);
    bind.num_tasks = 1;
    bind.command = {"true"};
    EXPECT_TRUE(tm.Bind(bind).ok());
    tm.Poll();
    return launcher.launched().back().pid;
  };
  start(1);  // runs on
  const int64_t acked = start(2);
  launcher.Exit(acked, 0);
  tm.Poll();
  std::vector<uint64_t> seqs;
  for (const auto& [seq, event] : tm.Outbox()) seqs.push_back(seq);
  for (uint64_t seq : seqs) tm.AckEvent(seq);
  launcher.Exit(start(3), 0);  // ended, not acknowledged
  tm.Poll();

  for (uint64_t job : {1, 2, 3}) {
    const std::string path = TaskLogPath(options.log_dir, Task(job));
    WriteFile(path, 10);
    SetMtime(path, clock.WallMs() - 2 * kHourMs);
  }
  clock.Advance(TaskLogJanitor::kPassEveryMs);
  for (int i = 0; i < 10; ++i) tm.Poll();
  EXPECT_TRUE(fs::exists(TaskLogPath(options.log_dir, Task(1))));
  EXPECT_FALSE(fs::exists(TaskLogPath(options.log_dir, Task(2))));
  EXPECT_TRUE(fs::exists(TaskLogPath(options.log_dir, Task(3))));
  // `gpool logs` of the removed one says where it went.
  auto tail = tm.TailLog(Task(2), 1024);
  ASSERT_FALSE(tail.ok());
  EXPECT_EQ(tail.status().code(), StatusCode::kNotFound);
  EXPECT_NE(tail.status().message().find("has no log on node " + node.name + " (ended tasks' logs are removed"),
            std::string::npos)
      << tail.status().ToString();
}

}  // namespace
}  // namespace gpool::worker
