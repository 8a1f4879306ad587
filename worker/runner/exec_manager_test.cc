// ExecManager with real processes: a "task" is a sleeping child started here
// with its own environment and working directory, and commands exec'd into
// it must see both, stream their output, and end when they should.
#include "worker/runner/exec_manager.h"

#include <filesystem>

#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "protocol/base/testing/fake_clock.h"
#include "protocol/messages_exec.h"
#include "worker/test_util.h"

namespace gpool::worker {
namespace {

using testing::CapturedLog;
using testing::TempDir;

const TaskId kTask{JobId(5), 1, 0};

class ExecManagerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    StartTask();
    Open({});
  }
  void TearDown() override {
    exec_.reset();
    if (task_pid_ > 0) {
      kill(task_pid_, SIGKILL);
      waitpid(task_pid_, nullptr, 0);
    }
  }

  // The task: `sleep 60` in dir_ with an environment of its own. Returns once
  // it has exec'd (a close-on-exec pipe closes), as a launcher does.
  void StartTask() {
    int ready[2];
    ASSERT_EQ(pipe2(ready, O_CLOEXEC), 0);
    std::vector<std::string> env = {"PATH=/usr/bin:/bin", "CUDA_VISIBLE_DEVICES=3", "GPOOL_TASK_NAME=t-w-1"};
    std::vector<char*> envp;
    for (auto& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);
    char sleep[] = "sleep", sixty[] = "60";
    char* argv[] = {sleep, sixty, nullptr};
    const std::string cwd = dir_.path();
    task_pid_ = fork();
    if (task_pid_ == 0) {
      close(ready[0]);
      if (chdir(cwd.c_str()) != 0) _exit(126);
      execve("/bin/sleep", argv, envp.data());
      _exit(127);
    }
    close(ready[1]);
    char byte;
    while (read(ready[0], &byte, 1) < 0 && errno == EINTR) {
    }
    close(ready[0]);
    ASSERT_GT(task_pid_, 0);
  }

  void Open(ExecManagerOptions options) {
    options.task_pid = [this](const TaskId& id) -> Result<int64_t> {
      if (id != kTask) return Status::NotFound("task " + id.ToString() + " is not on node n1");
      if (!task_running_) return Status::FailedPrecondition("task " + id.ToString() + " is not running");
      return static_cast<int64_t>(task_pid_);
    };
    options.clock = &clock_;
    options.logger = log_.logger();
    auto opened = ExecManager::Open(std::move(options));
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    exec_ = std::move(opened).value();
  }

  Result<ExecStartReply> Start(std::vector<std::string> command, uint32_t lease_ms = 10'000) {
    return exec_->Start(TaskExecStart{kTask, std::move(command), lease_ms});
  }

  struct Finished {
    std::string out, err;
    ExecPollReply last;
    int polls = 0;
  };
  // Ticks and polls (as a client would, from the offsets it has) until the
  // command has exited, or 10 s pass.
  Finished PollToEnd(uint64_t exec_id, uint32_t max_bytes = 1 << 20) {
    Finished f;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < deadline) {
      exec_->Tick();
      auto reply = exec_->Poll(TaskExecPoll{kTask, exec_id, f.out.size(), f.err.size(), max_bytes});
      EXPECT_TRUE(reply.ok()) << reply.status().ToString();
      if (!reply.ok()) break;
      ++f.polls;
      f.out += reply->stdout_data;
      f.err += reply->stderr_data;
      f.last = *reply;
      if (reply->exited) break;
      if (reply->stdout_data.empty() && reply->stderr_data.empty()) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
    }
    return f;
  }
  // Ticks until no command is alive, or 10 s pass.
  bool TickUntilNoneLive() {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < deadline) {
      exec_->Tick();
      if (exec_->live() == 0) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return false;
  }

  TempDir dir_;
  pid_t task_pid_ = -1;
  bool task_running_ = true;
  FakeClock clock_;
  CapturedLog log_;
  std::unique_ptr<ExecManager> exec_;
};

TEST_F(ExecManagerTest, RunsInTheTasksEnvAndDirectoryAndReturnsOutputAndExitCode) {
  auto started = Start({"sh", "-c", "echo $CUDA_VISIBLE_DEVICES $GPOOL_TASK_NAME; pwd; echo oops >&2; exit 7"});
  ASSERT_TRUE(started.ok()) << started.status().ToString();
  EXPECT_GT(started->pid, 0);
  Finished f = PollToEnd(started->exec_id);
  ASSERT_TRUE(f.last.exited);
  EXPECT_EQ(f.last.exit_code, 7);
  EXPECT_EQ(f.last.signal, 0);
  EXPECT_EQ(f.out, "3 t-w-1\n" + std::filesystem::canonical(dir_.path()).string() + "\n");
  EXPECT_EQ(f.err, "oops\n");
  EXPECT_TRUE(log_.Contains("exec started task=5.1 exec_id=1")) << log_.text();
}

