#include "worker/link_fixture.h"

#include <csignal>
#include <random>

namespace gpool::worker {
namespace {

TEST_F(LinkTest, StartConnectsAndRegisters) {
  link_->Start();
  Out out = Take();
  ASSERT_EQ(out.actions.size(), 2u);
  EXPECT_EQ(out.actions[0].kind, LinkAction::Kind::kConnect);
  EXPECT_EQ(out.connects, std::vector<std::string>{"tcp://c1:7401"});
  ASSERT_EQ(out.frames.size(), 1u);
  auto reg = out.frames[0].Body<RegisterNode>();
  ASSERT_TRUE(reg.ok()) << reg.status().ToString();
  EXPECT_EQ(reg->node, node_);
  EXPECT_EQ(reg->worker_version, "test-1");
  EXPECT_TRUE(reg->tasks.empty());
  EXPECT_FALSE(link_->registered());
}

TEST_F(LinkTest, RegistrationBacksOffAndRotatesEndpointsWhenSilent) {
  link_->Start();
  Take();
  // With the jitter at its midpoint the delays are 100, 200, 400, 800, 1600,
  // 3200, 5000, 5000 ms. A retry after 3 s without an answer reconnects to
  // the next endpoint first.
  struct Expect {
    int64_t at_ms;
    const char* connect;  // nullptr: same socket
  };
  const std::vector<Expect> expected = {
      {100, nullptr}, {300, nullptr}, {700, nullptr}, {1500, nullptr}, {3100, "tcp://c2:7401"},
      {6300, "tcp://c1:7401"}, {11300, "tcp://c2:7401"}, {16300, "tcp://c1:7401"},
  };
  int64_t now = 0;
  for (const auto& e : expected) {
    Run(e.at_ms - 1 - now);
    EXPECT_TRUE(Take().actions.empty()) << "nothing before " << e.at_ms;
    clock_.Advance(1);
    now = e.at_ms;
    link_->Tick();
    Out out = Take();
    EXPECT_EQ(out.Count(MessageType::kRegisterNode), 1u) << "at " << e.at_ms;
    if (e.connect == nullptr) {
      EXPECT_TRUE(out.connects.empty()) << "at " << e.at_ms;
    } else {
      EXPECT_EQ(out.connects, std::vector<std::string>{e.connect}) << "at " << e.at_ms;
    }
  }
  EXPECT_EQ(link_->stats().register_attempts, expected.size() + 1);
  EXPECT_TRUE(log_.Contains("reconnecting to coordinator"));
}

TEST_F(LinkTest, RegistrationJitterIsWithinTwentyPercent) {
  random_ = 0.0;
  link_->Start();
  Take();
  clock_.Advance(79);
  link_->Tick();
  EXPECT_TRUE(Take().frames.empty());
  clock_.Advance(1);
  link_->Tick();
  EXPECT_EQ(Take().Count(MessageType::kRegisterNode), 1u);  // 100 ms * 0.8
}

TEST_F(LinkTest, HeartbeatsAtTheCoordinatorsInterval) {
  Register(500);
  EXPECT_EQ(link_->heartbeat_interval_ms(), 500);
  ASSERT_TRUE(tm_->Bind(MakeBind(7)).ok());
  clock_.Advance(499);
  Turn();
  EXPECT_EQ(Take().Count(MessageType::kHeartbeat), 0u);
  clock_.Advance(1);
  Turn();
  Out out = Take();
  ASSERT_EQ(out.Count(MessageType::kHeartbeat), 1u);
  auto hb = out.First(MessageType::kHeartbeat)->Body<Heartbeat>();
  ASSERT_TRUE(hb.ok());
  EXPECT_EQ(hb->node, "n1");
  EXPECT_EQ(hb->running, std::vector<TaskId>{(TaskId{JobId(7), 0, 0})});
  EXPECT_TRUE(hb->usage.empty()) << "no sampler, no usage";
}

// A sampler that returns what the test says and counts its calls.
class FakeGpuUsageSampler final : public GpuUsageSampler {
 public:
  std::map<int64_t, uint64_t> Sample() override {
    ++calls;
    return mib_by_pid;
  }
  std::map<int64_t, uint64_t> mib_by_pid;
  int calls = 0;
};

TEST_F(LinkTest, HeartbeatCarriesEachRunningTasksGpuMemory) {
  FakeGpuUsageSampler sampler;
  testing::TempDir proc;
  LinkOptions options = MakeOptions({.gpu_usage = &sampler, .proc_root = proc.path()});
  link_ = std::move(Link::Open(std::move(options)).value());
  Register(500);

  // Nothing runs yet: the heartbeat goes out without asking the sampler.
  clock_.Advance(500);
  Turn();
  ASSERT_EQ(Take().Count(MessageType::kHeartbeat), 1u);
  EXPECT_EQ(sampler.calls, 0);

  ASSERT_TRUE(tm_->Bind(MakeBind(7)).ok());
  ASSERT_TRUE(tm_->Bind(MakeBind(8)).ok());
  Turn();  // starts them: pids 1000 (job 7) and 1001 (job 8), each its own group
  ASSERT_EQ(tm_->RunningPids().size(), 2u);
  proc.Write("1500/stat", "1500 (python) S 1001 1001 1 0\n");  // job 8's child
  proc.Write("1600/stat", "1600 (other) S 1 1600 1600 0\n");   // not a task's
  sampler.mib_by_pid = {{1000, 512}, {1500, 100}, {1600, 50}, {4242, 9}};

  clock_.Advance(499);
  Turn();
  Turn();
  EXPECT_EQ(sampler.calls, 0) << "sampled only for a heartbeat";
  clock_.Advance(1);
  Turn();
  Out out = Take();
  ASSERT_EQ(out.Count(MessageType::kHeartbeat), 1u);
  EXPECT_EQ(sampler.calls, 1);
  auto hb = out.First(MessageType::kHeartbeat)->Body<Heartbeat>();
  ASSERT_TRUE(hb.ok()) << hb.status().ToString();
  EXPECT_EQ(hb->usage, (std::vector<TaskUsage>{{TaskId{JobId(7), 0, 0}, 512}, {TaskId{JobId(8), 0, 0}, 100}}));
  Deliver(Ack{}, 0, 1);  // the coordinator is alive

  // Job 7 exits: its usage is gone from the next heartbeat.
  launcher_.Exit(1000, 0);
  clock_.Advance(500);
  Turn();
  hb = Take().First(MessageType::kHeartbeat)->Body<Heartbeat>();
  ASSERT_TRUE(hb.ok());
  EXPECT_EQ(hb->usage, (std::vector<TaskUsage>{{TaskId{JobId(8), 0, 0}, 100}}));
  EXPECT_EQ(sampler.calls, 2);
}

TEST_F(LinkTest, SilenceForThreeIntervalsReconnectsAndRegisters) {
  Register(500);
  // Acks keep it alive.
  for (int i = 0; i < 10; ++i) {
    clock_.Advance(500);
    Turn();
    Deliver(Ack{}, 0, 1);
  }
  Take();
  Run(1499);
  EXPECT_TRUE(Take().connects.empty());
  clock_.Advance(1);
  Turn();
  Out out = Take();
  EXPECT_EQ(out.connects, std::vector<std::string>{"tcp://c2:7401"});
  EXPECT_EQ(out.Count(MessageType::kRegisterNode), 1u);
  EXPECT_FALSE(link_->registered());
  EXPECT_EQ(link_->stats().reconnects, 1u);
  // The backoff starts over: the next attempt is 100 ms later.
  clock_.Advance(100);
  Turn();
  EXPECT_EQ(Take().Count(MessageType::kRegisterNode), 1u);
}

// A fleet thread busy for seconds with a burst of binds, or a paused
// process, must not take its own silence for the coordinator's: it sent no
// heartbeats meanwhile, so there was nothing to answer.
TEST_F(LinkTest, AStallOfThisProcessIsNotTheCoordinatorsSilence) {
  Register(500);
  clock_.Advance(5000);  // no turns for ten intervals
  Turn();
  Out out = Take();
  EXPECT_TRUE(out.connects.empty());
  EXPECT_TRUE(link_->registered());
  EXPECT_EQ(out.Count(MessageType::kHeartbeat), 1u) << "it heartbeats at once instead";
  // Of the stall, one interval counts (as between two ordinary turns): still
  // unanswered 900 ms later is 1,400 ms of silence, short of three intervals.
  Run(900);
  EXPECT_TRUE(Take().connects.empty());
  Run(200);
  EXPECT_EQ(Take().connects, std::vector<std::string>{"tcp://c2:7401"}) << "real silence still counts";
}

TEST_F(LinkTest, SilenceDueSaysWhenTheNextTickWouldGiveUp) {
  EXPECT_FALSE(link_->SilenceDue()) << "not started";
  Register(500);
  EXPECT_FALSE(link_->SilenceDue());
  clock_.Advance(1499);
  EXPECT_FALSE(link_->SilenceDue());
  clock_.Advance(1);
  EXPECT_TRUE(link_->SilenceDue());
  Deliver(Ack{}, 0, 1);  // a frame read late still counts
  EXPECT_FALSE(link_->SilenceDue());
  Turn();
  EXPECT_TRUE(Take().connects.empty());
  EXPECT_TRUE(link_->registered());
}

TEST_F(LinkTest, NotFoundRegistersAgainAtOnce) {
  Register(1000);
  clock_.Advance(1000);
  Turn();
  Out hb = Take();
  ASSERT_EQ(hb.Count(MessageType::kHeartbeat), 1u);
  Deliver(ErrorReply{"NotFound", "unknown node n1", ""}, hb.frames[0].header().request_id, 1);
  Out out = Take();
  EXPECT_TRUE(out.connects.empty()) << "same socket";
  EXPECT_EQ(out.Count(MessageType::kRegisterNode), 1u);
  EXPECT_FALSE(link_->registered());
  Deliver(RegisterNodeReply{}, out.frames[0].header().request_id, 1);
  EXPECT_TRUE(link_->registered());
  EXPECT_EQ(link_->stats().registrations, 2u);
}

TEST_F(LinkTest, NotLeaderMovesToTheNextEndpointOnRetry) {
  link_->Start();
  Out first = Take();
  Deliver(ErrorReply{"NotLeader", "not the leader", ""}, first.frames[0].header().request_id, 1);
  EXPECT_TRUE(Take().actions.empty()) << "waits for the backoff";
  clock_.Advance(100);
  link_->Tick();
  Out out = Take();
  EXPECT_EQ(out.connects, std::vector<std::string>{"tcp://c2:7401"});
  EXPECT_EQ(out.Count(MessageType::kRegisterNode), 1u);
}

TEST_F(LinkTest, NotLeaderNamingTheLeaderGoesStraightThereEvenIfUnlisted) {
  link_->Start();
  Out first = Take();
  // A replica added after this worker started: not in its --coordinator list.
  Deliver(ErrorReply{"NotLeader", "not the leader", "tcp://c9:7401"}, first.frames[0].header().request_id, 1);
  clock_.Advance(100);
  link_->Tick();
  Out out = Take();
  EXPECT_EQ(out.connects, std::vector<std::string>{"tcp://c9:7401"});
  ASSERT_EQ(out.Count(MessageType::kRegisterNode), 1u);
  // It joins the rotation: a later silence moves on from it, not back to it.
  Deliver(ErrorReply{"NotLeader", "not the leader", "tcp://c1:7401"}, out.frames[0].header().request_id, 1);
  clock_.Advance(300);
  link_->Tick();
  EXPECT_EQ(Take().connects, std::vector<std::string>{"tcp://c1:7401"});
}

TEST_F(LinkTest, RegistrationRefusalIsLoggedAndRetried) {
  link_->Start();
  Out first = Take();
  Deliver(ErrorReply{"Unauthenticated", "bad token", ""}, first.frames[0].header().request_id, 1);
  EXPECT_TRUE(log_.Contains("error registration refused")) << log_.text();
  clock_.Advance(100);
  link_->Tick();
  Out retry = Take();
  EXPECT_EQ(retry.Count(MessageType::kRegisterNode), 1u);
  // The same refusal again (a node awaiting approval retries for hours):
  // logged at debug, not as another error.
  Deliver(ErrorReply{"Unauthenticated", "bad token", ""}, retry.frames[0].header().request_id, 1);
  const std::string text = log_.text();
  EXPECT_EQ(text.find("error registration refused"), text.rfind("error registration refused")) << text;
  EXPECT_TRUE(log_.Contains("debug registration refused")) << text;
}

TEST_F(LinkTest, BindIsAckedBeforeTheStartedEvent) {
  Register();
  Deliver(MakeBind(3, {1}), 77, 1);
  Turn();
  Out out = Take();
  ASSERT_EQ(out.frames.size(), 2u);
  EXPECT_EQ(out.frames[0].type(), MessageType::kAck);
  EXPECT_EQ(out.frames[0].header().request_id, 77u);
  EXPECT_EQ(out.frames[1].type(), MessageType::kTaskEvent);
  auto event = out.frames[1].Body<TaskEvent>();
  ASSERT_TRUE(event.ok());
  EXPECT_EQ(event->kind, TaskEventKind::kStarted);
  EXPECT_EQ(event->seq, 1u);
  EXPECT_EQ(event->node, "n1");
  ASSERT_EQ(launcher_.launched().size(), 1u);
}

TEST_F(LinkTest, DuplicateBindIsAckedAndNotRunTwice) {
  Register();
  Deliver(MakeBind(3), 10, 1);
  Turn();
  Deliver(MakeBind(3), 11, 1);
  Turn();
  Out out = Take();
  EXPECT_EQ(out.Count(MessageType::kAck), 2u);
  EXPECT_EQ(launcher_.launched().size(), 1u);
}

TEST_F(LinkTest, BadGpuIndexIsInvalidArgument) {
  Register();
  Deliver(MakeBind(3, {5}), 12, 1);
  Out out = Take();
  ASSERT_EQ(out.frames.size(), 1u);
  auto error = out.frames[0].Body<ErrorReply>();
  ASSERT_TRUE(error.ok());
  EXPECT_EQ(error->code, "InvalidArgument");
  EXPECT_NE(error->message.find("GPU 5 does not exist"), std::string::npos);
  EXPECT_EQ(out.frames[0].header().request_id, 12u);
}

TEST_F(LinkTest, EventsAreResentEverySecondUntilAcked) {
  Register();
  Deliver(MakeBind(4), 1, 1);
  Turn();
  Out first = Take();
  ASSERT_EQ(first.Count(MessageType::kTaskEvent), 1u);
  clock_.Advance(999);
  Deliver(Ack{}, 0, 1);
  Turn();
  EXPECT_EQ(Take().Count(MessageType::kTaskEvent), 0u);
  clock_.Advance(1);
  Turn();
  Out resent = Take();
  ASSERT_EQ(resent.Count(MessageType::kTaskEvent), 1u);
  EXPECT_EQ(resent.First(MessageType::kTaskEvent)->Body<TaskEvent>()->seq, 1u);
  TaskEventAck ack;
  ack.seq = 1;
  Deliver(ack, 0, 1);
  EXPECT_TRUE(tm_->Outbox().empty());
  clock_.Advance(1000);
  Deliver(Ack{}, 0, 1);
  Turn();
  EXPECT_EQ(Take().Count(MessageType::kTaskEvent), 0u);
}

// Resends back off (1, 2, 4, 8, then every 16 s): while the coordinator
// commits slowly, a worker resending every unacknowledged event each second
// fed the lag it was waiting on.
TEST_F(LinkTest, EventResendsBackOffToSixteenIntervals) {
  Register();
  Deliver(MakeBind(4), 1, 1);
  Turn();
  ASSERT_EQ(Take().Count(MessageType::kTaskEvent), 1u);
  std::vector<int64_t> resent_at;
  for (int64_t ms = 100; ms <= 60'000; ms += 100) {
    clock_.Advance(100);
    if (ms % 500 == 0) Deliver(Ack{}, 0, 1);  // heartbeats answered: the link stays up
    Turn();
    if (Take().Count(MessageType::kTaskEvent) > 0) resent_at.push_back(ms);
  }
  EXPECT_EQ(resent_at, (std::vector<int64_t>{1000, 3000, 7000, 15000, 31000, 47000}));
}

TEST_F(LinkTest, EventsWaitForRegistrationAndReportsCarryUnackedTasks) {
  Register(500);
  Deliver(MakeBind(5), 1, 1);
  Deliver(MakeBind(6), 2, 1);
  Turn();
  Take();
  launcher_.Exit(launcher_.launched()[1].pid, 2);
  Run(1490);
  Take();
  clock_.Advance(10);  // three intervals without a word: re-register on c2
  Turn();
  Out out = Take();
  ASSERT_EQ(out.Count(MessageType::kRegisterNode), 1u);
  EXPECT_EQ(out.Count(MessageType::kTaskEvent), 0u) << "events wait until the coordinator knows us";
  auto reg = out.First(MessageType::kRegisterNode)->Body<RegisterNode>();
  ASSERT_TRUE(reg.ok());
  ASSERT_EQ(reg->tasks.size(), 2u);
  EXPECT_EQ(reg->tasks[0].task.job.value(), 5u);
  EXPECT_EQ(reg->tasks[0].state, TaskState::kRunning);
  EXPECT_EQ(reg->tasks[1].state, TaskState::kFailed);
  EXPECT_EQ(reg->tasks[1].exit_code, 2);

  Deliver(RegisterNodeReply{}, out.First(MessageType::kRegisterNode)->header().request_id, 1);
  Out after = Take();
  EXPECT_EQ(after.Count(MessageType::kTaskEvent), 3u) << "two started, one exited";
}

TEST_F(LinkTest, StaleEpochIsRefusedAndChangesNothing) {
  Register(1000, /*epoch=*/5);
  EXPECT_EQ(link_->epoch(), 5u);
  Deliver(MakeBind(8), 20, 4);
  Turn();
  Out out = Take();
  ASSERT_EQ(out.frames.size(), 1u);
  auto error = out.frames[0].Body<ErrorReply>();
  ASSERT_TRUE(error.ok());
  EXPECT_EQ(error->code, "StaleEpoch");
  EXPECT_EQ(out.frames[0].header().request_id, 20u);
  EXPECT_TRUE(launcher_.launched().empty());
  EXPECT_TRUE(tm_->Running().empty());

  // Current epoch: accepted. Then a newer epoch raises the fence.
  Deliver(MakeBind(8), 21, 5);
  Turn();
  EXPECT_EQ(launcher_.launched().size(), 1u);
  Deliver(Ack{}, 0, 7);
  EXPECT_EQ(link_->epoch(), 7u);
  PreemptTask preempt;
  preempt.task = TaskId{JobId(8), 0, 0};
  Deliver(preempt, 22, 6);
  EXPECT_TRUE(launcher_.signals().empty());
  EXPECT_EQ(link_->stats().stale_epoch_refusals, 2u);
  Deliver(preempt, 23, 7);
  ASSERT_EQ(launcher_.signals().size(), 1u);
  EXPECT_EQ(launcher_.signals()[0].second, SIGTERM);
}

TEST_F(LinkTest, PreemptOfUnknownTaskIsAckedAndTombstoned) {
  Register();
  PreemptTask preempt;
  preempt.task = TaskId{JobId(9), 1, 0};
  Deliver(preempt, 30, 1);
  Deliver(MakeBind(9), 31, 1);  // index 0: unrelated
  BindTask late = MakeBind(9);
  late.task.index = 1;
  Deliver(late, 32, 1);
  Turn();
  Out out = Take();
  EXPECT_EQ(out.Count(MessageType::kAck), 3u);
  EXPECT_EQ(launcher_.launched().size(), 1u);
}

TEST_F(LinkTest, FetchLog) {
  Register();
  Deliver(MakeBind(10), 1, 1);
  Turn();
  Take();
  std::ofstream(launcher_.launched()[0].request.log_path) << "abcdef";
  FetchLog fetch;
  fetch.task = TaskId{JobId(10), 0, 0};
  fetch.max_bytes = 3;
  Deliver(fetch, 40, 0);  // a read: served whatever its epoch
  Out out = Take();
  ASSERT_EQ(out.frames.size(), 1u);
  auto reply = out.frames[0].Body<FetchLogReply>();
  ASSERT_TRUE(reply.ok()) << reply.status().ToString();
  EXPECT_EQ(reply->data, "def");
  EXPECT_EQ(reply->size, 6u);
  EXPECT_TRUE(reply->truncated);
  EXPECT_EQ(out.frames[0].header().request_id, 40u);

  fetch.task = TaskId{JobId(11), 0, 0};
  Deliver(fetch, 41, 1);
  out = Take();
  ASSERT_EQ(out.frames.size(), 1u);
  EXPECT_EQ(out.frames[0].Body<ErrorReply>()->code, "NotFound");
}

TEST_F(LinkTest, RequestsTheWorkerDoesNotServeGetUnknownType) {
  Register();
  Deliver(ListNodes{}, 50, 1);
  Out out = Take();
  ASSERT_EQ(out.frames.size(), 1u);
  EXPECT_EQ(out.frames[0].Body<ErrorReply>()->code, "UnknownType");
  Deliver(SubmitJobReply{}, 51, 1);  // a stray reply: logged, not answered
  EXPECT_TRUE(Take().frames.empty());
}

// Raw envelopes with chosen defects.
std::string RawEnvelope(uint32_t version, const std::string& type, uint64_t id, bool with_body,
                        const std::function<void(wire::Packer&)>& body) {
  msgpack::sbuffer buffer;
  wire::Packer p(buffer);
  p.BeginMap(with_body ? 5 : 4);
  p.Field("v", version);
  p.Field("type", type);
  p.Field("id", id);
  p.Field("epoch", uint64_t{1});
  if (with_body) {
    p.Key("body");
    body(p);
  }
  return std::string(buffer.data(), buffer.size());
}

TEST_F(LinkTest, UndecodableFramesAreAnsweredWhenTheyCarryARequestId) {
  Register();
  // Unknown type with an id.
  link_->Receive(RawEnvelope(1, "Bogus", 60, true, [](wire::Packer& p) { p.BeginMap(0); }));
  // A BindTask whose command is a number.
  link_->Receive(RawEnvelope(1, "BindTask", 61, true, [](wire::Packer& p) {
    p.BeginMap(3);
    p.Field("task", TaskId{JobId(1), 0, 0});
    p.Field("num_tasks", uint32_t{1});
    p.Field("command", uint32_t{5});
  }));
  // A future protocol version.
  link_->Receive(RawEnvelope(9, "BindTask", 62, true, [](wire::Packer& p) { p.BeginMap(0); }));
  // A reply with a bad body: logged, never answered.
  link_->Receive(RawEnvelope(1, "TaskEventAck", 63, true, [](wire::Packer& p) { p.BeginMap(0); }));
  // No body at all.
  link_->Receive(RawEnvelope(1, "PreemptTask", 64, false, nullptr));
  Out out = Take();
  ASSERT_EQ(out.frames.size(), 4u);
  std::vector<std::pair<uint64_t, std::string>> got;
  for (const auto& f : out.frames) got.emplace_back(f.header().request_id, f.Body<ErrorReply>()->code);
  EXPECT_EQ(got, (std::vector<std::pair<uint64_t, std::string>>{
                     {60, "UnknownType"}, {61, "Malformed"}, {62, "UnsupportedVersion"}, {64, "Malformed"}}));
  EXPECT_TRUE(launcher_.launched().empty());
  EXPECT_TRUE(log_.Contains("bad frame from coordinator")) << log_.text();
}

TEST_F(LinkTest, RandomAndTruncatedBytesNeverCrash) {
  Register();
  std::mt19937_64 rng(12345);
  uint64_t frames = link_->stats().frames_received;
  // Every prefix of a valid BindTask, and the frame with each byte flipped.
  Header header;
  header.request_id = 70;
  header.epoch = 1;
  BindTask bind = MakeBind(12, {0, 1});
  bind.env = {{"A", "b"}};
  const std::string valid = EncodeEnvelope(header, bind);
  for (size_t n = 0; n < valid.size(); ++n) {
    link_->Receive(std::string_view(valid).substr(0, n));
    ++frames;
  }
  for (size_t i = 0; i < valid.size(); ++i) {
    std::string flipped = valid;
    flipped[i] = static_cast<char>(flipped[i] ^ (1 << (rng() % 8)));
    link_->Receive(flipped);
    ++frames;
  }
  // Random bytes, some starting with a msgpack map marker.
  for (int i = 0; i < 5000; ++i) {
    std::string junk(rng() % 200, '\0');
    for (char& c : junk) c = static_cast<char>(rng());
    if (i % 2 == 0 && !junk.empty()) junk[0] = static_cast<char>(0x80 | (rng() % 16));
    link_->Receive(junk);
    ++frames;
  }
  Turn();
  Take();
  EXPECT_EQ(link_->stats().frames_received, frames);
  EXPECT_GT(link_->stats().decode_errors, 5000u);
  EXPECT_TRUE(log_.Contains("bad frame from coordinator"));
  EXPECT_TRUE(log_.Contains("suppressed")) << "the log is rate-limited";
  // Still fully working (a flipped byte may have raised the epoch).
  Deliver(MakeBind(13), 80, link_->epoch());
  Turn();
  Out out = Take();
  EXPECT_EQ(out.Count(MessageType::kAck), 1u);
  EXPECT_EQ(out.Count(MessageType::kTaskEvent), 1u);
}

TEST(LinkOpenTest, RequiresEndpointsHostAndClock) {
  LinkOptions options;
  EXPECT_EQ(Link::Open(options).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace gpool::worker
