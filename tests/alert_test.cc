// Alerts end to end (issue 34): a 3-replica coordinator with short alert
// thresholds, a worker whose GPUs the fake NVML reports idle, and a webhook
// receiver on 127.0.0.1. A queue at its capability, a job pending past the
// queue-wait threshold and a task idling on its GPU each fire one alert; the
// leader is killed while they fire; once the causes are gone every alert
// resolves. Each alert fires once and resolves once in the committed event
// stream, whoever leads, and the receiver gets both notices under one key.
#include <chrono>
#include <map>
#include <set>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "client/client.h"
#include "protocol/event.h"
#include "protocol/messages_client.h"
#include "protocol/messages_nodes.h"
#include "protocol/model/queue_update.h"
#include "tests/local_cluster.h"
#include "tests/ready_cluster.h"
#include "tests/webhook_receiver.h"

namespace gpool::testing {
namespace {

using namespace std::chrono_literals;

std::vector<ClusterEvent> AllEvents(Client& client) {
  std::vector<ClusterEvent> events;
  ListEvents request;
  request.limit = 500;
  for (;;) {
    auto page = client.ListEvents(request);
    if (!page.ok() || page->events.empty()) return events;
    request.after_seq = page->events.back().seq;
    events.insert(events.end(), page->events.begin(), page->events.end());
  }
}

TEST(AlertTest, EachRuleFiresOnceAndResolvesAcrossALeaderKill) {
  WebhookReceiver receiver;
  TempDir config_dir;
  const std::string config = config_dir.Join("scheduler.conf");
  WriteFile(config, "[health.webhook.alerts]\nurl = " + receiver.url() + "\ninsecure = true" +
                        "\nkinds = alert-firing, alert-resolved\nbackoff_initial_ms = 50\nbackoff_max_ms = 200\n");
  LocalClusterOptions options;
  options.coordinators = 3;
  options.workers = 1;
  options.coordinator_flags = {"--heartbeat-ms", "200", "--node-timeout-ms", "3000", "--preempt-grace-ms", "1000",
                               "--scheduler-config", config, "--alert-check-ms", "200",
                               "--alert-queue-wait-ms", "1000", "--alert-quota-pct", "90",
                               "--alert-low-util-pct", "10", "--alert-low-util-ms", "1000"};
  // The fake NVML measures every GPU 3 % busy (a GPU it does not name it
  // cannot measure, and an unmeasured GPU never counts as idle).
  options.workers_probe_host = true;  // utilisation is sampled only for GPUs NVML discovered
  options.worker_flags[0] = {"--nvml-library", GPOOL_FAKE_NVML_LIB};
  options.worker_env[0] = {{"FAKE_NVML_UTILIZATION", "0:3:1024,1:3:1024,2:3:1024,3:3:1024,4:3:1024,5:3:1024,6:3:1024,7:3:1024"}};
  LocalCluster cluster(options);
  std::unique_ptr<Client> client;
  ASSERT_NO_FATAL_FAILURE(StartReadyCluster(cluster, client));

  UpdateQueue queue;
  queue.op = QueueOp::kCreate;
  queue.spec.name = "capped";
  queue.spec.capability = {{"gpu", 1}};
  ASSERT_TRUE(client->UpdateQueue(queue).ok());
  JobSpec runs = ShellJob("runs", 1, "sleep 300");
  runs.queue = "capped";
  auto running = client->Submit(runs, "");
  ASSERT_TRUE(running.ok()) << running.status().ToString();
  JobSpec waits = ShellJob("waits", 1, "true");
  waits.queue = "capped";  // the queue's one GPU is taken: it waits
  auto waiting = client->Submit(waits, "");
  ASSERT_TRUE(waiting.ok()) << waiting.status().ToString();

  const std::string quota_key = "quota/capped/gpu";
  const std::string wait_key = "queue-wait/job-" + std::to_string(waiting->job_id);
  const std::string idle_key = "low-utilisation/task-" + TaskId{JobId(running->job_id), 0, 0}.ToString();
  const std::set<std::string> keys = {quota_key, wait_key, idle_key};
  auto received = [&](const std::string& kind) {
    std::map<std::string, nlohmann::json> by_key;
    for (const auto& post : receiver.posts()) {
      if (post.is_object() && post.value("kind", "") == kind) by_key[post.value("dedupe_key", "")] = post;
    }
    return by_key;
  };
  std::map<std::string, nlohmann::json> fired;
  ASSERT_TRUE(WaitFor([&] {
    fired = received("alert-firing");
    for (const auto& key : keys) {
      if (fired.count(key) == 0) return false;
    }
    return true;
  }, 60s)) << "fired: " << nlohmann::json(fired).dump(1);
  EXPECT_EQ(fired[quota_key].value("severity", ""), "degraded") << "the queue holds all it may";
  EXPECT_EQ(fired[quota_key].value("reason", ""), "quota");
  EXPECT_EQ(fired[wait_key].value("reason", ""), "queue-wait");
  EXPECT_EQ(fired[wait_key].value("job", 0u), waiting->job_id);
  EXPECT_EQ(fired[idle_key].value("reason", ""), "low-utilisation");
  EXPECT_EQ(fired[idle_key].value("node", ""), cluster.NodeName(0));

  // A new leader re-evaluates the rules: what still fires stays one alert.
  int leader = -1;
  ASSERT_TRUE(WaitFor([&] { return (leader = LeaderIndex(*client)) >= 0; }, 20s));
  cluster.KillReplica(leader);
  ASSERT_TRUE(WaitFor([&] {
    const int now = LeaderIndex(*client);
    return now >= 0 && now != leader;
  }, 30s));

  // The causes go: the waiting job is cancelled, then the running one.
  ASSERT_TRUE(client->CancelJob(JobId(waiting->job_id), 0).ok());
  ASSERT_TRUE(client->CancelJob(JobId(running->job_id), 0).ok());
  std::map<std::string, nlohmann::json> resolved;
  ASSERT_TRUE(WaitFor([&] {
    resolved = received("alert-resolved");
    for (const auto& key : keys) {
      if (resolved.count(key) == 0) return false;
    }
    return true;
  }, 60s)) << "resolved: " << nlohmann::json(resolved).dump(1);

  // The committed stream: one firing and one resolution per alert, and none
  // other than these three (the rules see nothing else on this cluster).
  std::map<std::string, std::multiset<std::string>> stream;
  for (const ClusterEvent& event : AllEvents(*client)) {
    if (event.kind == "alert-firing" || event.kind == "alert-resolved") stream[event.dedupe_key].insert(event.kind);
  }
  EXPECT_EQ(stream.size(), keys.size());
  for (const auto& key : keys) {
    EXPECT_EQ(stream[key], (std::multiset<std::string>{"alert-firing", "alert-resolved"})) << key;
  }
  // An operator sees the same in `gpool events`.
  const CommandResult events = cluster.Cli({"events"});
  EXPECT_EQ(events.exit_code, 0) << events.err;
  EXPECT_NE(events.out.find("alert-resolved"), std::string::npos) << events.out;
}

}  // namespace
}  // namespace gpool::testing
