// The Link's lease renewal, its health reports and NodeHost alone, on the
// fixture of link_fixture.h.
#include "worker/link_fixture.h"

namespace gpool::worker {
namespace {

// The node lease is renewed from the send time of what the coordinator
// acknowledges: the registration, then each acknowledged heartbeat; an
// unanswered heartbeat renews nothing, and an old heartbeat's late ack
// passes the send time of that old heartbeat, never a later one.
TEST_F(LinkTest, TheLeaseIsRenewedFromTheSendTimeOfWhatTheCoordinatorAcknowledged) {
  std::vector<std::pair<int64_t, int64_t>> renewals;  // (sent_ms, lease_ms)
  LinkOptions options =
      MakeOptions({.renew_lease = [&](int64_t sent, int64_t lease) { renewals.emplace_back(sent, lease); }});
  link_ = std::move(Link::Open(std::move(options)).value());
  link_->Start();
  const int64_t register_sent = clock_.MonoMs();
  clock_.Advance(30);  // the reply takes a while
  RegisterNodeReply reply;
  reply.heartbeat_interval_ms = 100;
  reply.lease_ms = 5000;
  Deliver(reply, 1, 1);
  ASSERT_EQ(renewals.size(), 1u);
  EXPECT_EQ(renewals[0], (std::pair<int64_t, int64_t>{register_sent, 5000}));
  Take();

  Run(100);  // the first heartbeat
  Out first = Take();
  ASSERT_EQ(first.Count(MessageType::kHeartbeat), 1u);
  const uint64_t first_id = first.First(MessageType::kHeartbeat)->header().request_id;
  const int64_t first_sent = clock_.MonoMs();
  Run(100);  // the second, unanswered so far
  Out second = Take();
  ASSERT_EQ(second.Count(MessageType::kHeartbeat), 1u);
  const uint64_t second_id = second.First(MessageType::kHeartbeat)->header().request_id;
  const int64_t second_sent = clock_.MonoMs();
  EXPECT_EQ(renewals.size(), 1u) << "no ack, no renewal";

  Deliver(Ack{}, first_id, 1);
  ASSERT_EQ(renewals.size(), 2u);
  EXPECT_EQ(renewals[1].first, first_sent);
  Deliver(Ack{}, 424242, 1);  // an ack for nothing we sent
  EXPECT_EQ(renewals.size(), 2u);
  Deliver(Ack{}, second_id, 1);
  ASSERT_EQ(renewals.size(), 3u);
  EXPECT_EQ(renewals[2].first, second_sent);
  Deliver(Ack{}, first_id, 1);  // a repeat renews nothing
  EXPECT_EQ(renewals.size(), 3u);
}

TEST_F(LinkTest, ACoordinatorThatGrantsNoLeaseGetsTheLongDefault) {
  std::vector<int64_t> leases;
  LinkOptions options = MakeOptions({.renew_lease = [&](int64_t, int64_t lease) { leases.push_back(lease); }});
  options.lease_when_none_ms = 99'000;
  link_ = std::move(Link::Open(std::move(options)).value());
  Register();
  ASSERT_EQ(leases.size(), 1u);
  EXPECT_EQ(leases[0], 99'000);
}

}  // namespace
}  // namespace gpool::worker

namespace gpool::worker {
namespace {

// Health on the link (messages_worker.h): RegisterNode carries the list; a
// heartbeat carries it (with its version) whenever the monitor's version is
// newer than the last one the coordinator acknowledged, and sends a change
// at once; health_rounds rides on every heartbeat.
class LinkHealthTest : public LinkTest {
 protected:
  void SetUp() override {
    LinkTest::SetUp();
    monitor_ = std::make_unique<HealthMonitor>(&clock_, log_.logger());
    monitor_->Add(std::make_unique<testing::ScriptedCheck>(
        "disk", 10, std::vector<HealthKind>{HealthKind::kDiskLow}, &findings_));
    LinkOptions options = MakeOptions({.health = monitor_.get()});
    link_ = std::move(Link::Open(std::move(options)).value());
  }
  void Find(std::string message = "12 MiB free") {
    findings_ = {HealthFinding{HealthKind::kDiskLow, "disk", HealthSeverity::kDegraded, std::move(message)}};
  }
  // The agent's turn: the monitor before the link.
  void HealthTurn(int64_t ms) {
    clock_.Advance(ms);
    monitor_->Poll();
    tm_->Poll();
    link_->Tick();
  }
  // The heartbeats sent since the last Take().
  std::vector<std::pair<uint64_t, Heartbeat>> Heartbeats() {
    std::vector<std::pair<uint64_t, Heartbeat>> out;
    for (const Envelope& env : Take().frames) {
      if (env.type() != MessageType::kHeartbeat) continue;
      auto hb = env.Body<Heartbeat>();
      EXPECT_TRUE(hb.ok()) << hb.status().ToString();
      if (hb.ok()) out.emplace_back(env.header().request_id, std::move(hb.value()));
    }
    return out;
  }

