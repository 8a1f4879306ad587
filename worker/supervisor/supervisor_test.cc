// gpool-task-supervisor as a program: each test writes a task's launch
// spec, runs the binary (GPOOL_TASK_SUPERVISOR_BIN) as a child of the test,
// reads its hello, and checks the records it leaves. Waits poll with a
// deadline.
#include "worker/supervisor/supervisor.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>

#include <gtest/gtest.h>

#include "protocol/wire.h"
#include "worker/runner/lease_file.h"
#include "worker/runner/supervisor_state.h"
#include "worker/runner/task_cgroup.h"
#include "worker/test_util.h"

namespace gpool::worker::supervisor_test {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

bool PollUntil(const std::function<bool()>& done, std::chrono::milliseconds limit = 10s) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    poll(nullptr, 0, 5);
  }
  return true;
}

// Gone, or a zombie: no longer running either way.
bool ProcessEnded(int64_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  if (!std::getline(stat, text)) return true;
  const size_t paren = text.rfind(')');
  return paren != std::string::npos && paren + 2 < text.size() && text[paren + 2] == 'Z';
}

TEST(SupervisorArgsTest, StateDirIsRequiredAndFlagsAreChecked) {
  const char* ok[] = {"sup", "--state-dir", "/d", "--status-fd", "3", "--lease", "/l"};
  auto parsed = ParseSupervisorArgs(7, ok);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->state_dir, "/d");
  EXPECT_EQ(parsed->status_fd, 3);
  EXPECT_EQ(parsed->lease_path, "/l");
  EXPECT_FALSE(parsed->detach);
  const char* detached[] = {"sup", "--detach", "--state-dir", "/d"};
  auto detach = ParseSupervisorArgs(4, detached);
  ASSERT_TRUE(detach.ok()) << detach.status().ToString();
  EXPECT_TRUE(detach->detach);
  EXPECT_EQ(detach->state_dir, "/d");
  const char* none[] = {"sup"};
  EXPECT_FALSE(ParseSupervisorArgs(1, none).ok());
  const char* bad_fd[] = {"sup", "--state-dir", "/d", "--status-fd", "x"};
  EXPECT_FALSE(ParseSupervisorArgs(5, bad_fd).ok());
  const char* unknown[] = {"sup", "--state-dir", "/d", "--frobnicate", "1"};
  EXPECT_FALSE(ParseSupervisorArgs(5, unknown).ok());
}

class SupervisorProcessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    state_ = dir_.path() + "/1.0.0.state";
    fs::create_directories(state_);
    if (geteuid() == 0) {
      auto tree = CgroupTree::Open("/sys/fs/cgroup", "suptest-" + std::to_string(getpid()));
      if (tree.ok()) tree_ = std::move(tree).value();
    }
  }
  void TearDown() override {
    if (supervisor_ > 0) {
      kill(supervisor_, SIGKILL);
      waitpid(supervisor_, nullptr, 0);
    }
    if (tree_ != nullptr) {
      for (const auto& name : tree_->List()) EXPECT_TRUE(tree_->Adopt(name)->Drain().ok());
    }
    for (int64_t pid : strays_) kill(static_cast<pid_t>(pid), SIGKILL);
  }

  // Writes the spec of `script` under sh (in a cgroup when the test has a tree).
  void WriteSpec(const std::string& script) {
    SupervisorSpec spec;
    spec.request.argv = {"/bin/sh", "-c", script};
    spec.request.env = {"PATH=/usr/bin:/bin"};
    spec.request.log_path = dir_.path() + "/task.log";
    if (tree_ != nullptr) {
      spec.request.cgroup = "task-1.0.0";
      spec.cgroup_root = tree_->mount_root();
      spec.cgroup_scope = tree_->scope();
    }
    ASSERT_TRUE(WriteSupervisorSpec(state_, spec).ok());
  }

  // Runs the supervisor; returns its hello (not ok, with a message, when it said nothing).
  SupervisorHello Start(const std::string& lease = "") {
    int fds[2];
    EXPECT_EQ(pipe2(fds, O_CLOEXEC), 0);
    std::vector<std::string> args = {GPOOL_TASK_SUPERVISOR_BIN, "--state-dir", state_, "--status-fd", "3"};
    if (!lease.empty()) {
      args.push_back("--lease");
      args.push_back(lease);
    }
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    const int log = open((state_ + "/supervisor.log").c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    supervisor_ = fork();
    if (supervisor_ == 0) {
      dup2(fds[1], 3);
      dup2(log, 2);
      execv(argv[0], argv.data());
      _exit(127);
    }
    close(fds[1]);
    close(log);
    std::string reply;
    char buffer[1024];
    for (ssize_t n; (n = read(fds[0], buffer, sizeof(buffer))) > 0;) reply.append(buffer, static_cast<size_t>(n));
    close(fds[0]);
    auto hello = wire::UnpackFromString<SupervisorHello>(reply);
    if (!hello.ok()) return SupervisorHello{.message = "no hello: " + hello.status().ToString()};
    if (hello->ok) strays_.push_back(hello->pid);
    return *hello;
  }

  // The supervisor's exit status once it has exited (-1: not within 10 s).
  int WaitSupervisor() {
    int status = -1;
    const bool exited = PollUntil([&] { return waitpid(supervisor_, &status, WNOHANG) == supervisor_; });
    if (exited) supervisor_ = -1;
    return exited ? status : -1;
  }

  int64_t PidIn(const std::string& file) {
    int64_t pid = 0;
    PollUntil([&] { return static_cast<bool>(std::ifstream(dir_.path() + "/" + file) >> pid); });
    if (pid > 0) strays_.push_back(pid);
    return pid;
  }

  bool CgroupGone() const { return tree_ == nullptr || tree_->Adopt("task-1.0.0") == nullptr; }

  testing::TempDir dir_;
  std::string state_;
  std::unique_ptr<CgroupTree> tree_;
  pid_t supervisor_ = -1;
  std::vector<int64_t> strays_;
};

