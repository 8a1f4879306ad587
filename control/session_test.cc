// rGPU sessions in the state machine and as clients see them: each state a
// session can be in, from the facts apply records, and the lease's renewals.
#include <gtest/gtest.h>

#include "control/session_view.h"
#include "control/state/cluster_state.h"
#include "control/state/cluster_state_fixture.h"
#include "control/state/test_specs.h"
#include "control/views.h"
#include "protocol/model/task_report.h"

namespace gpool::control {
namespace {

using state::ApplyResult;
using state::Command;
using state::CommandBody;
using state::testing::MakeNode;

constexpr const char* kOwnerKey = "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7";

class SessionStateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(Do(state::RegisterNodeCmd{MakeNode("gpu-1", 2)}).status.ok());
  }
  ApplyResult Do(CommandBody body) {
    return state_.Apply(++index_, Command{static_cast<int64_t>(1000 * index_), std::move(body)});
  }
  uint64_t Open(const std::string& priority_class = "medium", uint64_t ttl_ms = 0) {
    JobSpec spec;
    spec.name = "session";
    spec.priority_class = priority_class;
    spec.max_runtime_ms = ttl_ms;
    spec.restart.policy = "never";
    spec.session.enabled = true;
    spec.session.owner_key = kOwnerKey;
    spec.session.idle_timeout_ms = 60'000;
    spec.session.lease_ms = 30'000;
    TaskGroupSpec group;
    group.command = {"gpool-rgpu-server"};
    group.resources = Resources{1, 1000, 1024};
    spec.tasks.push_back(group);
    ApplyResult r = Do(state::SubmitJobCmd{spec, ""});
    EXPECT_TRUE(r.status.ok()) << r.status.ToString();
    return r.job_id;
  }
  void Place(uint64_t job) {
    ApplyResult r = Do(state::ApplyPlanCmd{{state::PlanBind{JobId(job), 0, "gpu-1", {0}, 1000, 1024}}, {}});
    ASSERT_EQ(r.binds_applied, 1u);
  }
  ApplyResult Event(uint64_t job, const std::string& kind, int32_t code = 0, const std::string& message = "",
                    const std::string& endpoint = "") {
    TaskEvent event;
    event.node = "gpu-1";
    event.task = TaskId{JobId(job), 0, 0};
    event.kind = EnumFromName<TaskEventKind>(kind).value();
    event.exit_code = code;
    event.pid = 100;
    event.message = message;
    event.rgpu_endpoint = endpoint;
    event.rgpu_server_key = endpoint.empty() ? "" : kOwnerKey;
    return Do(state::TaskEventCmd{event});
  }
  SessionInfo View(uint64_t job) { return ToSessionInfo(*state_.FindJob(JobId(job)), 1000 * (index_ + 1)); }

  state::ClusterState state_;
  uint64_t index_ = 0;
};

TEST_F(SessionStateTest, GoesFromQueuedThroughPlacedToOpenWithItsEndpoint) {
  const uint64_t job = Open();
  EXPECT_EQ(View(job).state, "Queued");
  Place(job);
  EXPECT_EQ(View(job).state, "Placed");
  ASSERT_TRUE(Event(job, "started", 0, "", "tcp://127.0.0.1:4000").status.ok());
  const SessionInfo open = View(job);
  EXPECT_EQ(open.state, "Open");
  EXPECT_EQ(open.endpoint, "tcp://127.0.0.1:4000");
  EXPECT_EQ(open.server_key, kOwnerKey);
  EXPECT_EQ(open.node, "gpu-1");
  EXPECT_GT(open.gpu_ms, 0u);
}

// `gpool session show` reads GetJob, `session list` ListSessions: both count
// an open session's GPU-seconds to now (show once said 0.0 while list said 8).
TEST_F(SessionStateTest, EveryReadCountsAnOpenSessionsGpuSecondsSoFar) {
  const uint64_t job = Open();
  Place(job);
  Event(job, "started", 0, "", "tcp://127.0.0.1:4000");
  const state::JobRecord& record = *state_.FindJob(JobId(job));
  const int64_t now_ms = 1000 * static_cast<int64_t>(index_) + 7000;
  EXPECT_EQ(ToJobDetail(record, state_, now_ms).summary.session.gpu_ms, 8000u);  // placed at index 3
  EXPECT_EQ(ToExplanation(record, state_, now_ms).job.session.gpu_ms, 8000u);
  EXPECT_EQ(ToJobSummary(record, now_ms).session.gpu_ms, 8000u);
}

TEST_F(SessionStateTest, AnOwnersCloseIsClosingThenClosedWithItsGpuSeconds) {
  const uint64_t job = Open();
  Place(job);
  Event(job, "started", 0, "", "tcp://127.0.0.1:4000");
  ASSERT_TRUE(Do(state::CancelJobCmd{job, 0, ""}).status.ok());
  EXPECT_EQ(View(job).state, "Closing");
  Event(job, "exited", 143);
  const SessionInfo closed = View(job);
  EXPECT_EQ(closed.state, "Closed");
  EXPECT_EQ(closed.reason, "closed by its owner");
  EXPECT_EQ(closed.gpu_ms, 2000u);  // one GPU, started at index 3 (3 s), ended at index 5 (5 s)
}