  std::vector<HealthFinding> findings_;
  std::unique_ptr<HealthMonitor> monitor_;
};

TEST_F(LinkHealthTest, RegistrationCarriesTheConditionsFoundBeforeIt) {
  Find();
  monitor_->Poll();
  link_->Start();
  const Out out = Take();
  const Envelope* env = out.First(MessageType::kRegisterNode);
  ASSERT_NE(env, nullptr);
  auto reg = env->Body<RegisterNode>();
  ASSERT_TRUE(reg.ok()) << reg.status().ToString();
  ASSERT_EQ(reg->health.size(), 1u);
  EXPECT_EQ(reg->health[0].kind, "disk-low");
  EXPECT_EQ(reg->health[0].message, "12 MiB free");
}

TEST_F(LinkHealthTest, AHeartbeatCarriesTheListOnlyWhenItChangedAndUntilAcknowledged) {
  monitor_->Poll();
  Register(/*interval_ms=*/1000);
  for (int i = 0; i < 100; ++i) HealthTurn(10);
  auto beats = Heartbeats();
  ASSERT_EQ(beats.size(), 1u);
  EXPECT_EQ(beats[0].second.health_version, 0u) << "nothing changed since the registration";
  EXPECT_TRUE(beats[0].second.health.empty());
  EXPECT_EQ(beats[0].second.health_rounds, monitor_->rounds()) << "rounds ride on every heartbeat";
  EXPECT_GT(beats[0].second.health_rounds, 0u);
  Deliver(Ack{}, beats[0].first, 1);

  Find();  // raised: goes out at once, not at the next interval
  HealthTurn(10);
  beats = Heartbeats();
  ASSERT_EQ(beats.size(), 1u);
  const uint64_t raised = monitor_->version();
  EXPECT_EQ(beats[0].second.health_version, raised);
  ASSERT_EQ(beats[0].second.health.size(), 1u);
  EXPECT_EQ(beats[0].second.health[0].kind, "disk-low");

  // Not acknowledged (lost): the next heartbeats carry it again.
  for (int i = 0; i < 100; ++i) HealthTurn(10);
  beats = Heartbeats();
  ASSERT_EQ(beats.size(), 1u);
  EXPECT_EQ(beats[0].second.health_version, raised);
  EXPECT_EQ(beats[0].second.health.size(), 1u);
  Deliver(Ack{}, beats[0].first, 1);

  // Acknowledged, and found again with only last_seen moving: not carried.
  for (int beat = 0; beat < 3; ++beat) {
    for (int i = 0; i < 100; ++i) HealthTurn(10);
    beats = Heartbeats();
    ASSERT_EQ(beats.size(), 1u);
    EXPECT_EQ(beats[0].second.health_version, 0u);
    EXPECT_TRUE(beats[0].second.health.empty());
    Deliver(Ack{}, beats[0].first, 1);
  }
  EXPECT_EQ(monitor_->version(), raised);

  // Cleared: an empty list with a version, so the coordinator drops it.
  findings_.clear();
  HealthTurn(10);
  beats = Heartbeats();
  ASSERT_EQ(beats.size(), 1u);
  EXPECT_GT(beats[0].second.health_version, raised);
  EXPECT_TRUE(beats[0].second.health.empty());
}

TEST_F(LinkHealthTest, AnAckOfAnOlderHeartbeatDoesNotAcknowledgeANewerList) {
  monitor_->Poll();
  Register(/*interval_ms=*/1000);
  for (int i = 0; i < 100; ++i) HealthTurn(10);
  auto before = Heartbeats();
  ASSERT_EQ(before.size(), 1u);  // carried no health
  Find();
  HealthTurn(10);
  ASSERT_EQ(Heartbeats().size(), 1u);  // carried the raise
  Deliver(Ack{}, before[0].first, 1);  // the older one's ack arrives late
  for (int i = 0; i < 100; ++i) HealthTurn(10);
  auto after = Heartbeats();
  ASSERT_EQ(after.size(), 1u);
  EXPECT_EQ(after[0].second.health_version, monitor_->version()) << "still unacknowledged";
}

TEST_F(LinkHealthTest, ChangesInQuickSuccessionAreSentAtMostEvery50Ms) {
  monitor_->Poll();
  Register(/*interval_ms=*/1000);
  Find("1");
  HealthTurn(10);
  ASSERT_EQ(Heartbeats().size(), 1u);
  Find("2");
  HealthTurn(10);
  EXPECT_TRUE(Heartbeats().empty()) << "10 ms after the last one";
  for (int i = 0; i < 4; ++i) HealthTurn(10);
  auto beats = Heartbeats();
  ASSERT_EQ(beats.size(), 1u);
  ASSERT_EQ(beats[0].second.health.size(), 1u);
  EXPECT_EQ(beats[0].second.health[0].message, "2");
}

TEST_F(LinkHealthTest, ARegistrationThatCarriedTheListCountsAsItsAcknowledgement) {
  Find();
  monitor_->Poll();
  Register(/*interval_ms=*/1000);  // the registration carried it and was answered
  for (int i = 0; i < 100; ++i) HealthTurn(10);
  auto beats = Heartbeats();
  ASSERT_EQ(beats.size(), 1u);
  EXPECT_EQ(beats[0].second.health_version, 0u);
}

}  // namespace
}  // namespace gpool::worker

namespace gpool::worker {
namespace {

// NodeHost alone (node_host.h): what it tells the Link about the node, and
// what it does when a part is absent (no exec manager, sampler or health).
class NodeHostTest : public LinkTest {};

TEST_F(NodeHostTest, WithOnlyATaskManagerItReportsTheNodeAndServesNoExec) {
  NodeHost host(NodeHostOptions{.tasks = tm_.get()});
  EXPECT_EQ(host.node().name, "n1");
  EXPECT_TRUE(host.TaskReports().empty());
  Heartbeat heartbeat;
  host.FillStatus(heartbeat);
  EXPECT_TRUE(heartbeat.running.empty());
  EXPECT_TRUE(heartbeat.usage.empty());
  EXPECT_TRUE(heartbeat.gpus.empty());
  EXPECT_EQ(host.health_version(), 0u);
  EXPECT_TRUE(host.health().empty());
  EXPECT_EQ(host.ExecStart(TaskExecStart{}).status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(host.ExecPoll(TaskExecPoll{}).status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(host.ExecSignal(TaskExecSignal{}).code(), StatusCode::kUnavailable);
  host.RenewLease(1, 2);  // no lease kept: nothing to call
}

TEST_F(NodeHostTest, LeaseRenewalsReachTheCallback) {
  std::vector<std::pair<int64_t, int64_t>> renewed;
  NodeHost host(NodeHostOptions{.tasks = tm_.get(),
                                .renew_lease = [&](int64_t sent, int64_t lease) { renewed.emplace_back(sent, lease); }});
  host.RenewLease(10, 5000);
  ASSERT_EQ(renewed.size(), 1u);
  EXPECT_EQ(renewed[0], (std::pair<int64_t, int64_t>{10, 5000}));
}

TEST_F(NodeHostTest, ABindGoesToTheTaskManagerAndShowsAsRunning) {
  NodeHost host(NodeHostOptions{.tasks = tm_.get()});
  BindTask bind;
  bind.task = TaskId{JobId(1), 0, 0};
  bind.command = {"true"};
  ASSERT_TRUE(host.Bind(bind).ok());
  tm_->Poll();
  Heartbeat heartbeat;
  host.FillStatus(heartbeat);
  ASSERT_EQ(heartbeat.running.size(), 1u);
  EXPECT_EQ(heartbeat.running[0], bind.task);
  EXPECT_FALSE(host.TaskReports().empty());
}

}  // namespace
}  // namespace gpool::worker

namespace gpool::worker {
namespace {

// A worker newer than its coordinator (a rolling upgrade that reached the
// workers first): the registration names only kinds every coordinator knows,
// a coordinator that says it knows more (RegisterNodeReply.health_kinds) is
// sent the list as it is with the next heartbeat, and an older one (no
// health_kinds) is never sent a kind it would refuse the heartbeat for.
class LinkHealthKindsTest : public LinkTest {
 protected:
  void SetUp() override {
    LinkTest::SetUp();
    monitor_ = std::make_unique<HealthMonitor>(&clock_, log_.logger());
    monitor_->Add(std::make_unique<testing::ScriptedCheck>(
        "repair", 10, std::vector<HealthKind>{HealthKind::kGpuReset}, &findings_));
    link_ = std::move(Link::Open(MakeOptions({.health = monitor_.get()})).value());
    findings_ = {HealthFinding{HealthKind::kGpuReset, "gpu/0", HealthSeverity::kFatal, "draining for a reset"}};
    monitor_->Poll();
  }
  // Registers with a coordinator that knows `kinds` health kinds (0: an
  // older one, which does not say) and returns the registration's list.
  std::vector<HealthCondition> RegisterWith(uint32_t kinds) {
    link_->Start();
    Out out = Take();
    const Envelope* env = out.First(MessageType::kRegisterNode);
    EXPECT_NE(env, nullptr);
    if (env == nullptr) return {};
    auto reg = env->Body<RegisterNode>();
    EXPECT_TRUE(reg.ok());
    RegisterNodeReply reply;
    reply.heartbeat_interval_ms = 100;
    reply.health_kinds = kinds;
    Deliver(reply, env->header().request_id, 1);
    EXPECT_TRUE(link_->registered());
    return reg.ok() ? reg->health : std::vector<HealthCondition>{};
  }
  // The health lists the heartbeats of the next `ms` carried (those without
  // one left out), each acknowledged at once as a live coordinator would.
  std::vector<std::vector<HealthCondition>> HeartbeatHealth(int64_t ms) {
    std::vector<std::vector<HealthCondition>> lists;
    for (int64_t t = 0; t < ms; t += 10) {  // the agent's turns: the monitor before the link
      clock_.Advance(10);
      monitor_->Poll();
      Turn();
      for (const Envelope& env : Take().frames) {
        if (env.type() != MessageType::kHeartbeat) continue;
        auto hb = env.Body<Heartbeat>();
        EXPECT_TRUE(hb.ok());
        if (hb.ok() && hb->health_version != 0) lists.push_back(hb->health);
        Deliver(Ack{}, env.header().request_id, 1);
      }
    }
    EXPECT_TRUE(link_->registered());
    return lists;
  }

