// TaskManager and rGPU sessions (rgpu_server.h): a session's bind runs the
// session server on a port of its own choice with a key pair and the
// owner's key; its started event waits until the server reports where it
// listens, a server that never does is stopped saying why, and its files go
// with the attempt.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "protocol/base/testing/fake_clock.h"
#include "protocol/messages_worker.h"
#include "protocol/model/task_report.h"
#include "protocol/security/keys.h"
#include "worker/runner/rgpu_server.h"
#include "worker/runner/share_enforcement.h"
#include "worker/runner/task_env.h"
#include "worker/runner/task_manager.h"
#include "worker/runner/task_manager_test_util.h"
#include "worker/runner/testing/fake_process_launcher.h"
#include "worker/test_util.h"

namespace gpool::worker {
namespace {

namespace fs = std::filesystem;
using testing::kOwnerKey;

class TaskManagerRgpuTest : public ::testing::Test {
 protected:
  std::unique_ptr<TaskManager> Open(FakeProcessLauncher* launcher, const std::string& server,
                                    const ShareEnforcementOptions& share = {}, bool adopt = false) {
    TaskManagerOptions options =
        testing::TaskManagerTestOptions(testing::TaskManagerNode(2), dir_, launcher, &clock_, log_);
    options.share = share;
    options.rgpu.server = server;
    options.rgpu.address = "127.0.0.1";
    options.rgpu.ready_timeout_ms = 5'000;
    options.adopt_tasks = adopt;
    auto tm = TaskManager::Open(std::move(options));
    EXPECT_TRUE(tm.ok()) << tm.status().ToString();
    return tm.ok() ? std::move(tm).value() : nullptr;
  }
  static BindTask SessionBind(uint64_t job) {
    BindTask bind = testing::OneGpuBind(job);
    bind.command = {"gpool-rgpu-server"};
    bind.rgpu.owner_key = kOwnerKey;
    bind.rgpu.idle_timeout_ms = 60'000;
    return bind;
  }
  std::string KeyFile(uint64_t job) const {
    return TaskRgpuKeyPath(dir_.path() + "/tasks", TaskId{JobId(job), 0, 0});
  }
  std::string EndpointFile(uint64_t job) const {
    return TaskRgpuEndpointPath(dir_.path() + "/tasks", TaskId{JobId(job), 0, 0});
  }
  // What gpool-rgpu-server does once bound (endpoint_file.h).
  void Report(uint64_t job, const std::string& endpoint) {
    std::ofstream(EndpointFile(job) + ".tmp") << endpoint << "\n";
    fs::rename(EndpointFile(job) + ".tmp", EndpointFile(job));
  }
  std::vector<TaskEvent> Events(const TaskManager& tm) const {
    std::vector<TaskEvent> out;
    for (const auto& [seq, event] : tm.Outbox()) out.push_back(event);
    return out;
  }