TEST_F(ExecManagerTest, OutputIsBoundedAndReadInChunksFromTheClientsOffsets) {
  exec_.reset();
  ExecManagerOptions options;
  options.buffer_bytes = 1024;
  Open(options);
  // 200 KB through a 1 KiB buffer: the command waits on its pipe while the
  // client reads, and nothing is lost.
  auto started = Start({"sh", "-c", "head -c 200000 /dev/zero | tr '\\0' x"});
  ASSERT_TRUE(started.ok()) << started.status().ToString();
  Finished f = PollToEnd(started->exec_id, 300);
  ASSERT_TRUE(f.last.exited);
  EXPECT_EQ(f.last.exit_code, 0);
  EXPECT_EQ(f.out, std::string(200000, 'x'));
  EXPECT_GE(f.polls, 200000 / 1024);
  // Offsets before what is kept, or past what was read, are refused.
  auto back = exec_->Poll(TaskExecPoll{kTask, started->exec_id, 0, 0, 100});
  EXPECT_EQ(back.status().code(), StatusCode::kInvalidArgument) << back.status().ToString();
  auto ahead = exec_->Poll(TaskExecPoll{kTask, started->exec_id, 300000, 0, 100});
  EXPECT_EQ(ahead.status().code(), StatusCode::kInvalidArgument);
}

TEST_F(ExecManagerTest, ACommandNobodyPollsForItsLeaseIsKilled) {
  auto started = Start({"sleep", "60"}, 1000);
  ASSERT_TRUE(started.ok()) << started.status().ToString();
  exec_->Tick();
  EXPECT_EQ(exec_->live(), 1u);
  clock_.Advance(1001);
  ASSERT_TRUE(TickUntilNoneLive());
  EXPECT_TRUE(log_.Contains("exec killed task=5.1 exec_id=1")) << log_.text();
  auto reply = exec_->Poll(TaskExecPoll{kTask, started->exec_id});
  ASSERT_TRUE(reply.ok());
  EXPECT_TRUE(reply->exited);
  EXPECT_EQ(reply->signal, SIGKILL);
  EXPECT_EQ(reply->exit_code, 128 + SIGKILL);
  EXPECT_EQ(reply->message.rfind("lease expired", 0), 0u) << reply->message;
  // Forgotten a lease after its end or its last poll, whichever came later.
  clock_.Advance(1001);
  exec_->Tick();
  EXPECT_EQ(exec_->size(), 0u);
  EXPECT_EQ(exec_->Poll(TaskExecPoll{kTask, started->exec_id}).status().code(), StatusCode::kNotFound);
}

TEST_F(ExecManagerTest, WhenTheTaskEndsItsCommandsEnd) {
  auto started = Start({"sleep", "60"});
  ASSERT_TRUE(started.ok());
  task_running_ = false;
  ASSERT_TRUE(TickUntilNoneLive());
  auto reply = exec_->Poll(TaskExecPoll{kTask, started->exec_id});
  ASSERT_TRUE(reply.ok());
  EXPECT_TRUE(reply->exited);
  EXPECT_EQ(reply->signal, SIGKILL);
  EXPECT_EQ(reply->message, "the task ended");
}

TEST_F(ExecManagerTest, ASignalReachesTheCommand) {
  auto started = Start({"sleep", "60"});
  ASSERT_TRUE(started.ok());
  ASSERT_TRUE(exec_->Signal(TaskExecSignal{kTask, started->exec_id, SIGTERM}).ok());
  Finished f = PollToEnd(started->exec_id);
  ASSERT_TRUE(f.last.exited);
  EXPECT_EQ(f.last.signal, SIGTERM);
  EXPECT_TRUE(f.last.message.empty());
  EXPECT_EQ(exec_->Signal(TaskExecSignal{kTask, started->exec_id, 11}).code(), StatusCode::kInvalidArgument);
}

TEST_F(ExecManagerTest, BadRequestsGetTypedErrorsAndStartNothing) {
  EXPECT_EQ(Start({}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Start({"true"}, 5).status().code(), StatusCode::kInvalidArgument) << "lease below 1 s";
  EXPECT_EQ(exec_->Start(TaskExecStart{TaskId{JobId(9), 0, 0}, {"true"}}).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(Start({"/no/such/program"}).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(exec_->size(), 0u);
  EXPECT_EQ(exec_->Poll(TaskExecPoll{kTask, 42}).status().code(), StatusCode::kNotFound);
  auto started = Start({"sleep", "60"});
  ASSERT_TRUE(started.ok());
  EXPECT_EQ(exec_->Poll(TaskExecPoll{TaskId{JobId(5), 0, 0}, started->exec_id}).status().code(),
            StatusCode::kNotFound)
      << "an exec id of another task";
  task_running_ = false;
  EXPECT_EQ(Start({"true"}).status().code(), StatusCode::kFailedPrecondition);
}

TEST_F(ExecManagerTest, TooManyCommandsAreResourceExhausted) {
  exec_.reset();
  ExecManagerOptions options;
  options.max_commands = 1;
  Open(options);
  ASSERT_TRUE(Start({"sleep", "60"}).ok());
  EXPECT_EQ(Start({"true"}).status().code(), StatusCode::kResourceExhausted);
}

}  // namespace
}  // namespace gpool::worker

namespace gpool::worker {
namespace {

TEST_F(ExecManagerTest, ARetriedStartWithTheSameKeyIsTheSameCommand) {
  auto first = exec_->Start(TaskExecStart{kTask, {"sleep", "60"}, 10'000, "k1"});
  ASSERT_TRUE(first.ok());
  auto again = exec_->Start(TaskExecStart{kTask, {"sleep", "60"}, 10'000, "k1"});
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->exec_id, first->exec_id);
  EXPECT_EQ(exec_->size(), 1u);
  auto other = exec_->Start(TaskExecStart{kTask, {"sleep", "60"}, 10'000, "k2"});
  ASSERT_TRUE(other.ok());
  EXPECT_NE(other->exec_id, first->exec_id);
  EXPECT_EQ(exec_->Start(TaskExecStart{kTask, {"true"}, 10'000, std::string(129, 'k')}).status().code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace gpool::worker
