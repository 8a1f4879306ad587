// MPI without SSH (issue 30): a real coordinator and two real workers on
// 127.0.0.1 run a gang of four tasks (two per worker, simulated GPUs); task 0
// runs `mpirun -np 4`, whose remote agent is `gpool exec-rsh` (gpool-rsh):
// each rank must run inside a sibling task, found by its stable name in the
// job's hostfile, with no sshd anywhere. Also `gpool exec` itself: output,
// exit code, the task's env and the job's hosts file.
#include <gtest/gtest.h>

#include <unistd.h>

#include <set>

#include "client/client.h"
#include "protocol/messages_client.h"
#include "tests/local_cluster.h"

namespace gpool::testing {
namespace {

using namespace std::chrono_literals;

bool MpirunInstalled() { return RunCommand({"sh", "-c", "command -v mpirun"}).exit_code == 0; }

LocalClusterOptions MpiClusterOptions() {
  LocalClusterOptions options;
  options.workers = 2;
  options.gpus_per_worker = 2;
  // The workers give gang tasks the CLI from this build tree as gpool-rsh.
  options.worker_flags = {{0, {"--cli", GPOOL_CLI_BIN}}, {1, {"--cli", GPOOL_CLI_BIN}}};
  // mpirun's remote agent (gpool exec-rsh) runs inside tasks and reaches the
  // secured client port with its own task's exec key (GPOOL_EXEC_TOKEN, a
  // CURVE secret key derived for that task, issue 48, and
  // GPOOL_COORDINATOR_PUBLIC_KEY, both set by gpool): task 0's opens its
  // siblings while it runs.
  return options;
}

// Task 0 runs mpirun over the job's hostfile (GPOOL_HOSTFILE: the four
// tasks by stable name); each rank prints its rank and the task it runs in.
// The others wait to be exec'd into. Running as root needs Open MPI's
// consent, given here only (tests and examples, never forced on users).
constexpr char kMpiScript[] =
    "if [ \"$GPOOL_TASK_INDEX\" = 0 ]; then "
    "  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; "
    "  echo hostfile:; cat \"$GPOOL_HOSTFILE\"; "
    "  exec mpirun -np 4 --mca btl self,tcp sh -c 'echo \"rank=$OMPI_COMM_WORLD_RANK task=$GPOOL_TASK_NAME\"'; "
    "else exec sleep 300; fi";

class MpiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!MpirunInstalled()) GTEST_SKIP() << "mpirun is not installed (apt-get install openmpi-bin); skipping MPI";
    cluster_ = std::make_unique<LocalCluster>(MpiClusterOptions());
    cluster_->StartCoordinator();
    cluster_->StartWorkers();
    ASSERT_TRUE(WaitFor([&] { return cluster_->AllNodesReady(); }, 20s)) << cluster_->Cli({"nodes"}).out;
    ClientOptions options;
    options.endpoints = cluster_->client_endpoint();
    cluster_->SecureClient(options);
    options.timeout_ms = 3000;
    auto client = Client::Connect(options);
    ASSERT_TRUE(client.ok()) << client.status().ToString();
    client_ = std::move(client).value();
  }

  std::string WorkerLogs() {
    auto tail = [](const std::string& log) { return log.size() > 6000 ? log.substr(log.size() - 6000) : log; };
    return tail(cluster_->worker(0)->Log()) + "\n---\n" + tail(cluster_->worker(1)->Log());
  }

  std::unique_ptr<LocalCluster> cluster_;
  std::unique_ptr<Client> client_;
};