  FakeClock clock_;
  testing::TempDir dir_;
  testing::CapturedLog log_;
};

TEST_F(TaskManagerRgpuTest, ASessionRunsItsServerOnAPortOfItsOwnAndStartsOnceItSaysWhich) {
  FakeProcessLauncher launcher;
  auto tm = Open(&launcher, "/opt/gpool/bin/gpool-rgpu-server");
  ASSERT_TRUE(tm->Bind(SessionBind(1)).ok());
  const int64_t launched_ms = clock_.WallMs();
  tm->Poll();
  ASSERT_EQ(launcher.launched().size(), 1u);
  const std::vector<std::string>& argv = launcher.launched()[0].request.argv;
  ASSERT_EQ(argv.size(), 11u);
  EXPECT_EQ(argv[0], "/opt/gpool/bin/gpool-rgpu-server");
  EXPECT_EQ(argv[1], "--endpoint");
  EXPECT_EQ(argv[2], "tcp://127.0.0.1:*") << "the server binds a port of its own choice";
  EXPECT_EQ(argv[3], "--secret-key-file");
  EXPECT_EQ(argv[4], KeyFile(1));
  EXPECT_EQ(argv[5], "--owner-key");
  EXPECT_EQ(argv[6], kOwnerKey);
  EXPECT_EQ(argv[8], "60000");
  EXPECT_EQ(argv[9], "--endpoint-file");
  EXPECT_EQ(argv[10], EndpointFile(1));
  // The key file is the server's own (0600).
  struct stat st {};
  ASSERT_EQ(stat(KeyFile(1).c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  auto keys = security::ReadSecretKeyFile(KeyFile(1));
  ASSERT_TRUE(keys.ok()) << keys.status().ToString();
  // Running, but nothing to tell clients until the server says where it
  // listens.
  EXPECT_TRUE(tm->Outbox().empty());
  ASSERT_EQ(tm->Reports().size(), 1u);
  EXPECT_EQ(tm->Reports()[0].state, TaskState::kRunning);
  clock_.Advance(300);
  tm->Poll();
  EXPECT_TRUE(tm->Outbox().empty());
  // The port it reports is the one clients get, with its key, dated from
  // the launch (usage counts from there).
  Report(1, "tcp://127.0.0.1:41234");
  tm->Poll();
  ASSERT_EQ(tm->Outbox().size(), 1u);
  const TaskEvent& started = tm->Outbox().begin()->second;
  EXPECT_EQ(started.kind, TaskEventKind::kStarted);
  EXPECT_EQ(started.pid, launcher.launched()[0].pid);
  EXPECT_EQ(started.rgpu_endpoint, "tcp://127.0.0.1:41234");
  EXPECT_EQ(started.rgpu_server_key, keys->public_key);
  EXPECT_EQ(started.time_ms, launched_ms);
  // Told once.
  clock_.Advance(10'000);
  tm->Poll();
  EXPECT_EQ(tm->Outbox().size(), 1u);
  EXPECT_TRUE(launcher.signals().empty());
  // Its files go with the attempt.
  launcher.Exit(launcher.launched()[0].pid, 3);
  tm->Poll();
  EXPECT_FALSE(fs::exists(KeyFile(1)));
  EXPECT_FALSE(fs::exists(EndpointFile(1)));
}

// The failure path: a server that never reports (hung loading its driver,
// say) is stopped at the deadline, SIGKILLed if it ignores the SIGTERM, and
// the session fails with the reason in its exit event and its log.
TEST_F(TaskManagerRgpuTest, AServerThatReportsNoEndpointInTimeIsStoppedSayingWhy) {
  FakeProcessLauncher launcher;
  launcher.IgnoreSignal(SIGTERM);
  auto tm = Open(&launcher, "/opt/gpool/bin/gpool-rgpu-server");
  ASSERT_TRUE(tm->Bind(SessionBind(6)).ok());
  tm->Poll();
  ASSERT_EQ(launcher.launched().size(), 1u);
  const int64_t pid = launcher.launched()[0].pid;
  clock_.Advance(4'999);
  tm->Poll();
  EXPECT_TRUE(launcher.signals().empty());
  clock_.Advance(1);
  tm->Poll();
  ASSERT_EQ(launcher.signals().size(), 1u);
  EXPECT_EQ(launcher.signals()[0], std::make_pair(pid, SIGTERM));
  clock_.Advance(2'000);
  tm->Poll();
  ASSERT_EQ(launcher.signals().size(), 2u);
  EXPECT_EQ(launcher.signals()[1], std::make_pair(pid, SIGKILL));
  EXPECT_FALSE(launcher.IsRunning(pid));
  tm->Poll();
  const std::vector<TaskEvent> events = Events(*tm);
  ASSERT_EQ(events.size(), 1u) << "no started event: it never served";
  EXPECT_EQ(events[0].kind, TaskEventKind::kExited);
  EXPECT_NE(events[0].message.find("stopped by the worker: the rGPU session server did not report its endpoint "
                                   "within 5000 ms"),
            std::string::npos)
      << events[0].message;
  std::ifstream log(dir_.path() + "/tasks/6.0.0.log");
  const std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("did not report its endpoint"), std::string::npos) << text;
  EXPECT_FALSE(fs::exists(KeyFile(6)));
}

// Only a port on the node's rGPU address is taken from the file: its
// directory may be the session owner's.
TEST_F(TaskManagerRgpuTest, AServerThatReportsAnythingButAnEndpointIsStoppedAtOnce) {
  FakeProcessLauncher launcher;
  auto tm = Open(&launcher, "/opt/gpool/bin/gpool-rgpu-server");
  ASSERT_TRUE(tm->Bind(SessionBind(7)).ok());
  tm->Poll();
  Report(7, "tcp://10.1.2.3:5555");
  tm->Poll();
  ASSERT_EQ(launcher.signals().size(), 1u);
  EXPECT_EQ(launcher.signals()[0].second, SIGTERM);
  tm->Poll();
  const std::vector<TaskEvent> events = Events(*tm);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, TaskEventKind::kExited);
  EXPECT_NE(events[0].message.find("not an endpoint tcp://127.0.0.1:PORT"), std::string::npos) << events[0].message;
}

TEST_F(TaskManagerRgpuTest, AServerThatExitsBeforeItReportsSaysSoAndOneThatReportedStartsFirst) {
  FakeProcessLauncher launcher;
  auto tm = Open(&launcher, "/opt/gpool/bin/gpool-rgpu-server");
  BindTask other = SessionBind(9);
  other.gpu_indices = {0};  // beside job 8's, on GPU 1
  ASSERT_TRUE(tm->Bind(SessionBind(8)).ok());
  ASSERT_TRUE(tm->Bind(other).ok());
  tm->Poll();
  ASSERT_EQ(launcher.launched().size(), 2u);
  launcher.Exit(launcher.launched()[0].pid, 2);  // cannot start: bad driver, say
  Report(9, "tcp://127.0.0.1:40001");
  launcher.Exit(launcher.launched()[1].pid, 3);  // reported, then idle, within one turn
  tm->Poll();
  const std::vector<TaskEvent> events = Events(*tm);
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0].task.job.value(), 9u);
  EXPECT_EQ(events[0].kind, TaskEventKind::kStarted);
  EXPECT_EQ(events[0].rgpu_endpoint, "tcp://127.0.0.1:40001");
  EXPECT_EQ(events[1].task.job.value(), 8u);
  EXPECT_EQ(events[1].kind, TaskEventKind::kExited);
  EXPECT_EQ(events[1].exit_code, 2);
  EXPECT_NE(events[1].message.find("exited before it reported its endpoint"), std::string::npos) << events[1].message;
  EXPECT_EQ(events[2].task.job.value(), 9u);
  EXPECT_EQ(events[2].kind, TaskEventKind::kExited);
  EXPECT_EQ(events[2].message.find("before it reported"), std::string::npos) << events[2].message;
}

// A worker that restarts while (or after) its server reports tells the
// coordinator the endpoint again: the previous process's event may never
// have left it.
TEST_F(TaskManagerRgpuTest, AnAdoptedSessionReportsItsEndpointAgain) {
  int64_t pid = 0;
  {
    FakeProcessLauncher launcher;
    auto tm = Open(&launcher, "/opt/gpool/bin/gpool-rgpu-server", {}, /*adopt=*/true);
    ASSERT_TRUE(tm->Bind(SessionBind(10)).ok());
    tm->Poll();
    ASSERT_EQ(launcher.launched().size(), 1u);
    pid = launcher.launched()[0].pid;
  }
  FakeProcessLauncher restarted;
  restarted.Adoptable(TaskStateDir(dir_.path() + "/tasks", TaskId{JobId(10), 0, 0}),
                      AdoptedProcess{.pid = pid, .running = true, .start_wall_ms = clock_.WallMs() - 50});
  auto tm = Open(&restarted, "/opt/gpool/bin/gpool-rgpu-server", {}, /*adopt=*/true);
  tm->Poll();
  EXPECT_TRUE(tm->Outbox().empty());
  Report(10, "tcp://127.0.0.1:40002");
  tm->Poll();
  ASSERT_EQ(tm->Outbox().size(), 1u);
  const TaskEvent& started = tm->Outbox().begin()->second;
  EXPECT_EQ(started.kind, TaskEventKind::kStarted);
  EXPECT_EQ(started.pid, pid);
  EXPECT_EQ(started.rgpu_endpoint, "tcp://127.0.0.1:40002");
  EXPECT_FALSE(started.rgpu_server_key.empty());
  EXPECT_EQ(started.time_ms, clock_.WallMs() - 50);
}

// Which driver the server opens: a whole GPU's, the node's real one by path
// (--cuda-real-driver need not be on the search path: a session on such a
// node failed "cannot open the CUDA driver libcuda.so.1"); a share's,
// libcuda.so.1 by name, which its LD_LIBRARY_PATH resolves to the
// interposer that holds it to the share.
TEST_F(TaskManagerRgpuTest, AWholeGpuSessionOpensTheRealDriverAShareItsInterposer) {
  fs::create_directories(dir_.path() + "/lib");
  fs::create_directories(dir_.path() + "/shm");
  ShareEnforcementOptions share;
  share.interposer = dir_.path() + "/lib/libgpool-cuda.so.1";
  std::ofstream(share.interposer) << "not a library";
  share.real_driver = "/opt/nvidia/lib64/libcuda.so.1";
  share.ledger_dir = dir_.path() + "/shm";
  share.activity_dir = dir_.path() + "/shm";
  FakeProcessLauncher launcher;
  auto tm = Open(&launcher, "/opt/gpool/bin/gpool-rgpu-server", share);
  BindTask part = SessionBind(5);
  part.gpu_memory_mib = 20480;
  part.gpu_compute_pct = 30;
  part.gpu_indices = {0};  // the whole-GPU session holds GPU 1
  ASSERT_TRUE(tm->Bind(SessionBind(4)).ok());
  ASSERT_TRUE(tm->Bind(part).ok());
  tm->Poll();
  ASSERT_EQ(launcher.launched().size(), 2u);
  const auto& whole = launcher.launched()[0].request.argv;
  ASSERT_EQ(whole.size(), 13u);
  EXPECT_EQ(whole[11], "--driver");
  EXPECT_EQ(whole[12], "/opt/nvidia/lib64/libcuda.so.1");
  const LaunchRequest& shared = launcher.launched()[1].request;
  EXPECT_EQ(shared.argv.size(), 11u) << "a share's server must not bypass its interposer";
  bool interposed = false;
  for (const std::string& kv : shared.env) {
    interposed |= kv.rfind("LD_LIBRARY_PATH=" + TaskCudaDir(dir_.path() + "/tasks", part.task), 0) == 0;
  }
  EXPECT_TRUE(interposed);
}

TEST_F(TaskManagerRgpuTest, ANodeWithoutASessionServerFailsTheSessionSayingWhy) {
  FakeProcessLauncher launcher;
  auto tm = Open(&launcher, "");
  ASSERT_TRUE(tm->Bind(SessionBind(2)).ok());
  tm->Poll();
  EXPECT_TRUE(launcher.launched().empty());
  const TaskEvent& failed = tm->Outbox().begin()->second;
  EXPECT_EQ(failed.kind, TaskEventKind::kFailed);
  EXPECT_NE(failed.message.find("no rGPU session server"), std::string::npos) << failed.message;
}

TEST_F(TaskManagerRgpuTest, APlainTaskRunsItsOwnCommand) {
  FakeProcessLauncher launcher;
  auto tm = Open(&launcher, "/opt/gpool/bin/gpool-rgpu-server");
  ASSERT_TRUE(tm->Bind(testing::OneGpuBind(3)).ok());
  tm->Poll();
  ASSERT_EQ(launcher.launched().size(), 1u);
  EXPECT_EQ(launcher.launched()[0].request.argv, (std::vector<std::string>{"python", "train.py"}));
  EXPECT_TRUE(tm->Outbox().begin()->second.rgpu_endpoint.empty());
}

TEST(RgpuServerTest, TheAddressMustBeAnIpv4Address) {
  testing::TempDir dir;
  RgpuOptions options;
  options.server = "/opt/gpool/bin/gpool-rgpu-server";
  options.address = "node-7";
  BindTask bind;
  bind.rgpu.owner_key = kOwnerKey;
  auto argv = PrepareRgpuServer(options, dir.path() + "/k", dir.path() + "/e", "", bind);
  EXPECT_EQ(argv.status().code(), StatusCode::kInvalidArgument);
}

TEST(RgpuServerTest, AReportedEndpointIsAPortOnTheAddressInARegularFile) {
  testing::TempDir dir;
  const std::string path = dir.path() + "/e";
  EXPECT_EQ(ReadRgpuEndpoint(path, "127.0.0.1").status().code(), StatusCode::kNotFound);
  const auto write = [&](const std::string& text) {
    std::filesystem::remove(path);
    std::ofstream(path) << text;
  };
  write("tcp://127.0.0.1:5555\n");
  auto endpoint = ReadRgpuEndpoint(path, "127.0.0.1");
  ASSERT_TRUE(endpoint.ok()) << endpoint.status().ToString();
  EXPECT_EQ(*endpoint, "tcp://127.0.0.1:5555");
  for (const std::string bad : {"", "tcp://127.0.0.1:*\n", "tcp://127.0.0.1:0\n", "tcp://127.0.0.1:70000\n",
                                "tcp://127.0.0.10:5555\n", "tcp://127.0.0.1:5555\nroot:x:0:0\n", "secret"}) {
    write(bad);
    EXPECT_EQ(ReadRgpuEndpoint(path, "127.0.0.1").status().code(), StatusCode::kMalformed) << bad;
  }
  // Not followed, not blocked on: a link or a FIFO planted in its place.
  write("tcp://127.0.0.1:5555\n");
  std::filesystem::remove(dir.path() + "/l");
  std::filesystem::create_symlink(path, dir.path() + "/l");
  EXPECT_EQ(ReadRgpuEndpoint(dir.path() + "/l", "127.0.0.1").status().code(), StatusCode::kMalformed);
  ASSERT_EQ(mkfifo((dir.path() + "/f").c_str(), 0600), 0);
  EXPECT_EQ(ReadRgpuEndpoint(dir.path() + "/f", "127.0.0.1").status().code(), StatusCode::kMalformed);
}

TEST(RgpuServerTest, TheServerIsFoundNextToTheWorkerOrNamedOrTurnedOff) {
  testing::TempDir dir;
  fs::create_directories(dir.path() + "/bin/rgpu");
  std::ofstream(dir.path() + "/bin/rgpu/gpool-rgpu-server") << "";
  EXPECT_EQ(ChooseRgpuServer("", dir.path() + "/bin/gpool-worker"), dir.path() + "/bin/rgpu/gpool-rgpu-server");
  EXPECT_EQ(ChooseRgpuServer("none", dir.path() + "/bin/gpool-worker"), "");
  EXPECT_EQ(ChooseRgpuServer(dir.path() + "/missing", dir.path() + "/bin/gpool-worker"), "");
}

}  // namespace
}  // namespace gpool::worker
