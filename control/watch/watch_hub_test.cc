// The leader's watches (watch_hub.h) over a real state and feed, with the
// coordinator's apply order (Note, Apply, Record, Publish): what a watch's
// first reply holds, which pushes reach which watch and in what order, a
// resume after a lost connection, renewal, expiry, limits and permissions.
#include "control/watch/watch_hub.h"

#include <gtest/gtest.h>

#include "control/state/test_specs.h"
#include "control/testing/fake_ports.h"
#include "protocol/messages_watch.h"
#include "protocol/model/node_update.h"
#include "protocol/model/task_report.h"

namespace gpool::control {
namespace {

using state::testing::MakeNode;

class WatchHubTest : public ::testing::Test {
 protected:
  explicit WatchHubTest(WatchHubOptions options = WatchHubOptions{.max_per_peer = 3, .lease_ms = 1000})
      : proposer_(state_), hub_(options, state_, feed_, outbox_, proposer_) {
    Apply(state::RegisterNodeCmd{MakeNode("n0", 2), {}, {}, ""});
    admin_.kind = Actor::Kind::kInsecureAdmin;
  }
  state::ApplyResult Apply(state::CommandBody body) {
    state::Command command{static_cast<int64_t>(1000 * (index_ + 1)), std::move(body)};
    feed_.Note(state_, command);
    const state::ApplyResult result = state_.Apply(++index_, command);
    hub_.Publish(feed_.Record(state_, index_, command, result));
    return result;
  }
  uint64_t Submit(const std::string& user = "") {
    JobSpec spec;
    spec.name = "train";
    spec.user = user;
    spec.tasks.push_back(TaskGroupSpec{.replicas = 1, .command = {"true"}, .resources = Resources{1, 1000, 1024}});
    return Apply(state::SubmitJobCmd{spec, ""}).job_id;
  }
  void Event(uint64_t job, const std::string& kind) {
    TaskEvent event;
    event.node = "n0";
    event.task = TaskId{JobId(job), 0, 0};
    event.kind = EnumFromName<TaskEventKind>(kind).value();
    event.pid = 100;
    Apply(state::TaskEventCmd{event});
  }
  // The pushes sent to `peer` since the last call, decoded.
  std::vector<WatchUpdate> Pushes(const std::string& peer = "p1") {
    std::vector<WatchUpdate> out;
    for (const auto& sent : outbox_.sent) {
      if (sent.peer != peer) continue;
      auto envelope = DecodeEnvelope(sent.frame);
      EXPECT_TRUE(envelope.ok());
      EXPECT_EQ(envelope->header().request_id, 0u);
      out.push_back(envelope->Body<WatchUpdate>().value());
    }
    std::erase_if(outbox_.sent, [&](const auto& sent) { return sent.peer == peer; });
    return out;
  }