TEST_F(SupervisorProcessTest, RecordsThePidThenTheExitAndReleasesItsLock) {
  WriteSpec("echo hello; exit 3");
  const SupervisorHello hello = Start();
  ASSERT_TRUE(hello.ok) << hello.message;
  auto started = ReadStartRecord(state_);
  ASSERT_TRUE(started.ok()) << started.status().ToString();
  EXPECT_EQ(started->pid, hello.pid);
  EXPECT_EQ(started->supervisor_pid, supervisor_);
  EXPECT_EQ(WaitSupervisor(), 0);
  auto exit = ReadExitRecord(state_);
  ASSERT_TRUE(exit.ok()) << exit.status().ToString();
  EXPECT_EQ(exit->pid, hello.pid);
  EXPECT_EQ(exit->exit_code, 3);
  EXPECT_EQ(exit->signal, 0);
  EXPECT_EQ(exit->reason, kExitReasonExited);
  EXPECT_GT(exit->end_time_ms, 0);
  EXPECT_FALSE(SupervisorAlive(state_));
  EXPECT_EQ(testing::ReadFile(dir_.path() + "/task.log"), "hello\n");
  EXPECT_TRUE(CgroupGone());
}

TEST_F(SupervisorProcessTest, TheTaskIsItsChildInItsOwnGroupAndItIsNotInTheTasksCgroup) {
  WriteSpec("exec sleep 1000");
  const SupervisorHello hello = Start();
  ASSERT_TRUE(hello.ok) << hello.message;
  EXPECT_TRUE(SupervisorAlive(state_));
  EXPECT_EQ(getpgid(static_cast<pid_t>(hello.pid)), hello.pid);
  if (tree_ != nullptr) {
    EXPECT_EQ(tree_->Adopt("task-1.0.0")->Pids(), std::vector<int64_t>{hello.pid}) << "the supervisor is outside";
  }
  kill(static_cast<pid_t>(hello.pid), SIGTERM);
  EXPECT_EQ(WaitSupervisor(), 0);
  auto exit = ReadExitRecord(state_);
  ASSERT_TRUE(exit.ok());
  EXPECT_EQ(exit->signal, SIGTERM);
  EXPECT_EQ(exit->exit_code, 128 + SIGTERM);
}

TEST_F(SupervisorProcessTest, ACommandThatCannotRunIsRefusedInTheHelloWithoutRecords) {
  WriteSpec("");
  SupervisorSpec spec = *ReadSupervisorSpec(state_);
  spec.request.argv = {"gpool-no-such-command-xyz"};
  ASSERT_TRUE(WriteSupervisorSpec(state_, spec).ok());
  const SupervisorHello hello = Start();
  EXPECT_FALSE(hello.ok);
  EXPECT_EQ(hello.code, static_cast<uint32_t>(StatusCode::kNotFound));
  EXPECT_NE(hello.message.find("cannot run 'gpool-no-such-command-xyz'"), std::string::npos) << hello.message;
  EXPECT_EQ(WaitSupervisor() >> 8, 1);
  EXPECT_FALSE(ReadStartRecord(state_).ok());
  EXPECT_FALSE(ReadExitRecord(state_).ok());
  EXPECT_TRUE(CgroupGone());
}

