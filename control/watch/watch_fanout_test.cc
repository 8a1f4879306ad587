// The hub's fan-out (issue 49): changes matched through indexes and pushed
// as items encoded once. Checked against the replay path, which matches
// each change by walking the watch's filter and permissions (Matches): a
// watch must be pushed exactly what a replay from where it opened holds,
// and one change's items are encoded once however many watches get them.
#include <set>

#include <gtest/gtest.h>

#include "control/state/test_specs.h"
#include "control/testing/fake_ports.h"
#include "control/watch/watch_frames.h"
#include "control/watch/watch_hub.h"
#include "protocol/messages_watch.h"
#include "protocol/model/node_update.h"

namespace gpool::control {
namespace {

using state::testing::MakeNode;

class WatchFanOutTest : public ::testing::Test {
 protected:
  WatchFanOutTest()
      : proposer_(state_), hub_(WatchHubOptions{.max_per_peer = 1000, .lease_ms = 1'000'000}, state_, feed_, outbox_,
                                proposer_) {
    Apply(state::RegisterNodeCmd{MakeNode("n0", 2), {}, {}, ""});
    Apply(state::RegisterNodeCmd{MakeNode("n1", 2), {}, {}, ""});
    admin_.kind = Actor::Kind::kInsecureAdmin;
  }
  state::ApplyResult Apply(state::CommandBody body) {
    state::Command command{static_cast<int64_t>(1000 * (index_ + 1)), std::move(body)};
    feed_.Note(state_, command);
    const state::ApplyResult result = state_.Apply(++index_, command);
    hub_.Publish(feed_.Record(state_, index_, command, result));
    return result;
  }
  uint64_t Submit(const std::string& user) {
    JobSpec spec;
    spec.name = "train";
    spec.user = user;
    spec.tasks.push_back(TaskGroupSpec{.replicas = 1, .command = {"true"}, .resources = Resources{1, 1000, 1024}});
    return Apply(state::SubmitJobCmd{spec, ""}).job_id;
  }
  // A user without roles: reads its own jobs only.
  Actor User(const std::string& name) {
    Apply(state::UpdateUserCmd{UpdateUser{UserOp::kCreate, UserSpec{name, {}, -1, -1, {}}}});
    Actor actor;
    actor.kind = Actor::Kind::kUser;
    actor.name = name;
    actor.user = state_.FindUser(name);
    return actor;
  }
  std::vector<WatchUpdate> Pushes(const std::string& peer) {
    std::vector<WatchUpdate> out;
    for (const auto& sent : outbox_.sent) {
      if (sent.peer != peer) continue;
      auto envelope = DecodeEnvelope(sent.frame);
      EXPECT_TRUE(envelope.ok()) << envelope.status().ToString();
      if (envelope.ok()) out.push_back(envelope->Body<WatchUpdate>().value());
    }
    return out;
  }
  // Items as their bytes, in order: what a client would apply.
  static std::vector<std::string> Encoded(const WatchItems& items) {
    std::vector<std::string> out;
    for (const auto& job : items.jobs) out.push_back("job " + EncodeWatchItem(job));
    for (const auto& node : items.nodes) out.push_back("node " + EncodeWatchItem(node));
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

TEST_F(WatchFanOutTest, EachWatchIsPushedWhatAReplayFromItsStartHolds) {
  const Actor alice = User("alice");
  const Actor bob = User("bob");
  const uint64_t a1 = Submit("alice");
  const uint64_t b1 = Submit("bob");
  const std::string queue = state_.FindJob(JobId(a1))->spec.queue;
  const std::vector<Watch> watches = {
      {"jobs", "", 0},     {"jobs", "user:alice", 0}, {"jobs", "user:bob", 0},         {"jobs", "queue:" + queue, 0},
      {"jobs", "queue:none", 0}, {"job", std::to_string(a1), 0}, {"job", std::to_string(b1), 0},
      {"nodes", "", 0},    {"nodes", "n1", 0}};
  struct Opened {
    std::string peer;
    Watch watch;
    Actor actor;
    uint64_t after = 0;
  };
  std::vector<Opened> opened;
  for (const Actor& actor : {admin_, alice, bob}) {
    for (const Watch& watch : watches) {
      const std::string peer = "p" + std::to_string(opened.size()) + "-" + actor.name;
      auto reply = hub_.Open(peer, watch, actor, 0);
      if (reply.ok()) opened.push_back({peer, watch, actor, reply->position});
    }
  }
  // Users without roles may not watch another's job, nor nodes.
  ASSERT_EQ(opened.size(), 9u + 6u + 6u);

  // Changes of each kind: submissions, cancels, a cordon, a bind (a job
  // and a node in one command).
  const uint64_t a2 = Submit("alice");
  const uint64_t b2 = Submit("bob");
  Apply(state::CancelJobCmd{b1, 0, ""});
  Apply(state::UpdateNodeCmd{UpdateNode{.node = "n1", .op = NodeUpdateOp::kCordon}});
  Apply(state::ApplyPlanCmd{{state::PlanBind{JobId(a1), 0, "n0", {0}, 1000, 1024}}, {}, {}});
  Apply(state::CancelJobCmd{a2, 0, ""});

  for (const Opened& watch : opened) {
    SCOPED_TRACE(watch.peer + " " + watch.watch.topic + " '" + watch.watch.key + "'");
    std::vector<std::string> pushed;
    uint64_t seq = 0;
    for (const WatchUpdate& push : Pushes(watch.peer)) {
      EXPECT_EQ(push.seq, ++seq);
      EXPECT_LE(push.position, index_);
      for (std::string& item : Encoded(push.items)) pushed.push_back(std::move(item));
    }
    auto replay = hub_.Open("replay-" + watch.peer, Watch{watch.watch.topic, watch.watch.key, watch.after},
                            watch.actor, 0);
    ASSERT_TRUE(replay.ok()) << replay.status().ToString();
    ASSERT_FALSE(replay->reset);
    EXPECT_EQ(pushed, Encoded(replay->items));
  }
  // And the cases that matter spelled out: alice sees her jobs, never bob's.
  std::set<uint64_t> alice_saw;
  for (const WatchUpdate& push : Pushes("p9-alice")) {
    for (const auto& job : push.items.jobs) alice_saw.insert(job.job_id);
  }
  EXPECT_EQ(alice_saw, (std::set<uint64_t>{a1, a2}));
  std::set<uint64_t> admin_saw;
  for (const WatchUpdate& push : Pushes("p0-")) {
    for (const auto& job : push.items.jobs) admin_saw.insert(job.job_id);
  }
  EXPECT_EQ(admin_saw, (std::set<uint64_t>{a1, a2, b1, b2}));
  EXPECT_EQ(Pushes("p7-").size(), 2u) << "all nodes: the cordon and the bind";
  EXPECT_EQ(Pushes("p8-").size(), 1u) << "n1: the cordon";
  EXPECT_TRUE(Pushes("p4-").empty()) << "queue:none";
}

TEST_F(WatchFanOutTest, OneChangeIsEncodedOnceForEveryWatchItGoesTo) {
  const uint64_t job = Submit("alice");
  std::set<uint64_t> ids;
  for (int i = 0; i < 60; ++i) {
    const Watch watch = i % 2 ? Watch{"jobs", "", 0} : Watch{"job", std::to_string(job), 0};
    auto reply = hub_.Open("p" + std::to_string(i % 5), watch, admin_, 0);
    ASSERT_TRUE(reply.ok());
    ids.insert(reply->watch_id);
  }
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(hub_.Open("q", Watch{"nodes", "", 0}, admin_, 0).ok());
  outbox_.sent.clear();
  const uint64_t blocks = hub_.blocks_encoded();
  const uint64_t pushes = hub_.pushes();

  Apply(state::CancelJobCmd{job, 0, ""});
  EXPECT_EQ(hub_.pushes() - pushes, 60u);
  EXPECT_EQ(hub_.blocks_encoded() - blocks, 1u) << "one change, the same items for 60 watches: encoded once";
  std::set<uint64_t> pushed_to;
  for (const auto& sent : outbox_.sent) {
    auto envelope = DecodeEnvelope(sent.frame);
    ASSERT_TRUE(envelope.ok());
    const WatchUpdate push = envelope->Body<WatchUpdate>().value();
    EXPECT_EQ(push.seq, 1u);
    EXPECT_EQ(push.position, index_);
    ASSERT_EQ(push.items.jobs.size(), 1u);
    EXPECT_EQ(push.items.jobs[0].job_id, job);
    EXPECT_EQ(push.items.jobs[0].state, "Cancelled");
    pushed_to.insert(push.watch_id);
  }
  EXPECT_EQ(pushed_to, ids);

  // A bind changes a job and a node: the job watches share one block, the
  // node watches another.
  const uint64_t next = Submit("alice");
  outbox_.sent.clear();
  const uint64_t before_bind = hub_.blocks_encoded();
  Apply(state::ApplyPlanCmd{{state::PlanBind{JobId(next), 0, "n0", {0}, 1000, 1024}}, {}, {}});
  EXPECT_EQ(hub_.blocks_encoded() - before_bind, 2u);
  EXPECT_EQ(Pushes("q").size(), 10u);
}

TEST_F(WatchFanOutTest, ClosedAndDroppedWatchesLeaveTheIndexes) {
  const uint64_t job = Submit("alice");
  auto all = hub_.Open("p1", Watch{"jobs", "", 0}, admin_, 0);
  auto mine = hub_.Open("p1", Watch{"jobs", "user:alice", 0}, admin_, 0);
  auto queue = hub_.Open("p1", Watch{"jobs", "queue:" + state_.FindJob(JobId(job))->spec.queue, 0}, admin_, 0);
  auto node = hub_.Open("p1", Watch{"nodes", "n0", 0}, admin_, 0);
  ASSERT_TRUE(all.ok() && mine.ok() && queue.ok() && node.ok());
  for (uint64_t id : {all->watch_id, mine->watch_id, queue->watch_id, node->watch_id}) hub_.Close("p1", id);
  outbox_.sent.clear();
  Apply(state::CancelJobCmd{job, 0, ""});
  Apply(state::UpdateNodeCmd{UpdateNode{.node = "n0", .op = NodeUpdateOp::kCordon}});
  EXPECT_TRUE(outbox_.sent.empty()) << "closed watches are pushed nothing";

  ASSERT_TRUE(hub_.Open("p2", Watch{"jobs", "user:alice", 0}, admin_, 0).ok());
  hub_.DropAll();
  Apply(state::UpdateNodeCmd{UpdateNode{.node = "n0", .op = NodeUpdateOp::kUncordon}});
  EXPECT_EQ(hub_.size(), 0u);
  EXPECT_TRUE(outbox_.sent.empty());
}

}  // namespace
}  // namespace gpool::control
