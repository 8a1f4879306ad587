// Tasks run as their owner and see only what is theirs (issue 31), end to
// end: a real coordinator and a real worker (run as root, isolation on by
// default) on 127.0.0.1. The worker's two simulated GPUs get device nodes
// this test makes with mknod (/dev/full's numbers for GPU 0, /dev/random's
// for GPU 1, given to the worker with --gpu-device-nodes), so a task can
// open its granted GPU's node and gets EPERM on the other one, even after
// widening its own CUDA_VISIBLE_DEVICES. A second job's task holds a secret
// in its environment and its directory; the probing task must reach
// neither, nor the worker's command line or a 0600 token file beside it.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "client/client.h"
#include "protocol/messages_client.h"
#include "tests/local_cluster.h"
#include "tests/ready_cluster.h"

namespace gpool::testing {
namespace {

using namespace std::chrono_literals;

bool Has(const std::string& log, const std::string& line) { return log.find(line + "\n") != std::string::npos; }

TEST(TaskIsolationEndToEndTest, ATaskRunsAsItsUserAndReachesOnlyItsOwn) {
  if (geteuid() != 0) GTEST_SKIP() << "the worker isolates tasks only as root";
  TempDir devices;
  ASSERT_EQ(mknod((devices.path() + "/gpu0").c_str(), S_IFCHR | 0666, makedev(1, 7)), 0);
  ASSERT_EQ(mknod((devices.path() + "/gpu1").c_str(), S_IFCHR | 0666, makedev(1, 8)), 0);
  const std::string token = devices.path() + "/token";
  std::ofstream(token) << "worker-secret\n";
  ASSERT_EQ(chmod(token.c_str(), 0600), 0);

  LocalClusterOptions options;
  options.workers = 1;
  options.gpus_per_worker = 2;
  options.worker_flags = {{0, {"--gpu-device-nodes", devices.path() + "/gpu%u"}}};
  LocalCluster cluster(options);
  std::unique_ptr<Client> client;
  ASSERT_NO_FATAL_FAILURE(StartReadyCluster(cluster, client));

  // A job the coordinator refuses: it tries to take the worker's place.
  JobSpec widened = ShellJob("widened", 1, "true");
  widened.tasks[0].env["LD_PRELOAD"] = "/tmp/evil.so";
  auto refused = client->Submit(widened, "");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("LD_PRELOAD"), std::string::npos) << refused.status().message();

  JobSpec holder = ShellJob("holder", 1, "echo mine > secret.txt && echo ready && exec sleep 300");
  holder.tasks[0].env["HF_TOKEN"] = "holders-hf-token";
  auto held = client->Submit(holder, "");
  ASSERT_TRUE(held.ok()) << held.status().ToString();
  const std::string tasks = cluster.WorkerDataDir(0) + "/tasks";
  const std::string holder_id = std::to_string(held->job_id) + ".0.0";
  ASSERT_TRUE(WaitFor([&] { return Has(ReadFile(tasks + "/" + holder_id + ".log"), "ready"); }, 20s))
      << cluster.worker(0)->Log();

