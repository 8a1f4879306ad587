// TaskManager and rGPU sessions (rgpu_server.h): a session's bind runs the
// session server with a port, a key pair and the owner's key, its started
// event says where it listens, and its key goes with the attempt.
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "protocol/security/keys.h"
#include "worker/runner/fake_process_launcher.h"
#include "worker/runner/rgpu_server.h"
#include "worker/runner/share_enforcement.h"
#include "worker/runner/task_manager.h"
#include "worker/runner/task_manager_test_util.h"
#include "worker/test_util.h"

namespace gpool::worker {
namespace {

namespace fs = std::filesystem;

constexpr const char* kOwnerKey = "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7";

class TaskManagerRgpuTest : public ::testing::Test {
 protected:
  std::unique_ptr<TaskManager> Open(FakeProcessLauncher* launcher, const std::string& server,
                                    const ShareEnforcementOptions& share = {}) {
    TaskManagerOptions options =
        testing::TaskManagerTestOptions(testing::TaskManagerNode(2), dir_, launcher, &clock_, log_);
    options.share = share;
    options.rgpu.server = server;
    options.rgpu.address = "127.0.0.1";
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

  FakeClock clock_;
  testing::TempDir dir_;
  testing::CapturedLog log_;
};

TEST_F(TaskManagerRgpuTest, ASessionRunsItsServerWithAPortAKeyAndTheOwnersKeyOnly) {
  FakeProcessLauncher launcher;
  auto tm = Open(&launcher, "/opt/gpool/bin/gpool-rgpu-server");
  ASSERT_TRUE(tm->Bind(SessionBind(1)).ok());
  tm->Poll();
  ASSERT_EQ(launcher.launched().size(), 1u);
  const std::vector<std::string>& argv = launcher.launched()[0].request.argv;
  ASSERT_EQ(argv.size(), 9u);
  EXPECT_EQ(argv[0], "/opt/gpool/bin/gpool-rgpu-server");
  EXPECT_EQ(argv[1], "--endpoint");
  EXPECT_EQ(argv[2].rfind("tcp://127.0.0.1:", 0), 0u) << argv[2];
  EXPECT_EQ(argv[3], "--secret-key-file");
  EXPECT_EQ(argv[4], KeyFile(1));
  EXPECT_EQ(argv[5], "--owner-key");
  EXPECT_EQ(argv[6], kOwnerKey);
  EXPECT_EQ(argv[8], "60000");
  // The key file is the server's own (0600) and its public half is what the
  // started event tells the coordinator, with the endpoint.
  struct stat st {};
  ASSERT_EQ(stat(KeyFile(1).c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  auto keys = security::ReadSecretKeyFile(KeyFile(1));
  ASSERT_TRUE(keys.ok()) << keys.status().ToString();
  const TaskEvent& started = tm->Outbox().begin()->second;
  EXPECT_EQ(started.kind, TaskEventKind::kStarted);
  EXPECT_EQ(started.rgpu_endpoint, argv[2]);
  EXPECT_EQ(started.rgpu_server_key, keys->public_key);
  // It goes with the attempt.
  launcher.Exit(launcher.launched()[0].pid, 3);
  tm->Poll();
  EXPECT_FALSE(fs::exists(KeyFile(1)));
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
  ASSERT_EQ(whole.size(), 11u);
  EXPECT_EQ(whole[9], "--driver");
  EXPECT_EQ(whole[10], "/opt/nvidia/lib64/libcuda.so.1");
  const LaunchRequest& shared = launcher.launched()[1].request;
  EXPECT_EQ(shared.argv.size(), 9u) << "a share's server must not bypass its interposer";
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

TEST(RgpuServerTest, PortsAreFreeAndAddressesChecked) {
  auto port = PickFreePort("127.0.0.1");
  ASSERT_TRUE(port.ok()) << port.status().ToString();
  EXPECT_GT(*port, 0);
  EXPECT_EQ(PickFreePort("node-7").status().code(), StatusCode::kInvalidArgument);
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
