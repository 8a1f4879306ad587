// Issue 31, on real processes: tasks launched the way the worker launches
// them (ApplyTaskIsolation, then PosixProcessLauncher under the built
// gpool-task-supervisor, with a real cgroup tree) run as their identity, in
// their own PID namespace, cannot read another task's directory or environ
// or the worker's token file, and cannot open a GPU device node they were
// not granted, even after widening CUDA_VISIBLE_DEVICES. The device nodes
// are made here with mknod: /dev/full's numbers for "GPU 0" and
// /dev/random's for "GPU 1", so an allowed open succeeds and a denied one
// is the devices cgroup's EPERM. Needs root (skipped otherwise); every
// process started is ended by pid and waited for.
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>

#include <gtest/gtest.h>

#include "protocol/base/clock.h"
#include "protocol/messages_exec.h"
#include "protocol/messages_worker.h"
#include "protocol/model/run_as.h"
#include "worker/runner/device_rules.h"
#include "worker/runner/exec_manager.h"
#include "worker/runner/posix_process_launcher.h"
#include "worker/runner/supervisor_state.h"
#include "worker/runner/task_isolation.h"
#include "worker/test_util.h"

namespace gpool::worker::isolation_test {
namespace {

using namespace std::chrono_literals;

bool PollUntil(const std::function<bool()>& done, std::chrono::milliseconds limit = 20s) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    poll(nullptr, 0, 10);
  }
  return true;
}

class IsolationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "task isolation needs root";
    auto tree = CgroupTree::Open("/sys/fs/cgroup", "isolation-" + std::to_string(getpid()));
    if (!tree.ok()) GTEST_SKIP() << "no cgroups: " << tree.status().ToString();
    tree_ = std::move(tree).value();
    ASSERT_EQ(chmod(dir_.path().c_str(), 0711), 0);
    tasks_ = dir_.path() + "/tasks";
    ASSERT_EQ(mkdir(tasks_.c_str(), 0755), 0);
    ASSERT_EQ(mkdir((dir_.path() + "/dev").c_str(), 0755), 0);
    ASSERT_EQ(mknod((dir_.path() + "/dev/gpu0").c_str(), S_IFCHR | 0666, makedev(1, 7)), 0);
    ASSERT_EQ(mknod((dir_.path() + "/dev/gpu1").c_str(), S_IFCHR | 0666, makedev(1, 8)), 0);
    token_ = dir_.Write("token", "s3cret-token\n");
    ASSERT_EQ(chmod(token_.c_str(), 0600), 0);
    PosixProcessLauncherOptions options;
    options.logger = log_.logger();
    options.cgroups = tree_.get();
    options.supervisor = GPOOL_TASK_SUPERVISOR_BIN;
    options.liveness_check_ms = 20;
    launcher_ = std::make_unique<PosixProcessLauncher>(std::move(options));
    isolation_.enabled = true;
    isolation_.default_identity = TaskIdentity{.set = true, .uid = 65534, .gid = 65534, .user = "nobody"};
    isolation_.gpu_device_nodes = dir_.path() + "/dev/gpu%u";
    node_.gpus = {GpuInfo{.index = 0}, GpuInfo{.index = 1}};
  }
  void TearDown() override {
    if (launcher_ == nullptr) return;
    for (int64_t pid : running_) (void)launcher_->Signal(pid, SIGKILL);
    for (int64_t pid : running_) ReapUntil(pid);
    for (const auto& dir : state_dirs_) EXPECT_TRUE(PollUntil([&] { return !SupervisorAlive(dir); })) << dir;
    for (const auto& name : tree_->List()) EXPECT_TRUE(tree_->Adopt(name)->Drain().ok());
  }

  // Launches `script` as task <job>.0.0 with `run_as`, granted `gpus`.
  Result<int64_t> Launch(uint64_t job, const RunAs& run_as, std::vector<uint32_t> gpus, const std::string& script,
                         std::vector<std::string> env = {}) {
    const TaskId id{JobId(job), 0, 0};
    BindTask bind;
    bind.task = id;
    bind.run_as = run_as;
    bind.gpu_indices = std::move(gpus);
    LaunchRequest request;
    request.argv = {"/bin/sh", "-c", script};
    request.env = {"PATH=/usr/bin:/bin", "CUDA_VISIBLE_DEVICES=0"};
    for (auto& e : env) request.env.push_back(std::move(e));
    request.log_path = tasks_ + "/" + std::to_string(job) + ".0.0.log";
    request.cgroup = "task-" + std::to_string(job);
    request.state_dir = tasks_ + "/" + std::to_string(job) + ".0.0.state";
    std::filesystem::create_directories(request.state_dir);
    state_dirs_.push_back(request.state_dir);
    GPOOL_RETURN_IF_ERROR(ApplyTaskIsolation(isolation_, tasks_, id, bind, node_, {request.log_path}, request));
    auto pid = launcher_->Launch(request);
    if (pid.ok()) running_.push_back(*pid);
    return pid;
  }

  std::optional<ExitInfo> ReapUntil(int64_t pid) {
    std::optional<ExitInfo> found;
    PollUntil([&] {
      for (const auto& exit : launcher_->Reap()) {
        if (exit.pid == pid) found = exit;
      }
      return found.has_value();
    });
    if (found) std::erase(running_, pid);
    return found;
  }

  std::string Log(uint64_t job) { return testing::ReadFile(tasks_ + "/" + std::to_string(job) + ".0.0.log"); }

  testing::TempDir dir_;
  testing::CapturedLog log_;
  std::string tasks_;
  std::string token_;
  std::unique_ptr<CgroupTree> tree_;
  std::unique_ptr<PosixProcessLauncher> launcher_;
  TaskIsolationOptions isolation_;
  NodeSpec node_;
  std::vector<int64_t> running_;
  std::vector<std::string> state_dirs_;
};

