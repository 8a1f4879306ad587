// TaskManager::NextDueMs (what lets the fleet poll a node only when
// something is due): a manager polled only at its due times, and whenever a
// bind, preempt or acknowledgement reaches it, reports exactly what one
// polled every millisecond reports, at the same millisecond, over random
// scripts of simulated tasks (timed exits, time limits, GPUs waited for,
// preemptions, expiring records).
#include <cstdint>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "protocol/base/testing/fake_clock.h"
#include "worker/runner/simulated_process_launcher.h"
#include "worker/runner/task_manager.h"
#include "worker/runner/task_manager_test_util.h"
#include "worker/runner/testing/fake_process_launcher.h"
#include "worker/test_util.h"

namespace gpool::worker {
namespace {

// An event as seen by the caller: when it appeared and what it says.
using Seen = std::tuple<int64_t, uint64_t, int, std::string, int64_t, int32_t, int32_t, std::string>;

struct Managed {
  Managed(const Clock* clock, const std::string& dir, const testing::CapturedLog& log) : launcher(clock) {
    TaskManagerOptions options;
    options.node = testing::TaskManagerNode(2);
    options.log_dir = dir;
    options.launcher = &launcher;
    options.clock = clock;
    options.logger = log.logger();
    options.finished_retention_ms = 2'000;  // records expire within the script
    tasks = std::move(TaskManager::Open(std::move(options)).value());
  }
  // Records the events that appeared since the last call.
  void Collect(int64_t now) {
    for (const auto& [seq, event] : tasks->Outbox()) {
      if (seq <= last_seq) continue;
      last_seq = seq;
      seen.emplace_back(now, seq, static_cast<int>(event.kind), event.task.ToString(), event.pid, event.exit_code,
                        event.signal, event.message);
    }
  }
  SimulatedProcessLauncher launcher;
  std::unique_ptr<TaskManager> tasks;
  uint64_t last_seq = 0;
  std::vector<Seen> seen;
};

TEST(TaskManagerDueTest, PolledOnlyWhenDueItReportsWhatAManagerPolledEveryMillisecondReports) {
  for (uint32_t seed = 1; seed <= 6; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937 random(seed);
    testing::TempDir dir;
    testing::CapturedLog log;
    FakeClock clock;
    Managed every(&clock, dir.path() + "/every", log);
    Managed due(&clock, dir.path() + "/due", log);
    int64_t due_at = due.tasks->NextDueMs();
    std::vector<TaskId> bound;
    const std::vector<std::vector<std::string>> commands = {
        {"sleep", "0"}, {"sleep", "0.05"}, {"sleep", "0.3"}, {"sleep", "1.2"}, {"sleep", "4"}, {"sleep", "infinity"},
        {"false", ""},  {"exit", "3"}};
    size_t polls_when_due = 0;
    constexpr int64_t kScriptMs = 12'000;
    for (int64_t t = 0; t < kScriptMs; ++t) {
      clock.Advance(1);
      const int64_t now = clock.MonoMs();
      bool input = false;
      std::uniform_real_distribution<double> p(0, 1);
      if (p(random) < 0.005) {
        BindTask bind = testing::OneGpuBind(1000 + bound.size());
        bind.command = commands[random() % commands.size()];
        // None, GPU 0 or GPU 1 (then waited for while another task holds
        // it: due at every poll meanwhile, so only short tasks take one).
        const bool short_task = bind.command[1] == "0" || bind.command[1] == "0.05" || bind.command[1] == "0.3";
        const uint32_t gpus = !short_task || random() % 2 != 0 ? 0 : 1 + random() % 2;
        bind.gpu_indices = gpus == 0 ? std::vector<uint32_t>{} : std::vector<uint32_t>{gpus - 1};
        if (random() % 3 == 0) {
          bind.max_runtime_ms = 100 + random() % 2'000;
          bind.time_limit_grace_ms = static_cast<uint32_t>(random() % 500);
        }
        ASSERT_EQ(every.tasks->Bind(bind).ok(), due.tasks->Bind(bind).ok());
        bound.push_back(bind.task);
        input = true;
      }
      if (!bound.empty() && p(random) < 0.001) {
        PreemptTask preempt;
        preempt.task = bound[random() % bound.size()];
        preempt.grace_ms = static_cast<uint32_t>(random() % 1'000);
        every.tasks->Preempt(preempt);
        due.tasks->Preempt(preempt);
        input = true;
      }
      if (p(random) < 0.01) {  // the coordinator acknowledges what was reported
        for (Managed* m : {&every, &due}) {
          std::vector<uint64_t> seqs;
          for (const auto& [seq, event] : m->tasks->Outbox()) seqs.push_back(seq);
          for (uint64_t seq : seqs) m->tasks->AckEvent(seq);
        }
        input = true;
      }
      every.tasks->Poll();
      every.Collect(now);
      if (input || now >= due_at) {
        due.tasks->Poll();
        due.Collect(now);
        due_at = due.tasks->NextDueMs();
        ASSERT_GE(due_at, now);
        ++polls_when_due;
      }
      ASSERT_EQ(due.tasks->Running(), every.tasks->Running()) << "at " << now;
    }
    EXPECT_EQ(due.seen, every.seen);
    EXPECT_GT(every.seen.size(), 40u);  // the script did something
    // The point of it: far fewer polls than one a millisecond.
    EXPECT_LT(polls_when_due, static_cast<size_t>(kScriptMs / 10));
  }
}

// A launcher that cannot tell when its processes exit makes the manager due
// at every poll: the fleet then polls it every sweep, as before.
TEST(TaskManagerDueTest, ALauncherThatCannotTellExitsKeepsTheManagerDueAlways) {
  testing::TempDir dir;
  testing::CapturedLog log;
  FakeClock clock;
  FakeProcessLauncher launcher;
  auto tasks = std::move(
      TaskManager::Open(testing::TaskManagerTestOptions(testing::TaskManagerNode(2), dir, &launcher, &clock, log))
          .value());
  tasks->Poll();
  EXPECT_EQ(tasks->NextDueMs(), clock.MonoMs());
  clock.Advance(5'000);
  tasks->Poll();
  EXPECT_EQ(tasks->NextDueMs(), clock.MonoMs());

  // With the simulated launcher and nothing bound, only the records' expiry
  // and the log retention's next pass are due.
  SimulatedProcessLauncher simulated(&clock);
  TaskManagerOptions options = testing::TaskManagerTestOptions(testing::TaskManagerNode(2), dir, &simulated, &clock, log);
  options.log_dir = dir.path() + "/simulated";
  auto quiet = std::move(TaskManager::Open(std::move(options)).value());
  quiet->Poll();
  const int64_t now = clock.MonoMs();
  EXPECT_GT(quiet->NextDueMs(), now + 1'000);
  EXPECT_LE(quiet->NextDueMs(), now + 60'000);
}

}  // namespace
}  // namespace gpool::worker