TEST_F(MpiTest, MpirunInTaskZeroStartsRanksInSiblingTasksThroughGpoolExec) {
  // mpirun and the MPI daemons' agents run in task 0's cgroup: a core and
  // 1 GiB each, as the example asks, rather than ShellJob's 0.1 CPU and
  // 64 MiB (under a sanitizer build the agents alone outgrow those).
  JobSpec spec = ShellJob("mpi", 1, kMpiScript, 4);
  spec.tasks[0].resources.cpu_milli = 1000;
  spec.tasks[0].resources.memory_mib = 1024;
  auto submitted = client_->Submit(spec, "");
  ASSERT_TRUE(submitted.ok()) << submitted.status().ToString();
  const uint64_t job = submitted->job_id;
  const std::string id = std::to_string(job);

  // Task 0 ends once every rank has run; the others keep waiting.
  Result<GetJobReply> got = Status::NotFound("never fetched");
  ASSERT_TRUE(WaitFor(
      [&] {
        got = client_->GetJob(JobId(job));
        return got.ok() && got->tasks.size() == 4 && got->tasks[0].state != "Pending" &&
               got->tasks[0].state != "Bound" && got->tasks[0].state != "Running";
      },
      15s))
      << cluster_->Cli({"job", id}).out << cluster_->Cli({"logs", id + ".0"}).out << WorkerLogs();
  auto log = client_->GetTaskLog(JobId(job), 0, 64 * 1024);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  EXPECT_EQ(got->tasks[0].state, "Succeeded") << log->data << WorkerLogs();
  // The hostfile lists the tasks by stable name, one slot each (one GPU).
  for (int i = 0; i < 4; ++i) {
    EXPECT_NE(log->data.find("mpi-main-" + std::to_string(i) + " slots=1\n"), std::string::npos) << log->data;
  }
  // Rank i ran in task i: mpirun fills the hostfile's slots in order, and
  // each rank's GPOOL_TASK_NAME is the one of the task its daemon was exec'd in.
  std::set<std::string> ranks;
  for (int i = 0; i < 4; ++i) {
    const std::string line = "rank=" + std::to_string(i) + " task=mpi-main-" + std::to_string(i) + "\n";
    EXPECT_NE(log->data.find(line), std::string::npos) << "missing '" << line << "' in\n" << log->data;
  }
  for (size_t i = 1; i < 4; ++i) EXPECT_EQ(got->tasks[i].state, "Running");

  // gpool exec into a sibling by name: its env, the job's hosts file, and
  // the command's exit code as the CLI's.
  CommandResult exec = cluster_->Cli(
      {"exec", "mpi-main-2", "--", "sh", "-c",
       "echo name=$GPOOL_TASK_NAME gpus=$CUDA_VISIBLE_DEVICES; grep -c mpi-main- \"$GPOOL_HOSTS_FILE\"; "
       "echo oops >&2; exit 3"});
  EXPECT_EQ(exec.exit_code, 3) << exec.out << exec.err << WorkerLogs();
  EXPECT_NE(exec.out.find("name=mpi-main-2 gpus="), std::string::npos) << exec.out << exec.err;
  EXPECT_NE(exec.out.find("\n4\n"), std::string::npos) << "the hosts file names all four tasks: " << exec.out;
  EXPECT_NE(exec.err.find("oops"), std::string::npos) << exec.err;
  // JOB.INDEX works too; a task that is not running is a typed error.
  CommandResult by_index = cluster_->Cli({"exec", id + ".1", "--", "true"});
  EXPECT_EQ(by_index.exit_code, 0) << by_index.err;
  CommandResult ended = cluster_->Cli({"exec", id + ".0", "--", "true"});
  EXPECT_EQ(ended.exit_code, 5) << ended.err;
  EXPECT_NE(ended.err.find("FailedPrecondition"), std::string::npos) << ended.err;
  CommandResult unknown = cluster_->Cli({"exec", "nope-main-0", "--", "true"});
  EXPECT_EQ(unknown.exit_code, 3) << unknown.err;

  ASSERT_EQ(cluster_->Cli({"cancel", id, "--grace", "1"}).exit_code, 0);
}

// The example in client/examples/mpi.yaml runs as its comments say: every
// rank's line in task 0's log, and the whole job Succeeded once task 0 has
// told its siblings (through gpool-rsh) that the run is over.
TEST_F(MpiTest, TheMpiExampleJobSucceeds) {
  CommandResult submitted = cluster_->Cli({"submit", "--json", std::string(GPOOL_CLIENT_EXAMPLES_DIR) + "/mpi.yaml"});
  ASSERT_EQ(submitted.exit_code, 0) << submitted.err;
  const size_t digits = submitted.out.find_first_of("0123456789");
  ASSERT_NE(digits, std::string::npos) << submitted.out;
  const std::string id = submitted.out.substr(digits, submitted.out.find_first_not_of("0123456789", digits) - digits);
  CommandResult waited = cluster_->Cli({"wait", id, "--timeout", "20"});
  CommandResult log = cluster_->Cli({"logs", id + ".0"});
  EXPECT_EQ(waited.exit_code, 0) << waited.out << waited.err << log.out << WorkerLogs();
  for (int i = 0; i < 4; ++i) {
    const std::string line = "rank " + std::to_string(i) + " of 4 in mpi-worker-" + std::to_string(i) + ", GPUs ";
    EXPECT_NE(log.out.find(line), std::string::npos) << "missing '" << line << "' in\n" << log.out;
  }
}

}  // namespace
}  // namespace gpool::testing