bool Has(const std::string& log, const std::string& line) { return log.find(line + "\n") != std::string::npos; }

TEST_F(IsolationTest, ATaskSeesOnlyWhatIsItsOwn) {
  // Task 1: another owner's task, with a secret in its env and its dir.
  auto other = Launch(1, RunAs{.uid = 40001, .gid = 40001, .user = "bob"}, {1},
                      "echo mine > secret.txt && echo ready && exec sleep 600", {"HF_TOKEN=bobs-token"});
  ASSERT_TRUE(other.ok()) << other.status().ToString();
  ASSERT_TRUE(PollUntil([&] { return Has(Log(1), "ready"); })) << Log(1);
  const std::string other_dir = TaskWorkDir(tasks_, TaskId{JobId(1), 0, 0});

  // Task 2: looks around as far as it can, then exits.
  const std::string script =
      "echo uid=$(id -u) gid=$(id -g); echo ppid=$PPID; echo pid=$$; echo cwd=$(pwd);"
      "echo procs=$(ls /proc | grep -c '^[0-9]');"
      "cat /proc/" + std::to_string(getpid()) + "/cmdline >/dev/null 2>&1 && echo worker-cmdline=read || echo worker-cmdline=unreachable;"
      "cat /proc/" + std::to_string(*other) + "/environ >/dev/null 2>&1 && echo other-environ=read || echo other-environ=unreachable;"
      "cat " + other_dir + "/secret.txt >/dev/null 2>&1 && echo other-dir=read || echo other-dir=unreachable;"
      "ls " + tasks_ + " >/dev/null 2>&1 && echo tasks-dir=listed || echo tasks-dir=unlistable;"
      "cat " + tasks_ + "/1.0.0.log >/dev/null 2>&1 && echo other-log=read || echo other-log=unreachable;"
      "cat " + tasks_ + "/1.0.0.state/launch >/dev/null 2>&1 && echo other-spec=read || echo other-spec=unreachable;"
      "cat " + token_ + " >/dev/null 2>&1 && echo token=read || echo token=unreachable;"
      "echo own > own.txt && echo own-dir=writable;"
      "export CUDA_VISIBLE_DEVICES=0,1;"
      "dd if=" + dir_.path() + "/dev/gpu0 of=/dev/null bs=1 count=1 2>/dev/null && echo gpu0=open;"
      "dd if=" + dir_.path() + "/dev/gpu1 of=/dev/null bs=1 count=1 2>&1 | grep -q 'Operation not permitted' && echo gpu1=EPERM;"
      "true";
  auto mine = Launch(2, RunAs{.uid = 40002, .gid = 40002, .user = "alice"}, {0}, script);
  ASSERT_TRUE(mine.ok()) << mine.status().ToString();
  auto exit = ReapUntil(*mine);
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(exit->exit_code, 0);
  const std::string log = Log(2);
  EXPECT_TRUE(Has(log, "uid=40002 gid=40002")) << log;
  EXPECT_TRUE(Has(log, "ppid=1")) << "its parent is its own init, not the supervisor or the worker\n" << log;
  EXPECT_TRUE(Has(log, "pid=2")) << log;
  EXPECT_TRUE(Has(log, "cwd=" + TaskWorkDir(tasks_, TaskId{JobId(2), 0, 0}))) << log;
  EXPECT_TRUE(Has(log, "worker-cmdline=unreachable")) << log;
  EXPECT_TRUE(Has(log, "other-environ=unreachable")) << log;
  EXPECT_TRUE(Has(log, "other-dir=unreachable")) << log;
  EXPECT_TRUE(Has(log, "tasks-dir=unlistable")) << log;
  EXPECT_TRUE(Has(log, "other-log=unreachable")) << log;
  EXPECT_TRUE(Has(log, "other-spec=unreachable")) << log;
  EXPECT_TRUE(Has(log, "token=unreachable")) << log;
  EXPECT_TRUE(Has(log, "own-dir=writable")) << log;
  EXPECT_TRUE(Has(log, "gpu0=open")) << log;
  EXPECT_TRUE(Has(log, "gpu1=EPERM")) << log;

  // A signal to the task still reaches its program (its init relays how it ended).
  ASSERT_TRUE(launcher_->Signal(*other, SIGTERM).ok());
  auto ended = ReapUntil(*other);
  ASSERT_TRUE(ended.has_value());
  EXPECT_EQ(ended->signal, SIGTERM);
  EXPECT_EQ(ended->exit_code, 128 + SIGTERM);
}

