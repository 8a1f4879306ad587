#include "worker/runner/simulated_process_launcher.h"

#include <csignal>

#include <gtest/gtest.h>

#include "protocol/base/testing/fake_clock.h"
#include "worker/test_util.h"

namespace gpool::worker {
namespace {

TEST(SimulateCommandTest, ReadsTheCommandLikeAShell) {
  EXPECT_EQ(SimulateCommand({"true"}), (SimulatedRun{0, 0}));
  EXPECT_EQ(SimulateCommand({"python", "train.py"}), (SimulatedRun{0, 0}));
  EXPECT_EQ(SimulateCommand({"false"}), (SimulatedRun{0, 1}));
  EXPECT_EQ(SimulateCommand({"sleep", "2.5"}), (SimulatedRun{2500, 0}));
  EXPECT_EQ(SimulateCommand({"sleep", "infinity"}), (SimulatedRun{std::nullopt, 0}));
  EXPECT_EQ(SimulateCommand({"sh", "-c", "sleep 3; echo done"}), (SimulatedRun{3000, 0}));
  EXPECT_EQ(SimulateCommand({"sh", "-c", "echo oops >&2; exit 3"}), (SimulatedRun{0, 0}))
      << "only the first command counts";
  EXPECT_EQ(SimulateCommand({"bash", "-c", "exit 3"}), (SimulatedRun{0, 3}));
  EXPECT_EQ(SimulateCommand({"sleep", "soon"}), (SimulatedRun{0, 1})) << "sleep(1) fails on a bad duration";
  EXPECT_EQ(SimulateCommand({"sleep", "-1"}), (SimulatedRun{0, 1}));
}

class SimulatedProcessLauncherTest : public ::testing::Test {
 protected:
  LaunchRequest Request(std::vector<std::string> argv) {
    LaunchRequest request;
    request.argv = std::move(argv);
    request.log_path = dir_.path() + "/task.log";
    return request;
  }

  testing::TempDir dir_;
  FakeClock clock_;
  SimulatedProcessLauncher launcher_{&clock_};
};

TEST_F(SimulatedProcessLauncherTest, TimedTaskExitsOnceItsTimeHasPassed) {
  auto pid = launcher_.Launch(Request({"sleep", "1"}));
  ASSERT_TRUE(pid.ok()) << pid.status().ToString();
  EXPECT_TRUE(launcher_.Reap().empty());
  clock_.Advance(999);
  EXPECT_TRUE(launcher_.Reap().empty());
  clock_.Advance(1);
  auto exits = launcher_.Reap();
  ASSERT_EQ(exits.size(), 1u);
  EXPECT_EQ(exits[0].pid, *pid);
  EXPECT_EQ(exits[0].exit_code, 0);
  EXPECT_TRUE(launcher_.Reap().empty()) << "each exit is reaped once";
  EXPECT_EQ(launcher_.running(), 0u);
  EXPECT_NE(testing::ReadFile(dir_.path() + "/task.log").find("simulating: sleep 1"), std::string::npos);
}

TEST_F(SimulatedProcessLauncherTest, ImmediateExitCarriesTheCode) {
  auto pid = launcher_.Launch(Request({"false"}));
  ASSERT_TRUE(pid.ok());
  auto exits = launcher_.Reap();
  ASSERT_EQ(exits.size(), 1u);
  EXPECT_EQ(exits[0].exit_code, 1);
  EXPECT_EQ(exits[0].signal, 0);
}

TEST_F(SimulatedProcessLauncherTest, SignalEndsARunningTask) {
  auto forever = launcher_.Launch(Request({"sleep", "infinity"}));
  auto timed = launcher_.Launch(Request({"sleep", "5"}));
  ASSERT_TRUE(forever.ok() && timed.ok());
  EXPECT_NE(*forever, *timed);
  EXPECT_TRUE(launcher_.Signal(*forever, 0).ok()) << "signal 0 only checks";
  EXPECT_TRUE(launcher_.Reap().empty());
  ASSERT_TRUE(launcher_.Signal(*forever, SIGTERM).ok());
  ASSERT_TRUE(launcher_.Signal(*timed, SIGKILL).ok());
  auto exits = launcher_.Reap();
  ASSERT_EQ(exits.size(), 2u);
  EXPECT_EQ(exits[0].exit_code, 128 + SIGTERM);
  EXPECT_EQ(exits[0].signal, SIGTERM);
  EXPECT_EQ(exits[1].signal, SIGKILL);
  clock_.Advance(10'000);
  EXPECT_TRUE(launcher_.Reap().empty()) << "a killed timed task does not exit a second time";
  EXPECT_EQ(launcher_.Signal(*forever, SIGTERM).code(), StatusCode::kNotFound);
}

TEST_F(SimulatedProcessLauncherTest, UnwritableLogFailsTheLaunch) {
  LaunchRequest request = Request({"true"});
  request.log_path = dir_.path() + "/no/such/dir/task.log";
  auto pid = launcher_.Launch(request);
  ASSERT_FALSE(pid.ok());
  EXPECT_EQ(pid.status().code(), StatusCode::kIoError);
  EXPECT_NE(pid.status().message().find("No such file or directory"), std::string::npos)
      << "the reason, not only the path: " << pid.status().message();
  EXPECT_EQ(launcher_.running(), 0u);
}

}  // namespace
}  // namespace gpool::worker
