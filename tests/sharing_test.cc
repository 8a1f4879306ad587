// Device sharing on a real cluster: two tasks share one simulated GPU at the
// same time, each told its memory and compute limits in the environment a
// CUDA interception layer (HAMi-core) reads, while a whole-GPU job waits
// with a reason; a dynamic-MIG GPU gets the smallest instance that holds a
// request; bad share requests are refused with typed errors.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include "client/client.h"
#include "protocol/messages_client.h"
#include "protocol/model/task_report.h"
#include "tests/local_cluster.h"
#include "tests/ready_cluster.h"

namespace gpool::testing {
namespace {

using namespace std::chrono_literals;

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

bool Says(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

class SharingTest : public ::testing::Test {
 protected:
  void Start(LocalClusterOptions options) {
    cluster_ = std::make_unique<LocalCluster>(std::move(options));
    ASSERT_NO_FATAL_FAILURE(StartReadyCluster(*cluster_, client_));
  }

  uint64_t Submit(JobSpec spec) {
    auto reply = client_->Submit(spec, "");
    EXPECT_TRUE(reply.ok()) << spec.name << ": " << reply.status().ToString();
    return reply.ok() ? reply->job_id : 0;
  }

  std::string StateOf(uint64_t job) {
    auto reply = client_->GetJob(JobId(job));
    return reply.ok() ? reply->summary.state : reply.status().ToString();
  }

  std::unique_ptr<LocalCluster> cluster_;
  std::unique_ptr<Client> client_;
};

TEST_F(SharingTest, TwoSharesRunTogetherOnOneGpuWithTheirLimits) {
  LocalClusterOptions options;
  options.workers = 1;
  options.gpus_per_worker = 1;
  ASSERT_NO_FATAL_FAILURE(Start(options));
  const std::string dir = cluster_->dir();
  // Each task records its environment, then holds its share until the test
  // releases it: both env files existing means both ran on the one GPU at once.
  auto share_job = [&](const std::string& me) {
    JobSpec spec = ShellJob(me, 1,
                            "env | grep -E '^(CUDA_VISIBLE_DEVICES|CUDA_DEVICE_MEMORY_LIMIT_0|CUDA_DEVICE_SM_LIMIT|"
                            "GPU_CORE_UTILIZATION_POLICY|GPOOL_SHARING_QOS|GPOOL_GPU_MEMORY_MIB)=' | sort > " +
                                dir + "/" + me + ".env; i=0; while [ ! -e " + dir + "/release ] && [ $i -lt 300 ]; do "
                                "sleep 0.1; i=$((i+1)); done; [ -e " + dir + "/release ]");
    spec.tasks[0].resources.gpu_memory_mib = 30 * 1024;
    spec.tasks[0].resources.gpu_compute_pct = 40;
    spec.tasks[0].resources.sharing_qos = "fixed-share";
    return spec;
  };
  const uint64_t a = Submit(share_job("share-a"));
  const uint64_t b = Submit(share_job("share-b"));
  ASSERT_TRUE(WaitFor([&] { return std::filesystem::exists(dir + "/share-a.env") &&
                                   std::filesystem::exists(dir + "/share-b.env"); }, 20s))
      << cluster_->Cli({"job", std::to_string(a)}).out << cluster_->Cli({"job", std::to_string(b)}).out;

  // While both hold the GPU a whole-GPU job waits with a reason, and the
  // node shows the two shares.
  const uint64_t whole = Submit(ShellJob("whole", 1, "true"));
  EXPECT_TRUE(WaitFor([&] { return Says(cluster_->Cli({"job", std::to_string(whole)}).out, "insufficient GPUs"); },
                      10s))
      << cluster_->Cli({"job", std::to_string(whole)}).out;
  const std::string devices = cluster_->Cli({"nodes", "--devices"}).out;
  EXPECT_TRUE(Says(devices, "2 shares 60/80 GiB 80% fixed-share")) << devices;
  std::ofstream(dir + "/release").put('\n');
  ASSERT_TRUE(WaitFor([&] { return StateOf(a) == "Succeeded" && StateOf(b) == "Succeeded"; }, 30s))
      << StateOf(a) << " " << StateOf(b);
  for (const char* name : {"share-a", "share-b"}) {
    const std::string env = ReadAll(dir + "/" + name + ".env");
    EXPECT_TRUE(Says(env, "CUDA_VISIBLE_DEVICES=0\n")) << env;
    EXPECT_TRUE(Says(env, "CUDA_DEVICE_MEMORY_LIMIT_0=30720m\n")) << env;
    EXPECT_TRUE(Says(env, "CUDA_DEVICE_SM_LIMIT=40\n")) << env;
    EXPECT_TRUE(Says(env, "GPU_CORE_UTILIZATION_POLICY=force\n")) << env;
    EXPECT_TRUE(Says(env, "GPOOL_SHARING_QOS=fixed-share\n")) << env;
  }
  // Once the shares are gone the whole-GPU job runs.
  EXPECT_TRUE(WaitFor([&] { return StateOf(whole) == "Succeeded"; }, 30s)) << StateOf(whole);
}

TEST_F(SharingTest, AShareLoadsTheInterposerFromAPrivateDirectoryThatGoesWithTheTask) {
  // A dummy file stands in for libgpool-cuda.so.1 (worker/cuda/ builds the
  // real one): the task only reads its link, nothing loads it.
  char pattern[] = "/tmp/gpool-interposer-XXXXXX";
  ASSERT_NE(mkdtemp(pattern), nullptr);
  const std::string lib_dir = pattern;
  std::filesystem::permissions(lib_dir, std::filesystem::perms::owner_all | std::filesystem::perms::group_exec |
                                            std::filesystem::perms::others_exec);  // tasks reach their ledger
  const std::string interposer = lib_dir + "/libgpool-cuda.so.1";
  // The worker makes its ledger directory itself (0711: tasks cannot plant a ledger there).
  const std::string shm = lib_dir + "/ledgers";
  std::ofstream(interposer) << "not a library";
  LocalClusterOptions options;
  options.workers = 1;
  options.gpus_per_worker = 1;
  options.worker_flags[0] = {"--cuda-interposer", interposer, "--cuda-ledger-dir", shm};
  ASSERT_NO_FATAL_FAILURE(Start(options));
  const std::string out = cluster_->dir() + "/interposed.out";
  // The task finds its ledger made for it (its own, 0600), writes it as the
  // interposer would, and says what it saw.
  JobSpec spec = ShellJob("interposed", 1,
                          "d=${LD_LIBRARY_PATH%%:*}; l=$GPOOL_CUDA_LEDGER; { echo \"path=$LD_LIBRARY_PATH\"; "
                          "echo \"dir=$d\"; echo \"link=$(readlink \"$d/libcuda.so.1\")\"; "
                          "echo \"ledger=$l\"; echo \"ledger_mode=$(stat -c %a \"$l\")\"; "
                          "[ \"$(stat -c %u \"$l\")\" = \"$(id -u)\" ] && echo ledger_owner=task; "
                          "echo \"dir_mode=$(stat -c %a \"${l%/*}\")\"; } > " + out + "; echo x >> \"$l\"");
  spec.tasks[0].resources.gpu_memory_mib = 10 * 1024;
  const uint64_t job = Submit(spec);
  ASSERT_TRUE(WaitFor([&] { return StateOf(job) == "Succeeded"; }, 30s)) << StateOf(job);
  const std::string seen = ReadAll(out);
  EXPECT_TRUE(Says(seen, ".cuda\n")) << "the private directory first (a job cannot set its own): " << seen;
  EXPECT_TRUE(Says(seen, "link=" + interposer + "\n")) << seen;
  EXPECT_TRUE(Says(seen, "ledger=" + shm + "/gpool-cuda-" + std::to_string(job) + "-0-0\n")) << seen;
  EXPECT_TRUE(Says(seen, "ledger_mode=600\n")) << seen;
  EXPECT_TRUE(Says(seen, "ledger_owner=task\n")) << seen;
  EXPECT_TRUE(Says(seen, "dir_mode=711\n")) << seen;
  const size_t at = seen.find("dir=");
  ASSERT_NE(at, std::string::npos) << seen;
  const std::string private_dir = seen.substr(at + 4, seen.find('\n', at) - at - 4);
  EXPECT_TRUE(Says(seen, "path=" + private_dir + "\n")) << seen;
  EXPECT_EQ(private_dir, cluster_->WorkerDataDir(0) + "/tasks/" + std::to_string(job) + ".0.0.cuda") << seen;
  // The worker cleans up once the task has ended; the job's state can get
  // ahead of it by a loop turn.
  EXPECT_TRUE(WaitFor([&] { return !std::filesystem::exists(private_dir); }, 5s)) << private_dir;
  EXPECT_TRUE(WaitFor([&] { return std::filesystem::is_empty(shm); }, 5s)) << "the ledger is gone";
  EXPECT_TRUE(std::filesystem::exists(interposer)) << "the link goes, not the library";
  std::filesystem::remove_all(lib_dir);
}

// Limits that hold: with gpool's CUDA interposer in front of the (fake)
// driver, two shares of one GPU each get exactly their own memory, the next
// byte is CUDA_ERROR_OUT_OF_MEMORY (2), and cuMemGetInfo reports the share.
// A driver-API program (gpool-cuda-check) is the task, run as the job owner.
TEST_F(SharingTest, TwoSharesOnOneGpuAreEachRefusedPastTheirOwnLimitByTheInterposer) {
  LocalClusterOptions options;
  options.workers = 1;
  options.gpus_per_worker = 1;
  // The fake driver holds no memory for contexts: neither may the share.
  options.worker_flags[0] = {"--cuda-interposer", GPOOL_CUDA_INTERPOSER_LIB, "--cuda-real-driver",
                             GPOOL_FAKE_CUDA_LIB, "--cuda-object-costs", "none"};
  ASSERT_NO_FATAL_FAILURE(Start(options));
  const std::string dir = cluster_->dir();
  auto share_job = [&](const std::string& me, const std::string& other, uint32_t mib) {
    const std::string share = std::to_string(mib) + "M";
    // Both wait until both run, so the two shares hold the GPU at once; then
    // each fills its own share, is refused one byte more, and sees its share.
    JobSpec spec = ShellJob(me, 1,
                            "touch " + dir + "/" + me + ".started; i=0; while [ ! -e " + dir + "/" + other +
                                ".started ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done; " +
                                GPOOL_CUDA_CHECK_BIN + " alloc v2 " + share + " 0 alloc v2 1 2 meminfo 0 " + share +
                                " totalmem " + share + " > " + dir + "/" + me + ".out 2>&1");
    spec.tasks[0].resources.gpu_memory_mib = mib;
    spec.tasks[0].resources.gpu_compute_pct = 20;
    return spec;
  };
  const uint64_t a = Submit(share_job("small", "large", 64));
  const uint64_t b = Submit(share_job("large", "small", 192));
  ASSERT_TRUE(WaitFor([&] { return StateOf(a) == "Succeeded" && StateOf(b) == "Succeeded"; }, 60s))
      << StateOf(a) << " " << StateOf(b) << "\n"
      << ReadAll(dir + "/small.out") << ReadAll(dir + "/large.out");
  const std::string small = ReadAll(dir + "/small.out");
  const std::string large = ReadAll(dir + "/large.out");
  EXPECT_TRUE(Says(small, "bytes=67108864 result=0")) << small;
  EXPECT_TRUE(Says(small, "bytes=1 result=2")) << small;
  EXPECT_TRUE(Says(small, "meminfo result=0 free=0 total=67108864")) << small;
  EXPECT_TRUE(Says(large, "bytes=201326592 result=0")) << large;
  EXPECT_TRUE(Says(large, "bytes=1 result=2")) << large;
  EXPECT_TRUE(Says(large, "meminfo result=0 free=0 total=201326592")) << large;
}

TEST_F(SharingTest, DynamicMigGivesTheSmallestInstanceThatHoldsTheRequest) {
  LocalClusterOptions options;
  options.workers = 1;
  options.gpus_per_worker = 1;
  options.gpu_mig_mode = "dynamic";
  ASSERT_NO_FATAL_FAILURE(Start(options));
  const std::string out = cluster_->dir() + "/mig.env";
  const auto submitted = cluster_->Cli({"submit", "--mig", "auto", "--gpu-memory", "9Gi", "--wait", "--timeout", "30s",
                                        "--", "sh", "-c", "echo $CUDA_VISIBLE_DEVICES $GPOOL_MIG_PROFILES > " + out});
  ASSERT_EQ(submitted.exit_code, 0) << submitted.out << submitted.err;
  const std::string env = ReadAll(out);
  EXPECT_TRUE(Says(env, "MIG-GPU-node-0-0-1g.10gb-0 1g.10gb")) << env;
}

// Also a share on a node that cannot hold it (issue 50): its interposer is
// missing, so the task fails to start and the job says why.
TEST_F(SharingTest, BadShareRequestsAreRefusedWithTypedErrors) {
  LocalClusterOptions options;
  options.workers = 1;
  options.gpus_per_worker = 1;
  options.worker_flags[0] = {"--cuda-interposer", "/nonexistent/gpool/libgpool-cuda.so.1"};
  ASSERT_NO_FATAL_FAILURE(Start(options));
  JobSpec compute = ShellJob("bad", 1, "true");
  compute.tasks[0].resources.gpu_compute_pct = 150;
  auto reply = client_->Submit(compute, "");
  ASSERT_FALSE(reply.ok());
  EXPECT_EQ(reply.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(Says(reply.status().message(), "gpu_compute_pct: 150 is not 1 to 100")) << reply.status().ToString();
  const auto bad_mig = cluster_->Cli({"submit", "--mig", "huge", "--", "true"});
  EXPECT_NE(bad_mig.exit_code, 0);
  EXPECT_TRUE(Says(bad_mig.err, "is not a MIG profile")) << bad_mig.err;
  EXPECT_TRUE(Says(cluster_->Cli({"jobs"}).out, "No jobs")) << cluster_->Cli({"jobs"}).out;

  JobSpec share = ShellJob("unheld", 1, "true");
  share.tasks[0].resources.gpu_memory_mib = 1024;
  const uint64_t refused = Submit(share);
  ASSERT_TRUE(WaitFor([&] { return StateOf(refused) == "Failed"; }, 30s)) << StateOf(refused);
  // `gpool job` shows the reason (its cell cut to the table's width), the
  // job's record says what is missing.
  const CommandResult status = cluster_->Cli({"job", std::to_string(refused)});
  EXPECT_TRUE(Says(status.out, kUnenforceableShareReason)) << status.out << status.err;
  auto detail = client_->GetJob(JobId(refused));
  ASSERT_TRUE(detail.ok()) << detail.status().ToString();
  ASSERT_EQ(detail->tasks.size(), 1u);
  EXPECT_TRUE(RefusedUnenforceableShare(detail->tasks[0].message)) << detail->tasks[0].message;
  EXPECT_TRUE(Says(detail->tasks[0].message, "/nonexistent/gpool/libgpool-cuda.so.1")) << detail->tasks[0].message;
  JobSpec whole = ShellJob("whole", 1, "true");
  const uint64_t ran = Submit(whole);
  EXPECT_TRUE(WaitFor([&] { return StateOf(ran) == "Succeeded"; }, 30s)) << "a whole GPU needs no interposer: "
                                                                        << StateOf(ran);
}

}  // namespace
}  // namespace gpool::testing