TEST_F(IsolationTest, TheDefaultIdentityIsNobodyAndRootIsRefused) {
  auto task = Launch(3, RunAs{}, {}, "id -u; exit 7");
  ASSERT_TRUE(task.ok()) << task.status().ToString();
  auto exit = ReapUntil(*task);
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(exit->exit_code, 7) << "the program's own exit code, through its init";
  EXPECT_EQ(Log(3), "65534\n");
  auto root = Launch(4, RunAs{.uid = 0, .gid = 0, .user = "root"}, {}, "true");
  EXPECT_EQ(root.status().code(), StatusCode::kFailedPrecondition) << root.status().ToString();
}

TEST_F(IsolationTest, AProgramThatCannotStartSaysWhy) {
  auto task = Launch(5, RunAs{}, {}, "true");
  ASSERT_TRUE(task.ok());
  ReapUntil(*task);
  const TaskId id{JobId(6), 0, 0};
  BindTask bind;
  bind.task = id;
  LaunchRequest request;
  request.argv = {"/no/such/program"};
  request.env = {"PATH=/usr/bin:/bin"};
  request.log_path = tasks_ + "/6.0.0.log";
  request.cgroup = "task-6";
  request.state_dir = tasks_ + "/6.0.0.state";
  std::filesystem::create_directories(request.state_dir);
  state_dirs_.push_back(request.state_dir);
  ASSERT_TRUE(ApplyTaskIsolation(isolation_, tasks_, id, bind, node_, {request.log_path}, request).ok());
  auto pid = launcher_->Launch(request);
  EXPECT_EQ(pid.status().code(), StatusCode::kNotFound) << pid.status().ToString();
}

