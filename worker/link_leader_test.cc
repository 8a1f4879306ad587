// The link across a control-plane outage (issue 48, finding 5): a NotLeader
// that names the leader is followed at once, whatever the backoff has grown
// to; one that names none (an election) is retried soon; and the node lease
// is held to the coordinator's hold while no leader acknowledges the node and
// no replica names one, but not when a replica names a leader this node
// cannot reach, and never revived once it ran out.
#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "protocol/base/testing/fake_clock.h"
#include "protocol/message_type.h"
#include "protocol/messages_common.h"
#include "protocol/messages_worker.h"
#include "worker/link.h"
#include "worker/test_util.h"

namespace gpool::worker {
namespace {

// A host with no tasks that records lease renewals.
class RecordingHost final : public LinkHost {
 public:
  RecordingHost() { node_.name = "n1"; }
  const NodeSpec& node() const override { return node_; }
  std::vector<TaskReport> TaskReports() const override { return {}; }
  void FillStatus(Heartbeat&) override {}
  const std::map<uint64_t, TaskEvent>& events() const override { return events_; }
  void AckEvent(uint64_t) override {}
  Status Bind(const BindTask&) override { return Status::Ok(); }
  void Preempt(const PreemptTask&) override {}
  Result<FetchLogReply> TailLog(const TaskId&, uint64_t) const override { return Status::NotFound("no log"); }
  Result<ExecStartReply> ExecStart(const TaskExecStart&) override { return Status::Unavailable("no exec"); }
  Result<ExecPollReply> ExecPoll(const TaskExecPoll&) override { return Status::Unavailable("no exec"); }
  Status ExecSignal(const TaskExecSignal&) override { return Status::Unavailable("no exec"); }
  void RenewLease(int64_t sent_ms, int64_t lease_ms) override { renewals.emplace_back(sent_ms, lease_ms); }

  std::vector<std::pair<int64_t, int64_t>> renewals;  // (sent_ms, lease_ms)

 private:
  NodeSpec node_;
  std::map<uint64_t, TaskEvent> events_;
};

constexpr int64_t kLeaseMs = 2000;
constexpr int64_t kHoldMs = 7000;
const std::vector<std::string> kEndpoints = {"tcp://c1:7401", "tcp://c2:7401", "tcp://c3:7401"};

class LinkLeaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    LinkOptions options;
    options.endpoints = kEndpoints;
    options.host = &host_;
    options.clock = &clock_;
    options.random = [] { return 0.5; };  // no jitter: delays are exact
    options.logger = log_.logger();
    link_ = std::move(Link::Open(std::move(options)).value());
  }

  struct Out {
    std::vector<std::string> connects;
    std::vector<Envelope> frames;
    const Envelope* Last(MessageType type) const {
      for (auto it = frames.rbegin(); it != frames.rend(); ++it) {
        if (it->type() == type) return &*it;
      }
      return nullptr;
    }
    size_t Count(MessageType type) const {
      size_t n = 0;
      for (const auto& f : frames) n += f.type() == type;
      return n;
    }
  };
  Out Take() {
    Out out;
    for (const auto& action : link_->TakeActions()) {
      if (action.kind == LinkAction::Kind::kConnect) {
        out.connects.push_back(action.data);
        continue;
      }
      auto env = DecodeEnvelope(action.data);
      EXPECT_TRUE(env.ok()) << env.status().ToString();
      if (env.ok()) out.frames.push_back(std::move(env.value()));
    }
    return out;
  }
  template <typename T>
  void Deliver(const T& body, uint64_t request_id) {
    Header header;
    header.request_id = request_id;
    header.sender = "coordinator";
    header.epoch = 1;
    link_->Receive(EncodeEnvelope(header, body));
  }
  // Time passing the way a running loop turns: every 10 ms, collecting
  // what the link sends meanwhile.
  Out Run(int64_t ms) {
    Out all;
    for (int64_t left = ms; left > 0; left -= 10) {
      clock_.Advance(std::min<int64_t>(10, left));
      link_->Tick();
      Out out = Take();
      all.connects.insert(all.connects.end(), out.connects.begin(), out.connects.end());
      for (auto& f : out.frames) all.frames.push_back(std::move(f));
    }
    return all;
  }
  uint64_t LastRegisterId(const Out& out) {
    const Envelope* reg = out.Last(MessageType::kRegisterNode);
    EXPECT_NE(reg, nullptr);
    return reg == nullptr ? 0 : reg->header().request_id;
  }
  // Registered with a leader that grants the test lease and hold; returns
  // when the registration was sent.
  int64_t Register(uint32_t hold_ms = kHoldMs) {
    link_->Start();
    const int64_t sent = clock_.MonoMs();
    Out out = Take();
    RegisterNodeReply reply;
    reply.heartbeat_interval_ms = 200;
    reply.lease_ms = kLeaseMs;
    reply.lease_hold_ms = hold_ms;
    Deliver(reply, LastRegisterId(out));
    EXPECT_TRUE(link_->registered());
    EXPECT_EQ(host_.renewals.size(), 1u);
    return sent;
  }

