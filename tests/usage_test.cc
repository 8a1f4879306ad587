// Usage accounting end to end (issue 34): three coordinator replicas and two
// workers on 127.0.0.1 run a scripted workload of known durations; the
// leader is killed while the tasks run, and a worker is killed and restarted
// while its task runs. Every task leaves exactly one usage record, equal to
// its GPUs x its committed run time, the per-user and per-queue GPU-seconds
// are the script's within tolerance, and `gpool invoice` totals are the usage
// times the committed prices, to the micro-unit.
#include <chrono>
#include <ctime>
#include <map>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include "client/client.h"
#include "protocol/messages_admin.h"
#include "protocol/messages_client.h"
#include "protocol/messages_usage.h"
#include "protocol/model/queue_update.h"
#include "tests/local_cluster.h"

namespace gpool::testing {
namespace {

using namespace std::chrono_literals;

constexpr uint64_t kMmsPerSecond = 1'000'000;  // milli-GPU x ms in a GPU-second

LocalClusterOptions UsageCluster() {
  LocalClusterOptions options;
  options.coordinators = 3;
  options.workers = 2;
  options.gpus_per_worker = 4;
  // Users are named in the specs: --insecure takes them as given.
  options.secure = false;
  // As in replication_test.cc: elections after 1-2 s of silence, and a node
  // lease long enough for a worker restart on a slow box.
  options.coordinator_flags = {"--heartbeat-ms",          "200",   "--node-timeout-ms", "3000",
                               "--preempt-grace-ms",      "2000",  "--election-timeout-ms", "1000",
                               "--node-lease-ms",         "60000", "--node-lost-ms",    "90000",
                               "--usage-checkpoint-ms",   "500"};
  // Worker 0's task is followed across its worker's restart.
  options.worker_flags = {{0, {"--task-isolation", "off"}}};
  return options;
}

int64_t WallMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

class UsageTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cluster_.StartCoordinator();
    cluster_.StartWorkers();
    ClientOptions options;
    options.endpoints = cluster_.client_endpoint();
    options.timeout_ms = 1000;
    options.connect_timeout_ms = 200;
    options.retries = 40;  // rides out the election
    auto client = Client::Connect(options);
    ASSERT_TRUE(client.ok()) << client.status().ToString();
    client_ = std::move(client).value();
    ASSERT_TRUE(WaitFor([&] { return cluster_.AllNodesReady(); }, 30s)) << cluster_.Cli({"nodes"}).out;
    for (const char* queue : {"team-a", "team-b"}) {
      UpdateQueue create;
      create.op = QueueOp::kCreate;
      create.spec.name = queue;
      create.spec.parent = "root";
      auto made = client_->UpdateQueue(create);
      ASSERT_TRUE(made.ok()) << made.status().ToString();
    }
  }

  uint64_t Submit(const std::string& user, const std::string& queue, uint32_t gpus, const std::string& script,
                  std::map<std::string, std::string> selector = {}) {
    JobSpec spec = ShellJob(user + "-job", gpus, script);
    spec.user = user;
    spec.queue = queue;
    spec.restart.policy = "never";
    spec.node_selector = std::move(selector);
    auto submitted = client_->Submit(spec, "");
    EXPECT_TRUE(submitted.ok()) << submitted.status().ToString();
    return submitted.ok() ? submitted->job_id : 0;
  }

  // Its task's start is committed (a job is Running already while bound).
  bool WaitStarted(uint64_t job) {
    return WaitFor(
        [&] {
          auto detail = client_->GetJob(JobId(job));
          return detail.ok() && !detail->tasks.empty() && detail->tasks[0].state == "Running";
        },
        30s);
  }

  bool WaitState(uint64_t job, const std::string& state, std::chrono::milliseconds timeout = 60s) {
    return WaitFor(
        [&] {
          auto detail = client_->GetJob(JobId(job));
          return detail.ok() && detail->summary.state == state;
        },
        timeout);
  }

  std::string Describe(uint64_t job) {
    auto detail = client_->GetJob(JobId(job));
    if (!detail.ok()) return detail.status().ToString();
    std::string text = "job " + std::to_string(job) + " " + detail->summary.state;
    for (const auto& task : detail->tasks) {
      text += "; task " + task.state + " on " + task.node + " attempt " + std::to_string(task.attempt) + ": " +
              task.message;
    }
    return text + "\n";
  }

  int LeaderIndex() {
    auto status = client_->ClusterStatus();
    if (!status.ok() || status->role != "leader") return -1;
    return std::stoi(status->replica_id) - 1;
  }

  GetUsageReply Usage(const std::string& by) {
    GetUsage request{.from_ms = start_ms_ - 3'600'000, .to_ms = WallMs() + 3'600'000, .by = by};
    auto reply = client_->GetUsage(request);
    EXPECT_TRUE(reply.ok()) << reply.status().ToString();
    return reply.ok() ? *reply : GetUsageReply{};
  }

  // The committed run time of the job's only task, times its GPUs, in mms.
  uint64_t CommittedMms(uint64_t job, uint32_t gpus) {
    auto detail = client_->GetJob(JobId(job));
    EXPECT_TRUE(detail.ok());
    if (!detail.ok() || detail->tasks.empty()) return 0;
    const auto& task = detail->tasks[0];
    return uint64_t{gpus} * 1000 * static_cast<uint64_t>(task.finish_ms - task.start_ms);
  }

  LocalCluster cluster_{UsageCluster()};
  std::unique_ptr<Client> client_;
  int64_t start_ms_ = WallMs();
};