// `gpool exec` into an isolated task: the command joins the task's PID and
// mount namespaces and its identity, gets the environment the task's
// program started with (not its init's), and ends the way it ended.
TEST_F(IsolationTest, ExecJoinsTheTasksNamespacesAndIdentity) {
  auto task = Launch(7, RunAs{.uid = 40007, .gid = 40007, .user = "carol"}, {0},
                     "echo ready && exec sleep 600", {"HF_TOKEN=carols-token"});
  ASSERT_TRUE(task.ok()) << task.status().ToString();
  ASSERT_TRUE(PollUntil([&] { return Has(Log(7), "ready"); })) << Log(7);

  ExecManagerOptions options;
  options.task_pid = [&](const TaskId&) -> Result<int64_t> { return *task; };
  options.clock = &SystemClock::Get();
  options.logger = log_.logger();
  auto exec = ExecManager::Open(std::move(options));
  ASSERT_TRUE(exec.ok()) << exec.status().ToString();
  const TaskId id{JobId(7), 0, 0};
  auto run = [&](const std::string& script) {
    auto started = (*exec)->Start(TaskExecStart{id, {"/bin/sh", "-c", script}, 10'000});
    EXPECT_TRUE(started.ok()) << started.status().ToString();
    std::string out;
    ExecPollReply last;
    EXPECT_TRUE(PollUntil([&] {
      (*exec)->Tick();
      auto reply = (*exec)->Poll(TaskExecPoll{id, started->exec_id, out.size(), 0, 1 << 20});
      if (!reply.ok()) return false;
      out += reply->stdout_data;
      last = *reply;
      return reply->exited;
    }));
    return std::make_pair(out, last);
  };
  auto [out, last] = run("id -u; echo token=$HF_TOKEN; echo cwd=$(pwd); echo ppid=$PPID; dd if=" + dir_.path() +
                         "/dev/gpu1 of=/dev/null count=1 2>&1 | grep -q 'Operation not permitted' && echo gpu1=EPERM;"
                         "exit 3");
  EXPECT_TRUE(Has(out, "40007")) << out;
  EXPECT_TRUE(Has(out, "token=carols-token")) << "the task's env, not its init's\n" << out;
  EXPECT_TRUE(Has(out, "cwd=" + TaskWorkDir(tasks_, id))) << out;
  EXPECT_TRUE(Has(out, "ppid=0")) << "in the task's PID namespace its relay, outside it, has no pid\n" << out;
  EXPECT_TRUE(Has(out, "gpu1=EPERM")) << "its cgroups, device rules included\n" << out;
  EXPECT_EQ(last.exit_code, 3);
  auto [out2, killed] = run("kill -TERM $$");
  EXPECT_EQ(killed.signal, SIGTERM) << "the relay ends the way the command did";
}

// The v2 path on this kernel: the device program attached to a cgroup of
// the unified hierarchy (on a hybrid host like CI's, the v1 controllers sit
// beside it, and the kernel runs the program for every open by a process in
// that cgroup). Skipped where there is no writable unified hierarchy.
TEST_F(IsolationTest, TheV2DeviceProgramDeniesOnlyTheListedNode) {
  std::string unified;
  for (const std::string dir : {"/sys/fs/cgroup/unified", "/sys/fs/cgroup"}) {
    if (access((dir + "/cgroup.controllers").c_str(), F_OK) == 0 && access(dir.c_str(), W_OK) == 0) {
      unified = dir;
      break;
    }
  }
  if (unified.empty()) GTEST_SKIP() << "no writable cgroup v2 hierarchy";
  const std::string cgroup = unified + "/gpool-devtest-" + std::to_string(getpid());
  ASSERT_EQ(mkdir(cgroup.c_str(), 0755), 0) << std::strerror(errno);
  Status attached = AttachV2DeviceProgram(cgroup, V2DeviceProgram({DeviceRule{.major = 1, .minor = 8}}));
  if (!attached.ok()) {
    rmdir(cgroup.c_str());
    GTEST_SKIP() << attached.ToString();
  }
  const std::string procs = cgroup + "/cgroup.procs";
  const std::string gpu0 = dir_.path() + "/dev/gpu0";
  const std::string gpu1 = dir_.path() + "/dev/gpu1";
  const pid_t child = fork();
  if (child == 0) {
    // Exit code: 0 when gpu0 opens and gpu1 is EPERM; which step failed otherwise.
    const int join = open(procs.c_str(), O_WRONLY);
    if (join < 0 || write(join, "0", 1) != 1) _exit(10);
    const int allowed = open(gpu0.c_str(), O_RDONLY);
    if (allowed < 0) _exit(11);
    const int denied = open(gpu1.c_str(), O_RDONLY);
    if (denied >= 0) _exit(12);
    _exit(errno == EPERM ? 0 : 13);
  }
  int wstatus = 0;
  ASSERT_EQ(waitpid(child, &wstatus, 0), child);
  EXPECT_TRUE(PollUntil([&] { return rmdir(cgroup.c_str()) == 0; })) << std::strerror(errno);
  ASSERT_TRUE(WIFEXITED(wstatus));
  EXPECT_EQ(WEXITSTATUS(wstatus), 0) << "10: join, 11: the allowed node refused, 12: the denied node opened, 13: not EPERM";
}

}  // namespace
}  // namespace gpool::worker::isolation_test