  FakeClock clock_;
  RecordingHost host_;
  testing::CapturedLog log_;
  std::unique_ptr<Link> link_;
};

TEST_F(LinkLeaderTest, ANamedLeaderIsTriedAtOnceWhateverTheBackoff) {
  link_->Start();
  Out out = Take();
  // Nothing answers for a while: retries 100, 200, 400, 800, 1600 ms apart.
  Out quiet = Run(3200);
  ASSERT_GE(quiet.Count(MessageType::kRegisterNode), 4u);
  out = quiet;
  Deliver(ErrorReply{"NotLeader", "not the leader", "tcp://c3:7401"}, LastRegisterId(out));
  Out now = Take();
  EXPECT_EQ(now.connects, std::vector<std::string>{"tcp://c3:7401"}) << "no backoff before the named leader";
  ASSERT_EQ(now.Count(MessageType::kRegisterNode), 1u);
  EXPECT_EQ(link_->stats().leader_hops, 1u);
  RegisterNodeReply reply;
  Deliver(reply, LastRegisterId(now));
  EXPECT_TRUE(link_->registered());
}

TEST_F(LinkLeaderTest, HopsToNamedLeadersAreBoundedBetweenRetries) {
  link_->Start();
  Out out = Take();
  // Two replicas with stale hints naming each other.
  for (int hop = 0; hop < 3; ++hop) {
    Deliver(ErrorReply{"NotLeader", "", hop % 2 == 0 ? "tcp://c2:7401" : "tcp://c1:7401"}, LastRegisterId(out));
    out = Take();
    ASSERT_EQ(out.connects.size(), 1u) << "hop " << hop;
  }
  Deliver(ErrorReply{"NotLeader", "", "tcp://c1:7401"}, LastRegisterId(out));  // at c2 now
  EXPECT_TRUE(Take().connects.empty()) << "the fourth waits for the retry";
  Out retry = Run(2000);
  ASSERT_FALSE(retry.connects.empty());
  EXPECT_EQ(retry.connects[0], "tcp://c1:7401") << "the retry still goes where it was told";
}

TEST_F(LinkLeaderTest, AReplicaThatKnowsNoLeaderIsAskedAgainSoon) {
  link_->Start();
  Out out = Run(3200);  // the backoff has grown past 1.6 s
  Deliver(ErrorReply{"NotLeader", "no leader yet", ""}, LastRegisterId(out));
  EXPECT_TRUE(Take().connects.empty());
  Out retry = Run(500);
  EXPECT_EQ(retry.connects.size(), 1u) << "within the electing delay, not the 3.2 s backoff";
  EXPECT_EQ(retry.Count(MessageType::kRegisterNode), 1u);
}

TEST_F(LinkLeaderTest, AnElectingRetryOfZeroIsRefused) {
  LinkOptions options;
  options.endpoints = kEndpoints;
  options.host = &host_;
  options.clock = &clock_;
  options.electing_retry_ms = 0;  // would resend at every turn
  auto link = Link::Open(std::move(options));
  ASSERT_FALSE(link.ok());
  EXPECT_EQ(link.status().code(), StatusCode::kInvalidArgument);
}