TEST_F(SessionStateTest, ACloseWithAReasonIsAnExpiredLease) {
  const uint64_t job = Open();
  Place(job);
  Event(job, "started", 0, "", "tcp://127.0.0.1:4000");
  ASSERT_TRUE(Do(state::CancelJobCmd{job, 0, "lease expired: not renewed for 31 s"}).status.ok());
  Event(job, "exited", 143);
  EXPECT_EQ(View(job).state, "Expired");
  EXPECT_EQ(View(job).reason, "lease expired: not renewed for 31 s");
}

TEST_F(SessionStateTest, TheServersIdleExitIsExpiredAndItsTtlToo) {
  const uint64_t idle = Open();
  Place(idle);
  Event(idle, "started", 0, "", "tcp://127.0.0.1:4000");
  Event(idle, "exited", kRgpuIdleExitCode);
  EXPECT_EQ(View(idle).state, "Expired");
  EXPECT_NE(View(idle).reason.find("idle"), std::string::npos) << View(idle).reason;

  const uint64_t ttl = Open("medium", 60'000);
  Place(ttl);
  Event(ttl, "started", 0, "", "tcp://127.0.0.1:4001");
  // Its server exits cleanly on SIGTERM: only the worker's word says why.
  Event(ttl, "exited", 0, "stopped by the worker: time limit");
  EXPECT_EQ(View(ttl).state, "Expired");
  EXPECT_NE(View(ttl).reason.find("TTL"), std::string::npos) << View(ttl).reason;
}

TEST_F(SessionStateTest, APreemptedSessionEndsInsteadOfBeingRequeued) {
  const uint64_t session = Open("low");
  Place(session);
  Event(session, "started", 0, "", "tcp://127.0.0.1:4000");
  JobSpec high = state::MakeJob("train", 1, 2);
  high.priority_class = "high";
  const uint64_t train = Do(state::SubmitJobCmd{high, ""}).job_id;
  state::ApplyPlanCmd plan;
  plan.evictions.push_back(state::PlanEviction{JobId(session), 0, JobId(train), "preempted by job 2 (high)"});
  ASSERT_TRUE(Do(plan).status.ok());
  Event(session, "exited", 143);
  const state::JobRecord* job = state_.FindJob(JobId(session));
  EXPECT_TRUE(IsTerminal(job->state));
  EXPECT_EQ(job->tasks.size(), 1u);
  EXPECT_EQ(job->tasks[0].id.attempt, 0u);  // not requeued as a next attempt
  EXPECT_EQ(View(session).state, "Preempted");
  EXPECT_NE(View(session).reason.find("job " + std::to_string(train)), std::string::npos) << View(session).reason;
}

TEST_F(SessionStateTest, ALostNodeFailsTheSession) {
  const uint64_t job = Open();
  Place(job);
  Event(job, "started", 0, "", "tcp://127.0.0.1:4000");
  ASSERT_TRUE(Do(state::NodeStateCmd{"gpu-1", NodeState::kNotReady}).status.ok());
  EXPECT_EQ(View(job).state, "Open");  // NotReady: its client may still reach it
  ASSERT_TRUE(Do(state::NodeLostCmd{"gpu-1", 1000}).status.ok());
  EXPECT_EQ(View(job).state, "Failed");
  EXPECT_FALSE(View(job).reason.empty());
}

TEST_F(SessionStateTest, RenewalsMoveTheLeaseAndStopWhenItEnds) {
  const uint64_t job = Open();
  const int64_t opened = View(job).renew_ms;
  ASSERT_TRUE(Do(state::RenewSessionCmd{job}).status.ok());
  EXPECT_GT(View(job).renew_ms, opened);
  ASSERT_TRUE(Do(state::CancelJobCmd{job, 0, ""}).status.ok());
  EXPECT_EQ(View(job).state, "Closed");
  EXPECT_EQ(View(job).reason, "closed before it was placed");
  EXPECT_EQ(Do(state::RenewSessionCmd{job}).status.code(), StatusCode::kFailedPrecondition);
  const uint64_t plain = Do(state::SubmitJobCmd{state::MakeJob("train", 1, 1), ""}).job_id;
  EXPECT_EQ(Do(state::RenewSessionCmd{plain}).status.code(), StatusCode::kNotFound);
  EXPECT_TRUE(ToSessionInfo(*state_.FindJob(JobId(plain))).state.empty());
}

// A snapshot keeps what the session learnt: a new leader's restored state
// shows the same endpoint and renewal.
TEST_F(SessionStateTest, ItsRuntimeSurvivesASnapshot) {
  const uint64_t job = Open();
  Place(job);
  Event(job, "started", 0, "", "tcp://127.0.0.1:4000");
  auto bytes = state_.Snapshot();
  state::ClusterState restored;
  ASSERT_TRUE(restored.Restore(bytes).ok());
  const SessionInfo before = View(job);
  const SessionInfo after = ToSessionInfo(*restored.FindJob(JobId(job)), 1000 * (index_ + 1));
  EXPECT_EQ(after.state, "Open");
  EXPECT_EQ(after.endpoint, before.endpoint);
  EXPECT_EQ(after.renew_ms, before.renew_ms);
}

}  // namespace
}  // namespace gpool::control