TEST_F(UsageTest, AScriptedWorkloadIsChargedOnceThroughALeaderKillAndAWorkerRestart) {
  // The workload: alice 2 GPUs x 4 s + 1 GPU x 2 s in team-a, bob 1 GPU x 3 s in team-b.
  const uint64_t a = Submit("alice", "team-a", 2, "sleep 4");
  const uint64_t b = Submit("bob", "team-b", 1, "sleep 3");
  const uint64_t c = Submit("alice", "team-a", 1, "sleep 2");
  for (uint64_t job : {a, b, c}) ASSERT_TRUE(WaitStarted(job)) << "job " << job;

  // The leader dies while they run; a new one finishes the accounting.
  const int leader = LeaderIndex();
  ASSERT_GE(leader, 0);
  cluster_.KillReplica(leader);
  ASSERT_TRUE(WaitFor(
      [&] {
        const int now = LeaderIndex();
        return now >= 0 && now != leader;
      },
      30s));
  for (uint64_t job : {a, b, c}) ASSERT_TRUE(WaitState(job, "Succeeded")) << "job " << job;
  cluster_.StartReplica(leader);

  // A task across its worker's restart (supervisors keep it running).
  uint64_t d = 0;
  uint64_t d_mms = 0;
  if (TaskCgroupsAvailable()) {
    const std::string release = cluster_.dir() + "/release";
    d = Submit("bob", "team-b", 1, "while [ ! -e " + release + " ]; do sleep 0.05; done",
               {{"gpool.io/node", cluster_.NodeName(0)}});
    ASSERT_TRUE(WaitStarted(d)) << Describe(d);
    cluster_.worker(0)->Kill();
    cluster_.StartWorker(0);
    ASSERT_TRUE(WaitFor([&] { return cluster_.AllNodesReady(); }, 30s));
    std::this_thread::sleep_for(1500ms);
    WriteFile(release, "");
    ASSERT_TRUE(WaitState(d, "Succeeded")) << Describe(d) << cluster_.Cli({"events"}).out;
    d_mms = CommittedMms(d, 1);
    EXPECT_GE(d_mms, 1500 * 1000u);
  }

  // One record per task, each exactly its GPUs x its committed run time.
  const GetUsageReply by_job = Usage("job");
  std::map<uint64_t, UsageRow> rows;
  for (const auto& row : by_job.rows) rows[row.job] = row;
  const std::map<uint64_t, uint32_t> gpus = {{a, 2}, {b, 1}, {c, 1}};
  EXPECT_EQ(rows.size(), d != 0 ? 4u : 3u);
  for (const auto& [job, n] : gpus) {
    ASSERT_EQ(rows.count(job), 1u) << "job " << job;
    EXPECT_EQ(rows[job].records, 1u) << "job " << job;
    EXPECT_EQ(rows[job].running, 0u);
    EXPECT_EQ(rows[job].gpu_mms, CommittedMms(job, n)) << "job " << job;
  }
  if (d != 0) {
    EXPECT_EQ(rows[d].records, 1u) << "the worker restart counted the task twice";
    EXPECT_EQ(rows[d].gpu_mms, d_mms);
  }

  // Per user and queue: the script's GPU-seconds, within process start-up.
  std::map<std::string, uint64_t> by_user, by_queue;
  for (const auto& row : Usage("user").rows) by_user[row.user] = row.gpu_mms;
  for (const auto& row : Usage("queue").rows) by_queue[row.queue] = row.gpu_mms;
  const uint64_t alice = by_user["alice"], bob = by_user["bob"] - d_mms;
  // The lower bounds allow 5 ms per task-GPU: the run time is the committed
  // exit stamp minus the started stamp, each a whole millisecond taken by the
  // worker around the process (the started stamp just after the spawn), so a
  // `sleep 3` can be charged 2,999 ms (seen once in a Debug run).
  constexpr uint64_t kStampSlackMms = 5 * 1000;
  EXPECT_GE(alice, 10 * kMmsPerSecond - 3 * kStampSlackMms);
  EXPECT_LE(alice, 13 * kMmsPerSecond);  // 3 task-GPUs, each at most a second over
  EXPECT_GE(bob, 3 * kMmsPerSecond - kStampSlackMms);
  EXPECT_LE(bob, 4 * kMmsPerSecond);
  EXPECT_EQ(by_queue["team-a"], by_user["alice"]);
  EXPECT_EQ(by_queue["team-b"], by_user["bob"]);

  // The invoice: 3.6 per GPU-hour is one micro-unit per GPU-millisecond x 1000.
  WriteFile(cluster_.dir() + "/prices.yaml", "currency: EUR\ngpu_hour:\n  default: 3.6\n");
  const CommandResult set = cluster_.Cli({"prices", "set", cluster_.dir() + "/prices.yaml"});
  ASSERT_EQ(set.exit_code, 0) << set.out << set.err;
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char month[8];
  std::strftime(month, sizeof(month), "%Y-%m", &utc);
  const CommandResult invoice = cluster_.Cli({"invoice", "--month", month, "--csv"});
  ASSERT_EQ(invoice.exit_code, 0) << invoice.out << invoice.err;
  uint64_t expected = 0;
  for (const auto& row : Usage("detail").rows) expected += (row.gpu_mms + 500) / 1000;
  const size_t total_at = invoice.out.find("\nTOTAL,");
  ASSERT_NE(total_at, std::string::npos) << invoice.out;
  std::stringstream line(invoice.out.substr(total_at + 1));
  std::string field;
  for (int i = 0; i < 17; ++i) std::getline(line, field, ',');
  EXPECT_EQ(field, std::to_string(expected)) << invoice.out;
}

}  // namespace
}  // namespace gpool::testing