TEST_F(SupervisorProcessTest, AnAbsentLeaseRefusesTheStart) {
  WriteSpec("exec sleep 1000");
  const SupervisorHello hello = Start(dir_.path() + "/lease");
  EXPECT_FALSE(hello.ok);
  EXPECT_NE(hello.message.find("no lease"), std::string::npos) << hello.message;
  EXPECT_EQ(WaitSupervisor() >> 8, 1);
}

// Without a cgroup a setsid child leaves the task; the lease tests need one.
class SupervisorLeaseTest : public SupervisorProcessTest {
 protected:
  void SetUp() override {
    SupervisorProcessTest::SetUp();
    if (tree_ == nullptr) GTEST_SKIP() << "needs root and a cgroup hierarchy";
  }
};

TEST_F(SupervisorLeaseTest, AnExpiredLeaseKillsTheWholeTreeAndTheRecordComesOnceTheCgroupIsEmpty) {
  const std::string lease = LeasePath(dir_.path());
  ASSERT_TRUE(WriteLease(lease, MonotonicNowMs() + 60'000).ok());
  WriteSpec("setsid sh -c 'echo $$ > " + dir_.path() + "/gc.pid; exec sleep 1000' & exec sleep 1000");
  const SupervisorHello hello = Start(lease);
  ASSERT_TRUE(hello.ok) << hello.message;
  const int64_t grandchild = PidIn("gc.pid");
  ASSERT_GT(grandchild, 0);
  ASSERT_TRUE(PollUntil([&] { return tree_->Adopt("task-1.0.0")->Pids().size() == 2; }));
  EXPECT_NE(getsid(static_cast<pid_t>(grandchild)), getsid(static_cast<pid_t>(hello.pid))) << "it left the session";

  ASSERT_TRUE(WriteLease(lease, MonotonicNowMs() - 1).ok());  // the worker stopped renewing it
  ASSERT_TRUE(PollUntil([&] { return ReadExitRecord(state_).ok(); }));
  // The record is written only once the cgroup is empty.
  EXPECT_TRUE(ProcessEnded(grandchild)) << "setsid grandchild " << grandchild << " outlived the lease";
  EXPECT_TRUE(ProcessEnded(hello.pid));
  EXPECT_TRUE(CgroupGone());
  auto exit = ReadExitRecord(state_);
  EXPECT_EQ(exit->reason.rfind(kExitReasonLeaseExpired, 0), 0u) << exit->reason;
  EXPECT_EQ(exit->signal, SIGKILL);
  EXPECT_EQ(WaitSupervisor(), 0);
}

TEST_F(SupervisorLeaseTest, ALeaseFileThatDisappearsRunsOutAtTheDeadlineLastRead) {
  const std::string lease = LeasePath(dir_.path());
  const int64_t deadline = MonotonicNowMs() + 1'500;
  ASSERT_TRUE(WriteLease(lease, deadline).ok());
  WriteSpec("exec sleep 1000");
  const SupervisorHello hello = Start(lease);
  ASSERT_TRUE(hello.ok) << hello.message;
  EXPECT_FALSE(ReadExitRecord(state_).ok()) << "a valid lease lets it run";
  fs::remove(lease);
  ASSERT_TRUE(PollUntil([&] { return ReadExitRecord(state_).ok(); }));
  // Not before the deadline it had read: an unreadable file is no reason to
  // stop early, and no reason to run on either.
  EXPECT_GE(MonotonicNowMs(), deadline);
  EXPECT_TRUE(ProcessEnded(hello.pid));
  auto exit = ReadExitRecord(state_);
  EXPECT_EQ(exit->reason.rfind(kExitReasonLeaseExpired, 0), 0u) << exit->reason;
  EXPECT_EQ(WaitSupervisor(), 0);
}

TEST_F(SupervisorLeaseTest, WhatTheFirstProcessLeavesIsKilledBeforeTheRecord) {
  WriteSpec("sh -c 'echo $$ > " + dir_.path() + "/gc.pid; trap \"\" TERM; while :; do sleep 1; done' & "
            "while [ ! -s " + dir_.path() + "/gc.pid ]; do sleep 0.01; done; exit 0");
  const SupervisorHello hello = Start();
  ASSERT_TRUE(hello.ok) << hello.message;
  const int64_t grandchild = PidIn("gc.pid");
  ASSERT_GT(grandchild, 0);
  ASSERT_TRUE(PollUntil([&] { return ReadExitRecord(state_).ok(); }));
  EXPECT_TRUE(ProcessEnded(grandchild)) << "grandchild " << grandchild << " outlived its task's record";
  EXPECT_TRUE(CgroupGone());
  EXPECT_EQ(ReadExitRecord(state_)->exit_code, 0);
  EXPECT_EQ(WaitSupervisor(), 0);
}

}  // namespace
}  // namespace gpool::worker::supervisor_test