  std::vector<HealthFinding> findings_;
  std::unique_ptr<HealthMonitor> monitor_;
};

TEST_F(LinkHealthKindsTest, ANewerCoordinatorIsSentTheListAsItIsRightAfterRegistering) {
  const auto registered = RegisterWith(static_cast<uint32_t>(kHealthKindCount));
  ASSERT_EQ(registered.size(), 1u);
  EXPECT_EQ(registered[0].kind, "gpu-lost") << "the registration does not know whom it reaches";
  EXPECT_EQ(registered[0].severity, "fatal");
  const auto lists = HeartbeatHealth(150);
  ASSERT_EQ(lists.size(), 1u) << "the first heartbeat carries the list, once";
  ASSERT_EQ(lists[0].size(), 1u);
  EXPECT_EQ(lists[0][0].kind, "gpu-reset");
  EXPECT_EQ(lists[0][0].message, "draining for a reset");
}

TEST_F(LinkHealthKindsTest, AnOlderCoordinatorIsNeverSentAKindItWouldRefuse) {
  const auto registered = RegisterWith(0);
  ASSERT_EQ(registered.size(), 1u);
  EXPECT_EQ(registered[0].kind, "gpu-lost");
  EXPECT_TRUE(HeartbeatHealth(300).empty()) << "it has the list it can read";
  // A change goes out, still in the kinds it knows.
  findings_ = {HealthFinding{HealthKind::kGpuReset, "gpu/1", HealthSeverity::kFatal, "draining for a reset"}};
  const auto lists = HeartbeatHealth(150);
  ASSERT_FALSE(lists.empty());
  for (const auto& list : lists) {
    EXPECT_EQ(CheckHealthConditions(list), "") << "the older coordinator refuses this heartbeat";
    ASSERT_EQ(list.size(), 1u);
    EXPECT_EQ(list[0].kind, "gpu-lost");
    EXPECT_EQ(list[0].device, "gpu/1");
  }
}

}  // namespace
}  // namespace gpool::worker
