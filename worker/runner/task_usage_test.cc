#include "worker/runner/task_usage.h"

#include <gtest/gtest.h>

#include "protocol/messages_worker.h"
#include "worker/test_util.h"

namespace gpool::worker {
namespace {

// A fake /proc: each process is "pid (comm) S ppid pgrp ...".
class TaskUsageTest : public ::testing::Test {
 protected:
  void Process(int64_t pid, int64_t ppid, int64_t pgrp) {
    proc_.Write(std::to_string(pid) + "/stat", std::to_string(pid) + " (proc " + std::to_string(pid) + ") S " +
                                                   std::to_string(ppid) + " " + std::to_string(pgrp) + " 100 0 -1\n");
  }
  std::vector<TaskUsage> Usage(const std::map<int64_t, uint64_t>& mib) {
    return UsageByTask(mib, tasks_, ProcStatLookup(proc_.path()));
  }

  testing::TempDir proc_;
  const TaskId a_{JobId(7), 0, 0};
  const TaskId b_{JobId(8), 1, 2};
  // The worker is 100 (its own group); tasks 200 and 300 lead their groups.
  std::map<int64_t, TaskId> tasks_{{200, a_}, {300, b_}};

  void SetUp() override {
    Process(1, 0, 1);
    Process(100, 1, 100);
    Process(200, 100, 200);
    Process(300, 100, 300);
  }
};

TEST_F(TaskUsageTest, ChildrenInTheTasksGroupCount) {
  Process(201, 200, 200);  // e.g. a torchrun worker
  Process(202, 201, 200);  // its child, still in the group
  auto usage = Usage({{200, 100}, {201, 1000}, {202, 24}});
  ASSERT_EQ(usage.size(), 1u);
  EXPECT_EQ(usage[0], (TaskUsage{a_, 1124}));
}

TEST_F(TaskUsageTest, TwoTasksAreKeptApart) {
  Process(301, 300, 300);
  auto usage = Usage({{200, 10}, {301, 20}, {300, 5}});
  ASSERT_EQ(usage.size(), 2u);
  EXPECT_EQ(usage[0], (TaskUsage{a_, 10}));
  EXPECT_EQ(usage[1], (TaskUsage{b_, 25}));
}

TEST_F(TaskUsageTest, OtherProcessesDoNotCount) {
  Process(400, 1, 400);    // another user's job
  Process(401, 100, 100);  // in the worker's own group
  auto usage = Usage({{400, 500}, {401, 600}, {100, 7}, {999, 8} /* gone from /proc */});
  EXPECT_TRUE(usage.empty());
}

TEST_F(TaskUsageTest, OrphansThatKeptTheGroupCount) {
  // Double-forked: adopted by init, still in task a's group.
  Process(210, 1, 200);
  auto usage = Usage({{210, 64}});
  ASSERT_EQ(usage.size(), 1u);
  EXPECT_EQ(usage[0], (TaskUsage{a_, 64}));
}

TEST_F(TaskUsageTest, DescendantsInTheirOwnGroupCountThroughTheirParents) {
  Process(220, 200, 220);  // setsid/setpgid child of the main process
  Process(221, 220, 220);  // its child
  Process(230, 201, 230);  // own group, parent 201 in task a's group
  Process(201, 200, 200);
  auto usage = Usage({{221, 3}, {230, 4}});
  ASSERT_EQ(usage.size(), 1u);
  EXPECT_EQ(usage[0], (TaskUsage{a_, 7}));
}

TEST_F(TaskUsageTest, TasksWithoutMeasuredProcessesAreOmitted) {
  auto usage = Usage({{300, 0}});
  ASSERT_EQ(usage.size(), 1u);
  EXPECT_EQ(usage[0], (TaskUsage{b_, 0})) << "a measured process with nothing allocated is still a measurement";
  EXPECT_TRUE(Usage({}).empty());
}

TEST_F(TaskUsageTest, NoTasksReadsNothing) {
  int lookups = 0;
  ProcessLookup counting = [&](int64_t) -> std::optional<ProcStat> {
    ++lookups;
    return std::nullopt;
  };
  EXPECT_TRUE(UsageByTask({{200, 1}}, {}, counting).empty());
  EXPECT_EQ(lookups, 0);
}

TEST_F(TaskUsageTest, ParentCyclesEnd) {
  // pid reuse mid-walk can make /proc show a loop; the walk must stop.
  ProcessLookup loop = [](int64_t pid) -> std::optional<ProcStat> {
    return ProcStat{pid, pid == 500 ? 501 : 500, pid};
  };
  EXPECT_TRUE(UsageByTask({{500, 1}}, tasks_, loop).empty());
}

}  // namespace
}  // namespace gpool::worker