  const std::string worker_pid = std::to_string(cluster.worker(0)->pid());
  const std::string probe =
      "echo uid=$(id -u); echo ppid=$PPID;"
      "[ -r /proc/" + worker_pid + "/cmdline ] && echo worker-cmdline=read || echo worker-cmdline=unreachable;"
      "grep -l holders-hf-token /proc/[0-9]*/environ >/dev/null 2>&1 && echo other-environ=read || "
      "echo other-environ=unreachable;"
      "cat " + tasks + "/" + holder_id + ".state/bind >/dev/null 2>&1 && echo other-bind=read || "
      "echo other-bind=unreachable;"
      "ls " + tasks + " >/dev/null 2>&1 && echo tasks-dir=listed || echo tasks-dir=unlistable;"
      "cat " + token + " >/dev/null 2>&1 && echo token=read || echo token=unreachable;"
      "mine=$CUDA_VISIBLE_DEVICES; other=$((1 - mine)); export CUDA_VISIBLE_DEVICES=0,1;"
      "dd if=" + devices.path() + "/gpu$mine of=/dev/null bs=1 count=1 2>/dev/null && echo granted=open;"
      "dd if=" + devices.path() + "/gpu$other of=/dev/null bs=1 count=1 2>&1 | grep -q 'Operation not permitted' && "
      "echo other-gpu=EPERM;"
      "echo probe-done";
  auto probed = client->Submit(ShellJob("probe", 1, probe), "");
  ASSERT_TRUE(probed.ok()) << probed.status().ToString();
  const std::string log_path = tasks + "/" + std::to_string(probed->job_id) + ".0.0.log";
  ASSERT_TRUE(WaitFor([&] { return Has(ReadFile(log_path), "probe-done"); }, 30s)) << cluster.worker(0)->Log();
  const std::string log = ReadFile(log_path);
  EXPECT_TRUE(Has(log, "uid=65534")) << "no mapping for the owner: --task-user's default, nobody\n" << log;
  EXPECT_TRUE(Has(log, "ppid=1")) << log;
  EXPECT_TRUE(Has(log, "worker-cmdline=unreachable")) << log;
  EXPECT_TRUE(Has(log, "other-environ=unreachable")) << log;
  // The other job's env on disk (its bind) is root's. Its directory and log
  // are its owner's uid: both jobs here have no owner mapping (the state has
  // no user records yet) and so share nobody; that tasks of different
  // owners cannot read each other's files is tested with two run_as
  // identities in worker/runner/isolation_test.cc.
  EXPECT_TRUE(Has(log, "other-bind=unreachable")) << log;
  EXPECT_TRUE(Has(log, "tasks-dir=unlistable")) << log;
  EXPECT_TRUE(Has(log, "token=unreachable")) << log;
  EXPECT_TRUE(Has(log, "granted=open")) << log;
  EXPECT_TRUE(Has(log, "other-gpu=EPERM")) << log;
  struct stat st {};
  ASSERT_EQ(stat(log_path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  EXPECT_EQ(st.st_uid, 65534u);

  // `gpool logs` (the worker reads the log as root) still works.
  auto logs = cluster.Cli({"logs", std::to_string(probed->job_id) + ".0"});
  EXPECT_NE(logs.out.find("probe-done"), std::string::npos) << logs.out << logs.err;
  (void)client->CancelJob(JobId(held->job_id), 0);
}

// Two owners: here two workers on this machine, each running its tasks as
// a different --task-user (40001, 40002), stand in for two owners' uid
// mappings (user records are not in the state yet). A task of one cannot
// read the other's directory or log; its own it can.
TEST(TaskIsolationEndToEndTest, ATaskCannotReadAnotherOwnersDirectoryOrLog) {
  if (geteuid() != 0) GTEST_SKIP() << "the worker isolates tasks only as root";
  LocalClusterOptions options;
  options.workers = 2;
  options.gpus_per_worker = 1;
  options.worker_flags = {{0, {"--task-user", "40001", "--gpu-device-nodes", ""}},
                          {1, {"--task-user", "40002", "--gpu-device-nodes", ""}}};
  LocalCluster cluster(options);
  std::unique_ptr<Client> client;
  ASSERT_NO_FATAL_FAILURE(StartReadyCluster(cluster, client));

  auto held = client->Submit(ShellJob("holder", 1, "echo mine > secret.txt && echo ready && exec sleep 300"), "");
  ASSERT_TRUE(held.ok()) << held.status().ToString();
  std::string holder_node;
  ASSERT_TRUE(WaitFor(
      [&] {
        auto detail = client->GetJob(JobId(held->job_id));
        if (!detail.ok() || detail->tasks.empty() || detail->tasks[0].state != "Running") return false;
        holder_node = detail->tasks[0].node;
        return true;
      },
      20s));
  const int holder_worker = holder_node == cluster.NodeName(0) ? 0 : 1;
  const std::string holder = cluster.WorkerDataDir(holder_worker) + "/tasks/" + std::to_string(held->job_id) + ".0.0";
  ASSERT_TRUE(WaitFor([&] { return Has(ReadFile(holder + ".log"), "ready"); }, 20s));

  // The whole node's GPU is held: the probe runs on the other worker, as the other user.
  const std::string probe = "echo uid=$(id -u);"
                            "cat " + holder + ".work/secret.txt >/dev/null 2>&1 && echo other-dir=read || "
                            "echo other-dir=unreachable;"
                            "cat " + holder + ".log >/dev/null 2>&1 && echo other-log=read || echo other-log=unreachable;"
                            "echo own > own.txt && cat own.txt && echo probe-done";
  auto probed = client->Submit(ShellJob("probe", 1, probe), "");
  ASSERT_TRUE(probed.ok()) << probed.status().ToString();
  const int probe_worker = 1 - holder_worker;
  const std::string log_path =
      cluster.WorkerDataDir(probe_worker) + "/tasks/" + std::to_string(probed->job_id) + ".0.0.log";
  ASSERT_TRUE(WaitFor([&] { return Has(ReadFile(log_path), "probe-done"); }, 30s))
      << cluster.worker(probe_worker)->Log();
  const std::string log = ReadFile(log_path);
  EXPECT_TRUE(Has(log, "uid=" + std::string(probe_worker == 0 ? "40001" : "40002"))) << log;
  EXPECT_TRUE(Has(log, "other-dir=unreachable")) << log;
  EXPECT_TRUE(Has(log, "other-log=unreachable")) << log;
  EXPECT_TRUE(Has(log, "own")) << "its own directory is writable\n" << log;
  (void)client->CancelJob(JobId(held->job_id), 0);
}

}  // namespace
}  // namespace gpool::testing
