// rGPU sessions end to end on 127.0.0.1: gpool-rgpu-check in a child
// process, the interposer as its libcuda.so.1 in remote mode, against a
// gpool-rgpu-server child process executing on the fake driver.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <string>

#include "worker/cuda/cuda_test_support.h"
#include "worker/rgpu/rgpu_test_support.h"

namespace gpool::rgpu {
namespace {

using cuda::testing::CudaTask;
using testing::ReadFile;
using testing::RemoteEnv;
using testing::ServerArgs;
using testing::ServerProcess;
using testing::SessionKeys;

constexpr int kLongIdleMs = 60000;

TEST(RgpuSession, ADriverProgramPrintsTheSameLocallyAndThroughASession) {
  CudaTask task;
  // `batch 300`: 600 queued calls, more than one batch (kMaxQueuedCalls) holds.
  const std::vector<std::string> steps{"session", "batch", "300"};
  const auto local = task.Run({}, steps);
  ASSERT_EQ(local.exit_code, 0) << local.output;
  ASSERT_NE(local.output.find("vector_add result=0 correct=1"), std::string::npos) << local.output;
  ASSERT_NE(local.output.find("batch result=0 rounds=300 sum=307200.0"), std::string::npos) << local.output;

  SessionKeys keys;
  ServerProcess server;
  ASSERT_TRUE(server.Start(ServerArgs(keys, keys.owner().public_key, kLongIdleMs), {}));
  const auto remote = task.Run(RemoteEnv(keys, server.endpoint()), steps);
  EXPECT_EQ(remote.exit_code, 0);
  EXPECT_EQ(remote.output, local.output);
  server.Signal(SIGTERM);
  const auto end = server.WaitExit(30);
  EXPECT_TRUE(end.exited);
  EXPECT_EQ(end.code, 0);
}

TEST(RgpuSession, ASessionPastItsMemoryShareGetsOutOfMemory) {
  // The worker's way: the interposer first on the server's library path,
  // the share in its environment; the server opens "libcuda.so.1".
  CudaTask task;
  SessionKeys keys;
  ServerProcess server;
  ASSERT_TRUE(server.Start(
      ServerArgs(keys, keys.owner().public_key, kLongIdleMs, /*fake_driver=*/false),
      {"LD_LIBRARY_PATH=" + task.dir() + "/lib", std::string("GPOOL_CUDA_REAL_DRIVER=") + GPOOL_FAKE_CUDA_PATH,
       "GPOOL_GPU_MEMORY_MIB=64", "GPOOL_CUDA_ACTIVITY=" + task.activity()}));
  const auto run = task.Run(RemoteEnv(keys, server.endpoint()), {"oom", "64"});
  EXPECT_EQ(run.exit_code, 0);
  EXPECT_NE(run.output.find("oom result=2 allocated_mib=64"), std::string::npos) << run.output;
}

TEST(RgpuSession, AClientWithAnotherKeyIsRefusedAndNothingRuns) {
  CudaTask task;
  SessionKeys keys;
  const std::string stats = keys.dir() + "/fake-stats";
  ServerProcess server;
  ASSERT_TRUE(server.Start(ServerArgs(keys, keys.owner().public_key, kLongIdleMs), {"FAKE_CUDA_STATS_FILE=" + stats}));
  const auto run = task.Run(RemoteEnv(keys, server.endpoint(), "stranger", 1000), {"alloc", "1", "sync"});
  EXPECT_NE(run.output.find("alloc result=46"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("sync result=46"), std::string::npos) << run.output;
  server.Signal(SIGTERM);
  ASSERT_EQ(server.WaitExit(30).code, 0);
  // The fake was not even initialised (it writes its statistics at exit
  // once cuInit ran), or saw no allocation.
  const std::string seen = ReadFile(stats);
  EXPECT_TRUE(seen.empty() || seen.find("alloc_calls=0") != std::string::npos) << seen;
}

TEST(RgpuSession, AKilledServerFailsTheNextCallWithinTheTimeout) {
  CudaTask task;
  SessionKeys keys;
  ServerProcess server;
  ASSERT_TRUE(server.Start(ServerArgs(keys, keys.owner().public_key, kLongIdleMs), {}));
  constexpr int kTimeoutMs = 1000;
  auto client =
      task.Start(RemoteEnv(keys, server.endpoint(), "owner", kTimeoutMs), {"alloc", "1", "hold", "sync", "sync"});
  const std::string before = client.ReadUntil("held");
  ASSERT_NE(before.find("alloc result=0"), std::string::npos) << before;
  server.Kill();
  const auto start = std::chrono::steady_clock::now();
  client.Continue();
  const auto run = client.FinishWithin(30);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(run.exit_code, 0) << run.output;
  // The first call waits out its timeout, the next fails at once.
  EXPECT_NE(run.output.find("sync result=46"), std::string::npos) << run.output;
  const double first_ms = cuda::testing::ValueOf(run.output, "ms");
  std::printf("first call after the server's kill failed after %.0f ms (timeout %d ms)\n", first_ms, kTimeoutMs);
  EXPECT_GE(first_ms, kTimeoutMs - 50);
  EXPECT_LT(first_ms, kTimeoutMs + 1500);
  EXPECT_NE(run.output.find("sync result=46 ms=0"), std::string::npos) << run.output;
  EXPECT_LT(seconds, 10);
}

TEST(RgpuSession, AKilledClientsSessionIsFreedAfterTheIdleTimeout) {
  CudaTask task;
  SessionKeys keys;
  const std::string stats = keys.dir() + "/fake-stats";
  ServerProcess server;
  ASSERT_TRUE(server.Start(ServerArgs(keys, keys.owner().public_key, 700), {"FAKE_CUDA_STATS_FILE=" + stats}));
  auto client = task.Start(RemoteEnv(keys, server.endpoint()), {"alloc", "32", "alloc", "16", "hold"});
  const std::string before = client.ReadUntil("held");
  ASSERT_NE(before.find("alloc result=0"), std::string::npos) << before;
  client.Kill();
  const auto end = server.WaitExit(30);
  EXPECT_TRUE(end.exited);
  EXPECT_EQ(end.code, 3);
  EXPECT_NE(ReadFile(stats).find("live_allocations=0 live_bytes=0 alloc_calls=2"), std::string::npos)
      << ReadFile(stats);
}

TEST(RgpuSession, AQueuedCallsErrorIsReportedByTheNextSynchronousCallOnce) {
  CudaTask task;
  SessionKeys keys;
  ServerProcess server;
  ASSERT_TRUE(server.Start(ServerArgs(keys, keys.owner().public_key, kLongIdleMs), {}));
  const auto run = task.Run(RemoteEnv(keys, server.endpoint()), {"deferred"});
  EXPECT_NE(run.output.find("deferred_memset result=0\ndeferred_sync result=1\ndeferred_sync result=0\n"),
            std::string::npos)
      << run.output;
  // The 256th queued call sends the full queue; the next one answers its error.
  EXPECT_NE(run.output.find("deferred_full result=1 first_error_at=256\ndeferred_sync result=0\nmem_free result=0"),
            std::string::npos)
      << run.output;
}

TEST(RgpuSession, AnUncoveredCallAnswersNotSupported) {
  CudaTask task;
  SessionKeys keys;
  ServerProcess server;
  ASSERT_TRUE(server.Start(ServerArgs(keys, keys.owner().public_key, kLongIdleMs), {}));
  const auto run = task.Run(RemoteEnv(keys, server.endpoint()), {"unsupported", "errors"});
  EXPECT_EQ(run.exit_code, 0);
  EXPECT_NE(run.output.find("unsupported_symbol result=801"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("unsupported_proc_address result=801"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("covered_proc_address result=0 count=1"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("errors result=0 name=CUDA_ERROR_OUT_OF_MEMORY text=\"out of memory\""), std::string::npos)
      << run.output;
}

TEST(RgpuSession, TheServerRefusesToStartOnABadKeyFileOrEndpoint) {
  SessionKeys keys;
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"--endpoint", "tcp://127.0.0.1:*", "--secret-key-file", keys.dir() + "/missing.key", "--owner-key",
            keys.owner().public_key, "--idle-timeout-ms", "1000", "--driver", GPOOL_FAKE_CUDA_PATH},
           {"--endpoint", "nonsense", "--secret-key-file", keys.File("server"), "--owner-key", keys.owner().public_key,
            "--idle-timeout-ms", "1000", "--driver", GPOOL_FAKE_CUDA_PATH},
           {"--endpoint", "tcp://127.0.0.1:*", "--secret-key-file", keys.File("server"), "--owner-key", "short",
            "--idle-timeout-ms", "1000", "--driver", GPOOL_FAKE_CUDA_PATH},
           {"--endpoint", "tcp://127.0.0.1:*", "--secret-key-file", keys.File("server"), "--owner-key",
            keys.owner().public_key, "--idle-timeout-ms", "0", "--driver", GPOOL_FAKE_CUDA_PATH},
           {"--endpoint", "tcp://127.0.0.1:*", "--secret-key-file", keys.File("server"), "--owner-key",
            keys.owner().public_key, "--idle-timeout-ms", "1000", "--driver", "/nonexistent/libcuda.so.1"},
       }) {
    ServerProcess server;
    EXPECT_FALSE(server.Start(args, {}));
    const auto end = server.WaitExit(30);
    EXPECT_TRUE(end.exited);
    EXPECT_EQ(end.code, 2);
  }
}

}  // namespace
}  // namespace gpool::rgpu