TEST_F(LinkLeaderTest, TheLeaseIsHeldWhenNoReplicaAnswers) {
  const int64_t sent = Register();
  // Silence from everyone: the link gives up on the leader, rotates, retries.
  Run(kLeaseMs - 1000 - 10);
  EXPECT_EQ(host_.renewals.size(), 1u) << "nothing before the plain lease nears its end";
  Run(20);
  ASSERT_EQ(host_.renewals.size(), 2u);
  EXPECT_EQ(host_.renewals[1], (std::pair<int64_t, int64_t>{sent, kHoldMs})) << "counted from the same send";
  EXPECT_TRUE(log_.Contains("holding the node lease")) << log_.text();
  Run(10'000);
  EXPECT_EQ(host_.renewals.size(), 2u) << "held once, never further";
  EXPECT_EQ(link_->stats().lease_holds, 1u);
}

TEST_F(LinkLeaderTest, TheLeaseIsHeldWhileReplicasAreElecting) {
  Register();
  Out out = Run(700);  // silent past the liveness window: registering elsewhere
  ASSERT_FALSE(link_->registered());
  Deliver(ErrorReply{"NotLeader", "", "tcp://c1:7401"}, LastRegisterId(out));  // a stale hint
  out = Take();
  Deliver(ErrorReply{"NotLeader", "no leader yet", ""}, LastRegisterId(out));   // then an election
  Run(kLeaseMs);
  ASSERT_EQ(host_.renewals.size(), 2u);
  EXPECT_EQ(host_.renewals[1].second, kHoldMs);
}

TEST_F(LinkLeaderTest, NoHoldWhenAReplicaNamesALeaderThisNodeCannotReach) {
  Register();
  Out out = Run(700);
  ASSERT_FALSE(link_->registered());
  // A follower answers: the leader is up; it is this node that is cut off.
  Deliver(ErrorReply{"NotLeader", "", "tcp://c1:7401"}, LastRegisterId(out));
  Run(kLeaseMs);
  EXPECT_EQ(host_.renewals.size(), 1u) << "the tasks stop at the plain lease";
  EXPECT_EQ(link_->stats().lease_holds, 0u);
}

TEST_F(LinkLeaderTest, ALeaseThatRanOutIsNotRevived) {
  Register();
  clock_.Advance(kLeaseMs + 500);  // this process stopped past its lease
  link_->Tick();
  Run(1000);
  EXPECT_EQ(host_.renewals.size(), 1u);
  EXPECT_EQ(link_->stats().lease_holds, 0u);
}

TEST_F(LinkLeaderTest, NoHoldFromACoordinatorThatGrantsNone) {
  Register(/*hold_ms=*/0);
  Run(kLeaseMs + 1000);
  EXPECT_EQ(host_.renewals.size(), 1u);
}

TEST_F(LinkLeaderTest, ALeadersAckAfterAHoldAllowsANewHoldFromIt) {
  Register();
  Run(kLeaseMs - 900);
  ASSERT_EQ(host_.renewals.size(), 2u);  // held
  // The control plane is back: a leader takes the registration.
  Out out = Run(kHoldMs);  // long enough for several retries
  ASSERT_GT(out.Count(MessageType::kRegisterNode), 0u);
  RegisterNodeReply reply;
  reply.heartbeat_interval_ms = 200;
  reply.lease_ms = kLeaseMs;
  reply.lease_hold_ms = kHoldMs;
  Deliver(reply, LastRegisterId(out));
  ASSERT_TRUE(link_->registered());
  ASSERT_EQ(host_.renewals.size(), 3u);
  EXPECT_EQ(host_.renewals[2].second, kLeaseMs) << "a leader's renewal is the plain lease";
  Run(kLeaseMs);  // silent again
  ASSERT_EQ(host_.renewals.size(), 4u);
  EXPECT_EQ(host_.renewals[3], (std::pair<int64_t, int64_t>{host_.renewals[2].first, kHoldMs}));
}

}  // namespace
}  // namespace gpool::worker