  state::ClusterState state_;
  ChangeFeed feed_;
  RecordingOutbox outbox_;
  ImmediateProposer proposer_;
  WatchHub hub_;
  Actor admin_;
  uint64_t index_ = 0;
};

TEST_F(WatchHubTest, AJobWatchGetsEachChangeInOrderAndResumesAfterALoss) {
  const uint64_t job = Submit();
  auto reply = hub_.Open("p1", Watch{"job", std::to_string(job), 0}, admin_, 0);
  ASSERT_TRUE(reply.ok()) << reply.status().ToString();
  EXPECT_TRUE(reply->reset);
  ASSERT_EQ(reply->items.jobs.size(), 1u);
  EXPECT_EQ(reply->items.jobs[0].state, "Pending");
  EXPECT_EQ(reply->position, index_);

  const uint64_t other = Submit();  // another job: nothing for this watch
  Apply(state::ApplyPlanCmd{{state::PlanBind{JobId(job), 0, "n0", {0}, 1000, 1024}}, {}, {}});
  Event(job, "started");
  auto pushes = Pushes();
  ASSERT_EQ(pushes.size(), 2u);
  EXPECT_EQ(pushes[0].seq, 1u);
  EXPECT_EQ(pushes[1].seq, 2u);
  EXPECT_EQ(pushes[1].items.jobs.at(0).state, "Running");
  EXPECT_LT(pushes[0].position, pushes[1].position);
  const uint64_t seen = pushes[0].position;

  // The connection is lost after the first push; the client re-watches from
  // it and gets exactly what it missed, then the pushes go on.
  auto resumed = hub_.Open("p2", Watch{"job", std::to_string(job), seen}, admin_, 0);
  ASSERT_TRUE(resumed.ok());
  EXPECT_FALSE(resumed->reset);
  ASSERT_EQ(resumed->items.jobs.size(), 1u);
  EXPECT_EQ(resumed->items.jobs[0].state, "Running");
  Event(job, "exited");
  auto later = Pushes("p2");
  ASSERT_EQ(later.size(), 1u);
  EXPECT_EQ(later[0].seq, 1u);
  EXPECT_EQ(later[0].items.jobs.at(0).state, "Succeeded");
  (void)other;
}

TEST_F(WatchHubTest, FiltersPermissionsAndTopics) {
  const uint64_t mine = Submit("alice");
  const uint64_t theirs = Submit("bob");
  auto alice = hub_.Open("p1", Watch{"jobs", "user:alice", 0}, admin_, 0);
  ASSERT_TRUE(alice.ok());
  ASSERT_EQ(alice->items.jobs.size(), 1u);
  EXPECT_EQ(alice->items.jobs[0].job_id, mine);
  auto nodes = hub_.Open("p3", Watch{"nodes", "", 0}, admin_, 0);
  ASSERT_TRUE(nodes.ok());
  EXPECT_EQ(nodes->items.nodes.size(), 1u);
  Apply(state::CancelJobCmd{theirs, 0, ""});
  EXPECT_TRUE(Pushes("p1").empty()) << "bob's job is not alice's";
  Apply(state::CancelJobCmd{mine, 0, ""});
  EXPECT_EQ(Pushes("p1").size(), 1u);
  Apply(state::UpdateNodeCmd{UpdateNode{.node = "n0", .op = NodeUpdateOp::kCordon}});
  auto node_pushes = Pushes("p3");
  ASSERT_EQ(node_pushes.size(), 1u);
  EXPECT_TRUE(node_pushes[0].items.nodes.at(0).cordoned);

  // Bad requests: typed errors, nothing opened.
  EXPECT_EQ(hub_.Open("p1", Watch{"gpus", "", 0}, admin_, 0).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(hub_.Open("p1", Watch{"job", "7x", 0}, admin_, 0).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(hub_.Open("p1", Watch{"jobs", "team:a", 0}, admin_, 0).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(hub_.Open("p1", Watch{"job", "999", 0}, admin_, 0).status().code(), StatusCode::kNotFound);
  Actor nobody;  // anonymous: may read nothing
  EXPECT_EQ(hub_.Open("p1", Watch{"job", std::to_string(mine), 0}, nobody, 0).status().code(),
            StatusCode::kPermissionDenied);
  EXPECT_EQ(hub_.Open("p1", Watch{"events", "", 0}, nobody, 0).status().code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(hub_.size(), 2u);
}

TEST_F(WatchHubTest, RenewalExpiryLimitsAndLeadershipLoss) {
  const uint64_t job = Submit();
  const std::string key = std::to_string(job);
  auto first = hub_.Open("p1", Watch{"job", key, 0}, admin_, 0);
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE(hub_.Open("p1", Watch{"job", key, 0}, admin_, 0).ok());
  ASSERT_TRUE(hub_.Open("p1", Watch{"events", "", 0}, admin_, 0).ok());
  EXPECT_EQ(hub_.Open("p1", Watch{"job", key, 0}, admin_, 0).status().code(), StatusCode::kResourceExhausted)
      << "three per connection in this test";
  // Renewed at 900 ms, the first outlives the others' lease.
  EXPECT_TRUE(hub_.Renew("p1", WatchRenew{{first->watch_id}}, 900).unknown.empty());
  EXPECT_EQ(hub_.Renew("p2", WatchRenew{{first->watch_id}}, 900).unknown.size(), 1u) << "another connection's watch";
  hub_.Tick(1500);
  EXPECT_EQ(hub_.size(), 1u);
  EXPECT_EQ(hub_.Renew("p1", WatchRenew{{first->watch_id + 1}}, 1500).unknown.size(), 1u);
  hub_.Close("p1", first->watch_id);
  EXPECT_EQ(hub_.size(), 0u);
  ASSERT_TRUE(hub_.Open("p1", Watch{"job", key, 0}, admin_, 2000).ok());
  hub_.DropAll();
  EXPECT_EQ(hub_.size(), 0u);
}

TEST_F(WatchHubTest, EventsArePushedFromTheStreamEachTurn) {
  auto events = hub_.Open("p1", Watch{"events", "", 0}, admin_, 0);
  ASSERT_TRUE(events.ok());
  const uint64_t before = events->position;
  hub_.Tick(10);
  EXPECT_TRUE(Pushes().empty()) << "nothing new";
  Apply(state::UpdateNodeCmd{UpdateNode{.node = "n0", .op = NodeUpdateOp::kCordon}});
  Apply(state::UpdateNodeCmd{UpdateNode{.node = "n0", .op = NodeUpdateOp::kUncordon}});
  hub_.Tick(20);
  auto pushes = Pushes();
  ASSERT_EQ(pushes.size(), 1u);
  ASSERT_EQ(pushes[0].items.events.size(), 2u);
  EXPECT_EQ(pushes[0].items.events[0].kind, "node-cordoned");
  EXPECT_EQ(pushes[0].position, before + 2);
  // Resuming from the first event replays the second.
  auto resumed = hub_.Open("p2", Watch{"events", "", before + 1}, admin_, 30);
  ASSERT_TRUE(resumed.ok());
  EXPECT_FALSE(resumed->reset);
  ASSERT_EQ(resumed->items.events.size(), 1u);
  EXPECT_EQ(resumed->items.events[0].kind, "node-uncordoned");

  // A closed events watch is pushed nothing more; a jobs watch never gets events.
  hub_.Close("p1", events->watch_id);
  hub_.Close("p2", resumed->watch_id);
  ASSERT_TRUE(hub_.Open("p3", Watch{"jobs", "", 0}, admin_, 40).ok());
  Pushes("p1");
  Pushes("p2");
  Pushes("p3");
  Apply(state::UpdateNodeCmd{UpdateNode{.node = "n0", .op = NodeUpdateOp::kCordon}});
  hub_.Tick(50);
  EXPECT_TRUE(Pushes("p1").empty());
  EXPECT_TRUE(Pushes("p2").empty());
  for (const auto& push : Pushes("p3")) EXPECT_TRUE(push.items.events.empty());
  EXPECT_EQ(hub_.size(), 1u);
}

// Issue 48, finding 6: one member opened all 100,000 watch slots and every
// other user's `gpool wait` failed. Each caller has its own limit, over all
// its connections; admins keep a reserve no number of members can take.
class WatchLimitsTest : public WatchHubTest {
 protected:
  WatchLimitsTest()
      : WatchHubTest(WatchHubOptions{.max_per_peer = 100, .max_total = 10, .max_per_user = 4, .admin_reserve = 3}) {}
  Actor Member(const std::string& name) {
    Apply(state::UpdateUserCmd{UpdateUser{UserOp::kCreate, UserSpec{name, {}, -1, -1, {{Role::kMember, ""}}}}});
    Actor actor;
    actor.kind = Actor::Kind::kUser;
    actor.name = name;
    actor.user = state_.FindUser(name);
    return actor;
  }
};

TEST_F(WatchLimitsTest, AUserIsHeldToItsLimitOverAllConnectionsAndOthersAndAdminsKeepTheirs) {
  Actor mallory = Member("mallory");
  Actor bob = Member("bob");
  Actor carol = Member("carol");
  const uint64_t job = Submit("mallory");
  const uint64_t bobs = Submit("bob");
  const uint64_t carols = Submit("carol");
  const std::string key = std::to_string(job);
  // Four watches over four connections: the limit is the user's, not a peer's.
  for (int i = 0; i < 4; ++i) {
    auto opened = hub_.Open("m" + std::to_string(i), Watch{"job", key, 0}, mallory, 0);
    ASSERT_TRUE(opened.ok()) << i << ": " << opened.status().ToString();
  }
  auto refused = hub_.Open("m9", Watch{"job", key, 0}, mallory, 0);
  EXPECT_EQ(refused.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(refused.status().message().find("mallory holds 4 watches, the most one user may (--max-watches-per-user 4)"),
            std::string::npos)
      << refused.status().ToString();
  EXPECT_EQ(hub_.held_by("mallory"), 4u);
  EXPECT_EQ(hub_.size(), 4u) << "a refusal opens nothing";
  // Another member still gets watches, up to what members share (10 - 3).
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(hub_.Open("b", Watch{"job", std::to_string(bobs), 0}, bob, 0).ok()) << i;
  auto shared_full = hub_.Open("c", Watch{"job", std::to_string(carols), 0}, carol, 0);
  EXPECT_EQ(shared_full.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(shared_full.status().message().find("admins' reserve of 3"), std::string::npos)
      << shared_full.status().ToString();
  // The admins' reserve is theirs.
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(hub_.Open("a", Watch{"events", "", 0}, admin_, 0).ok()) << i;
  EXPECT_EQ(hub_.Open("a", Watch{"events", "", 0}, admin_, 0).status().code(), StatusCode::kResourceExhausted);
  // Closing gives a user's slot back to it.
  auto reopened_after_close = [&] {
    hub_.Close("m0", 1);
    return hub_.Open("m0", Watch{"job", key, 0}, mallory, 0);
  }();
  EXPECT_TRUE(reopened_after_close.ok()) << reopened_after_close.status().ToString();
  EXPECT_EQ(hub_.held_by("mallory"), 4u);
  hub_.DropAll();
  EXPECT_EQ(hub_.held_by("mallory"), 0u);
  EXPECT_TRUE(hub_.Open("c", Watch{"job", std::to_string(carols), 0}, carol, 0).ok());
}

// Issue 48 gives each task its own exec key, but a job's tasks still share
// one caller's limit ("job-<id>"): a job of many tasks gets no more watches
// than it had with one key.
TEST_F(WatchLimitsTest, TheTasksOfAJobShareOneLimit) {
  const uint64_t job = Submit("mallory");
  const std::string key = std::to_string(job);
  auto task = [&](uint32_t index) {
    Actor actor;
    actor.kind = Actor::Kind::kJob;
    actor.name = "task-" + TaskId{JobId(job), index, 0}.ToString();
    actor.job = job;
    return actor;
  };
  for (uint32_t index = 0; index < 4; ++index) {
    auto opened = hub_.Open("t" + std::to_string(index), Watch{"job", key, 0}, task(index), 0);
    ASSERT_TRUE(opened.ok()) << index << ": " << opened.status().ToString();
  }
  EXPECT_EQ(hub_.held_by("job-" + key), 4u);
  auto refused = hub_.Open("t9", Watch{"job", key, 0}, task(9), 0);
  EXPECT_EQ(refused.status().code(), StatusCode::kResourceExhausted) << refused.status().ToString();
}

}  // namespace
}  // namespace gpool::control
