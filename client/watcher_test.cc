// Watcher (watcher.h) against a scripted coordinator: it returns the first
// reply, then each push in order; it re-opens the watch from the last
// position it returned when pushes skip a seq, when a renewal says the watch
// is unknown, or when the connection fails; and it drops a state it already
// returned.
#include "client/watcher.h"

#include <deque>

#include <gtest/gtest.h>

#include "client/testing/fake_client.h"
#include "protocol/messages_client.h"
#include "protocol/messages_watch.h"

namespace gpool {
namespace {

using namespace std::chrono_literals;

JobSummary Job(const std::string& state, uint32_t running = 0) {
  JobSummary job;
  job.job_id = 7;
  job.name = "train";
  job.state = state;
  job.tasks_running = running;
  return job;
}

class ScriptedClient : public FakeClient {
 public:
  ScriptedClient() : FakeClient(std::make_shared<FakeCluster>()) {}
  Result<WatchReply> Watch(const gpool::Watch& request) override {
    watched_after.push_back(request.after);
    if (replies.empty()) return Status::Internal("no reply scripted");
    WatchReply reply = replies.front();
    replies.pop_front();
    return reply;
  }
  Result<WatchRenewReply> WatchRenew(const gpool::WatchRenew& request) override {
    ++renewals;
    WatchRenewReply reply;
    if (forget_on_renew) reply.unknown = request.watch_ids;
    return reply;
  }
  Status Unwatch(uint64_t) override { return Status::Ok(); }
  Result<std::optional<WatchUpdate>> NextPush(int) override {
    if (pushes.empty()) return std::optional<WatchUpdate>();
    Result<std::optional<WatchUpdate>> next = pushes.front();
    pushes.pop_front();
    return next;
  }

  std::deque<WatchReply> replies;
  std::deque<Result<std::optional<WatchUpdate>>> pushes;
  std::vector<uint64_t> watched_after;
  int renewals = 0;
  bool forget_on_renew = false;
};

WatchReply Reply(uint64_t id, uint64_t position, bool reset, std::vector<JobSummary> jobs) {
  WatchReply reply;
  reply.watch_id = id;
  reply.position = position;
  reply.reset = reset;
  reply.items.jobs = std::move(jobs);
  return reply;
}

Result<std::optional<WatchUpdate>> Push(uint64_t id, uint64_t seq, uint64_t position, JobSummary job) {
  WatchUpdate update;
  update.watch_id = id;
  update.seq = seq;
  update.position = position;
  update.items.jobs.push_back(std::move(job));
  return std::optional<WatchUpdate>(std::move(update));
}

std::string StateOf(const Result<std::optional<WatchBatch>>& batch) {
  if (!batch.ok() || !batch->has_value() || (*batch)->items.jobs.empty()) return "-";
  return (*batch)->items.jobs.back().state;
}

TEST(WatcherTest, ReopensFromItsPositionWhenPushesAreLostAndDropsRepeats) {
  ScriptedClient client;
  client.replies.push_back(Reply(1, 10, true, {Job("Pending")}));
  client.pushes.push_back(Push(1, 1, 12, Job("Running", 1)));
  client.pushes.push_back(Push(1, 3, 15, Job("Succeeded")));  // seq 2 was lost
  // The re-opened watch replays from 12: the state it already returned, then the end.
  client.replies.push_back(Reply(2, 15, false, {Job("Running", 1), Job("Succeeded")}));
  Watcher watcher(client, Watch{"job", "7", 0}, 1h);
  EXPECT_EQ(StateOf(watcher.Next(1s)), "Pending");
  EXPECT_EQ(StateOf(watcher.Next(1s)), "Running");
  auto replayed = watcher.Next(1s);
  ASSERT_TRUE(replayed.ok() && replayed->has_value());
  ASSERT_EQ((*replayed)->items.jobs.size(), 1u) << "the Running it had returned is not returned again";
  EXPECT_EQ((*replayed)->items.jobs[0].state, "Succeeded");
  EXPECT_FALSE((*replayed)->reset);
  EXPECT_EQ(client.watched_after, (std::vector<uint64_t>{0, 12}));
  EXPECT_EQ(watcher.position(), 15u);
  EXPECT_EQ(watcher.reopened(), 1u);
}

TEST(WatcherTest, ReopensWhenARenewalSaysUnknownOrTheConnectionFails) {
  ScriptedClient client;
  client.replies.push_back(Reply(1, 10, true, {Job("Pending")}));
  client.replies.push_back(Reply(5, 20, false, {Job("Running", 1)}));
  client.replies.push_back(Reply(6, 30, false, {Job("Succeeded")}));
  Watcher watcher(client, Watch{"job", "7", 0}, 0ms);  // renew on every turn
  EXPECT_EQ(StateOf(watcher.Next(1s)), "Pending");
  client.forget_on_renew = true;  // the leader changed: the new one does not know the watch
  EXPECT_EQ(StateOf(watcher.Next(1s)), "Running");
  client.forget_on_renew = false;
  client.pushes.push_back(Status::Unavailable("coordinator at tcp://x did not answer"));
  EXPECT_EQ(StateOf(watcher.Next(1s)), "Succeeded");
  EXPECT_EQ(client.watched_after, (std::vector<uint64_t>{0, 10, 20}));
  EXPECT_GE(client.renewals, 2);
  // A refusal that re-opening cannot fix is returned.
  client.pushes.push_back(Status::PermissionDenied("no"));
  EXPECT_EQ(watcher.Next(1s).status().code(), StatusCode::kPermissionDenied);
}

TEST(WatcherTest, NothingPushedWithinTheTimeoutIsNotAnError) {
  ScriptedClient client;
  client.replies.push_back(Reply(1, 10, true, {Job("Pending")}));
  Watcher watcher(client, Watch{"job", "7", 0}, 1h);
  ASSERT_EQ(StateOf(watcher.Next(1s)), "Pending");
  auto nothing = watcher.Next(20ms);
  ASSERT_TRUE(nothing.ok());
  EXPECT_FALSE(nothing->has_value());
}

}  // namespace
}  // namespace gpool
