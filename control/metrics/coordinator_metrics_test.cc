// The coordinator's /metrics page rendered from a state built by commands:
// the job, queue, session and device families say what the records say, and
// the counts the state keeps as indexes (pending jobs by reason, jobs per
// queue, sessions, what each queue holds) follow jobs through their lives.
#include "control/metrics/coordinator_metrics.h"

#include <functional>

#include <gtest/gtest.h>

#include "control/state/cluster_state_fixture.h"
#include "control/state/test_specs.h"
#include "protocol/model/queue_update.h"

namespace gpool::control {
namespace {

using state::testing::MakeNode;

// The value of the series written exactly so (name and labels), or -1.
double Sample(const std::string& page, const std::string& series) {
  const std::string prefix = series + " ";
  for (size_t at = page.find(prefix); at != std::string::npos; at = page.find(prefix, at + 1)) {
    if (at == 0 || page[at - 1] == '\n') return std::stod(page.substr(at + prefix.size()));
  }
  return -1;
}

class CoordinatorMetricsTest : public state::ClusterStateTest {
 protected:
  void SetUp() override {
    ASSERT_TRUE(Do(state::RegisterNodeCmd{MakeNode("n1", 4), {}}).status.ok());
    UpdateQueue team;
    team.op = QueueOp::kCreate;
    team.spec.name = "team";
    team.spec.deserved = {{"gpu", 2}};
    team.spec.capability = {{"gpu", 4}};
    ASSERT_TRUE(Do(state::UpdateQueueCmd{team}).status.ok());
  }
  uint64_t SubmitTo(const std::string& queue, uint32_t gpus, bool session = false) {
    JobSpec spec = state::MakeJob("j", 1, gpus);
    spec.queue = queue;
    if (session) {
      spec.restart.policy = "never";
      spec.session.enabled = true;
      spec.session.owner_key = std::string(40, 'k');
      spec.session.lease_ms = 30'000;
    }
    const state::ApplyResult r = Do(state::SubmitJobCmd{spec, ""});
    EXPECT_TRUE(r.status.ok()) << r.status.ToString();
    return r.job_id;
  }
  std::string Render() { return RenderOf(state_); }
  // The page for `state`, with what `adjust` adds to the input (figures the
  // coordinator hands in beside the state).
  static std::string RenderOf(const state::ClusterState& state,
                              const std::function<void(CoordinatorMetricsInput&)>& adjust = {}) {
    ControlMetrics recorded(state);
    WorkerTable workers;
    CoordinatorMetricsInput input;
    input.state = &state;
    input.recorded = &recorded;
    input.workers = &workers;
    input.replica_id = "1";
    input.version = "test";
    input.leading = true;
    if (adjust) adjust(input);
    return RenderCoordinatorMetrics(input);
  }
};

TEST_F(CoordinatorMetricsTest, JobQueueAndSessionFamiliesFollowTheJobs) {
  const uint64_t runs = SubmitTo("team", 2);
  const uint64_t session = SubmitTo("team", 1, /*session=*/true);
  const uint64_t too_big = SubmitTo("default", 8);
  SubmitTo("default", 1);  // not yet considered by a cycle: no reason
  state::ApplyPlanCmd plan;
  plan.binds = {Bind(runs, 0, "n1", {0, 1}), Bind(session, 0, "n1", {2})};
  plan.pending = {state::PlanReasons{JobId(too_big), {topology::PendingReason{topology::PendingCode::kTaskGpusOverLargest}}, {}}};
  ASSERT_EQ(Do(plan).binds_applied, 2u);
  ASSERT_TRUE(Event(runs, 0, "n1", "started").status.ok());
  ASSERT_TRUE(Event(session, 0, "n1", "started").status.ok());  // its server not yet listening

  std::string page = Render();
  EXPECT_EQ(Sample(page, "gpool_jobs{state=\"Pending\"}"), 2) << page;
  EXPECT_EQ(Sample(page, "gpool_jobs{state=\"Running\"}"), 2);
  // Every pending job once: one under its first reason, one under "none".
  EXPECT_EQ(Sample(page, "gpool_jobs_pending{reason=\"task_gpus_over_largest\"}"), 1) << page;
  EXPECT_EQ(Sample(page, "gpool_jobs_pending{reason=\"none\"}"), 1);
  EXPECT_EQ(Sample(page, "gpool_queue_jobs{queue=\"default\",state=\"pending\"}"), 2);
  EXPECT_EQ(Sample(page, "gpool_queue_jobs{queue=\"team\",state=\"running\"}"), 2);
  EXPECT_EQ(Sample(page, "gpool_queue_jobs{queue=\"team\",state=\"pending\"}"), 0);
  EXPECT_EQ(Sample(page, "gpool_sessions{state=\"Placed\"}"), 1) << page;
  // What the queues hold, up the tree, and per model.
  EXPECT_EQ(Sample(page, "gpool_queue_allocated{queue=\"team\",resource=\"gpu\"}"), 3);
  EXPECT_EQ(Sample(page, "gpool_queue_allocated{queue=\"team\",resource=\"gpu/A100\"}"), 3);
  EXPECT_EQ(Sample(page, "gpool_queue_allocated{queue=\"root\",resource=\"gpu\"}"), 3);
  EXPECT_EQ(Sample(page, "gpool_queue_fair_share_ratio{queue=\"team\",resource=\"gpu\"}"), 1.5);
  EXPECT_EQ(Sample(page, "gpool_gpus{model=\"A100\",kind=\"whole\"}"), 3);
  EXPECT_EQ(Sample(page, "gpool_tasks_active"), 2);

  // The running job ends and the session is cancelled: nothing is held and
  // the queue's series go.
  ASSERT_TRUE(Event(runs, 0, "n1", "exited").status.ok());
  ASSERT_TRUE(Do(state::CancelJobCmd{session, 0, ""}).status.ok());
  ASSERT_TRUE(Event(session, 0, "n1", "exited").status.ok());
  page = Render();
  EXPECT_EQ(Sample(page, "gpool_jobs{state=\"Succeeded\"}"), 1) << page;
  EXPECT_EQ(Sample(page, "gpool_jobs{state=\"Running\"}"), 0);
  EXPECT_EQ(Sample(page, "gpool_queue_jobs{queue=\"team\",state=\"running\"}"), -1) << page;
  EXPECT_EQ(Sample(page, "gpool_queue_allocated{queue=\"team\",resource=\"gpu\"}"), -1);
  EXPECT_EQ(Sample(page, "gpool_queue_fair_share_ratio{queue=\"team\",resource=\"gpu\"}"), 0);
  EXPECT_EQ(Sample(page, "gpool_sessions{state=\"Placed\"}"), -1) << page;
  EXPECT_EQ(Sample(page, "gpool_sessions{state=\"Closed\"}"), 1);
  EXPECT_EQ(Sample(page, "gpool_tasks_active"), 0);

  // A restored replica renders the same page from its rebuilt indexes.
  state::ClusterState restored;
  ASSERT_TRUE(restored.Restore(state_.Snapshot()).ok());
  EXPECT_EQ(RenderOf(restored), page);
}

// Webhook sinks (issue 48): the leader's delivery figures per sink, so a
// receiver that refuses the sink (a certificate that does not verify) is
// seen on the page, not only in the log.
TEST_F(CoordinatorMetricsTest, WebhookSinksReportTheirRequestsAndEventsPerSink) {
  const std::string page = RenderOf(state_, [](CoordinatorMetricsInput& input) {
    input.webhooks["pager"] =
        WebhookSinkFigures{.attempts = 6, .failures = 1, .delivered = 5, .given_up = 0, .skipped = 2, .queued = 0};
    input.webhooks["wrong-ca"] = WebhookSinkFigures{.attempts = 6, .failures = 6, .given_up = 3, .queued = 4};
  });
  EXPECT_EQ(Sample(page, "gpool_webhook_requests_total{sink=\"pager\",result=\"ok\"}"), 5) << page;
  EXPECT_EQ(Sample(page, "gpool_webhook_requests_total{sink=\"pager\",result=\"failed\"}"), 1);
  EXPECT_EQ(Sample(page, "gpool_webhook_events_total{sink=\"pager\",outcome=\"delivered\"}"), 5);
  EXPECT_EQ(Sample(page, "gpool_webhook_events_total{sink=\"pager\",outcome=\"skipped\"}"), 2);
  EXPECT_EQ(Sample(page, "gpool_webhook_requests_total{sink=\"wrong-ca\",result=\"ok\"}"), 0);
  EXPECT_EQ(Sample(page, "gpool_webhook_requests_total{sink=\"wrong-ca\",result=\"failed\"}"), 6);
  EXPECT_EQ(Sample(page, "gpool_webhook_events_total{sink=\"wrong-ca\",outcome=\"given_up\"}"), 3);
  EXPECT_EQ(Sample(page, "gpool_webhook_queued_events{sink=\"wrong-ca\"}"), 4);
  // No sinks (a follower, or no [health.webhook] section): the families are
  // there, with no series.
  EXPECT_EQ(Sample(Render(), "gpool_webhook_requests_total{sink=\"pager\",result=\"ok\"}"), -1);
  EXPECT_NE(Render().find("# TYPE gpool_webhook_requests_total counter"), std::string::npos);
}

// Issue 48: the per-key limits' counts, as the coordinator hands them in.
TEST_F(CoordinatorMetricsTest, KeyLimitCountsAreGauges) {
  const std::string page = RenderOf(state_, [](CoordinatorMetricsInput& input) {
    input.key_limits = {.connections = 3, .inflight_requests = 17, .exec_streams = 2};
  });
  EXPECT_EQ(Sample(page, "gpool_client_connections_counted"), 3);
  EXPECT_EQ(Sample(page, "gpool_client_requests_in_flight"), 17);
  EXPECT_EQ(Sample(page, "gpool_exec_streams_open"), 2);
}

}  // namespace
}  // namespace gpool::control
