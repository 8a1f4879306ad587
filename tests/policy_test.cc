// Scheduling policy on a real cluster: a high-class job preempts a low-class
// one of its queue (which gets SIGTERM and its grace period, is requeued as
// the next attempt and finishes later); a queue reclaims the GPU it lent to
// a sibling that borrowed beyond its deserved share, unless the sibling's
// preemption policy forbids it; bad queue requests are refused with typed
// errors and change nothing.
//
// One worker with two simulated GPUs, so every GPU is contended.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "client/client.h"
#include "protocol/messages_admin.h"
#include "protocol/messages_client.h"
#include "protocol/model/queue_update.h"
#include "tests/local_cluster.h"
#include "tests/ready_cluster.h"

namespace gpool::testing {
namespace {

using namespace std::chrono_literals;

LocalClusterOptions TwoGpuNode() {
  LocalClusterOptions options;
  options.workers = 1;
  options.gpus_per_worker = 2;
  return options;
}

bool Contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

bool AnyContains(const std::vector<std::string>& lines, const std::string& part) {
  return std::any_of(lines.begin(), lines.end(), [&](const std::string& line) { return Contains(line, part); });
}

std::string Join(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& line : lines) out += (out.empty() ? "" : " | ") + line;
  return out;
}

class PolicyTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_NO_FATAL_FAILURE(StartReadyCluster(cluster_, client_)); }

  uint64_t Submit(JobSpec spec) {
    auto reply = client_->Submit(spec, "");
    EXPECT_TRUE(reply.ok()) << spec.name << ": " << reply.status().ToString();
    return reply.ok() ? reply->job_id : 0;
  }

  // Polls GetJob until `condition` holds; returns the last reply either way.
  Result<GetJobReply> WaitForJob(uint64_t job, const std::function<bool(const GetJobReply&)>& condition,
                                 std::chrono::milliseconds timeout = 20s) {
    Result<GetJobReply> last = Status::NotFound("never fetched");
    WaitFor(
        [&] {
          last = client_->GetJob(JobId(job));
          return last.ok() && condition(*last);
        },
        timeout);
    return last;
  }

  Result<GetJobReply> WaitForState(uint64_t job, const std::string& state, std::chrono::milliseconds timeout = 20s) {
    return WaitForJob(job, [&](const GetJobReply& r) { return r.summary.state == state; }, timeout);
  }

  // The job's one task is running with a pid (the worker reported it started).
  Result<GetJobReply> WaitForRunningTask(uint64_t job) {
    return WaitForJob(job, [](const GetJobReply& r) {
      return r.summary.state == "Running" && r.tasks.size() == 1 && r.tasks[0].state == "Running" && r.tasks[0].pid > 0;
    });
  }

  std::string Describe(uint64_t job) { return cluster_.Cli({"job", std::to_string(job)}).out; }

  Status CreateQueue(const std::string& name, const std::string& parent, Quota deserved, Quota capability = {}) {
    UpdateQueue request;
    request.op = QueueOp::kCreate;
    request.spec.name = name;
    request.spec.parent = parent;
    request.spec.deserved = std::move(deserved);
    request.spec.capability = std::move(capability);
    return client_->UpdateQueue(request).status();
  }

  const QueueSummary* FindQueue(const ListQueuesReply& queues, const std::string& name) {
    for (const auto& q : queues.queues) {
      if (q.spec.name == name) return &q;
    }
    return nullptr;
  }

  uint64_t Allocated(const std::string& queue, const std::string& resource) {
    auto queues = client_->ListQueues();
    if (!queues.ok()) return ~uint64_t{0};
    const QueueSummary* q = FindQueue(*queues, queue);
    if (q == nullptr) return ~uint64_t{0};
    auto it = q->allocated.find(resource);
    return it == q->allocated.end() ? 0 : it->second;
  }

  void CancelAndWait(const std::vector<uint64_t>& jobs) {
    for (uint64_t job : jobs) {
      auto cancelled = client_->CancelJob(JobId(job), 500);
      EXPECT_TRUE(cancelled.ok() || cancelled.status().code() == StatusCode::kFailedPrecondition)
          << cancelled.status().ToString();
    }
    for (uint64_t job : jobs) {
      auto done = WaitForJob(job, [](const GetJobReply& r) {
        auto state = JobStateFromString(r.summary.state);
        return state && IsTerminal(*state);
      });
      EXPECT_TRUE(done.ok() && IsTerminal(*JobStateFromString(done->summary.state))) << Describe(job);
    }
  }

  LocalCluster cluster_{TwoGpuNode()};
  std::unique_ptr<Client> client_;
};

TEST_F(PolicyTest, HighPriorityJobPreemptsALowOneWhichRequeuesAndFinishesLater) {
  const std::string ready = cluster_.dir() + "/low-ready";
  const std::string marker = cluster_.dir() + "/low-sigterm";
  const std::string release = cluster_.dir() + "/release-high";

  // Attempt 0 traps SIGTERM, records it, takes 0.2 s (well inside the 2 s
  // grace, with room for a loaded box) to "checkpoint", records that too and exits. Were it SIGKILLed
  // at once, "done" would never be written. Attempt 1 just finishes.
  JobSpec low = ShellJob("low", 2,
                         "if [ \"$GPOOL_TASK_ATTEMPT\" = 0 ]; then\n"
                         "  trap 'echo term >> \"$POLICY_MARKER\"; sleep 0.2; "
                         "echo done >> \"$POLICY_MARKER\"; exit 0' TERM\n"
                         "  echo ready > \"$POLICY_READY\"\n"
                         "  sleep 600 &\n"
                         "  wait\n"
                         "  echo wait-returned-without-trap >> \"$POLICY_MARKER\"\n"
                         "  exit 1\n"
                         "fi\n"
                         "echo \"rerun attempt=$GPOOL_TASK_ATTEMPT\"\n");
  low.priority_class = "low";
  low.tasks[0].env = {{"POLICY_MARKER", marker}, {"POLICY_READY", ready}};
  const uint64_t low_id = Submit(low);
  ASSERT_NE(low_id, 0u);
  auto running = WaitForRunningTask(low_id);
  ASSERT_TRUE(running.ok() && running->summary.state == "Running") << Describe(low_id);
  // The trap is installed before the high job arrives.
  ASSERT_TRUE(WaitFor([&] { return std::filesystem::exists(ready); }, 20s)) << Describe(low_id);
  ASSERT_EQ(running->tasks[0].attempt, 0u);
  const int64_t first_pid = running->tasks[0].pid;

  // The high job wants both GPUs and holds them until the test releases it,
  // so the low job's requeued state can be observed.
  JobSpec high = ShellJob("high", 2,
                          "i=0; while [ ! -f \"$POLICY_RELEASE\" ]; do i=$((i+1)); "
                          "[ $i -gt 600 ] && exit 7; sleep 0.05; done; echo high-done");
  high.priority_class = "high";
  high.tasks[0].env = {{"POLICY_RELEASE", release}};
  const uint64_t high_id = Submit(high);
  ASSERT_NE(high_id, 0u);

  // While the victim drains, ExplainJob says why the high job waits; then the
  // low task comes back as attempt 1, Pending.
  bool explained = false;
  std::vector<std::string> high_reasons;
  auto requeued = WaitForJob(low_id, [&](const GetJobReply& r) {
    if (!explained) {
      auto why = client_->ExplainJob(JobId(high_id));
      if (why.ok()) {
        high_reasons = why->reasons;
        explained = AnyContains(why->reasons, "preempt");
      }
    }
    return !r.tasks.empty() && r.tasks[0].attempt >= 1;
  });
  ASSERT_TRUE(requeued.ok()) << requeued.status().ToString();
  ASSERT_EQ(requeued->tasks[0].attempt, 1u)
      << "the low job was never evicted for the high one (PRODUCT BUG: SchedulerDriver::Tick drops the plan's "
         "evictions, see control/scheduler_driver.cc)\n"
      << Describe(low_id) << "\nhigh job:\n"
      << Describe(high_id);
  EXPECT_TRUE(explained) << "ExplainJob of the high job never mentioned preemption while its victim drained; last "
                            "reasons: "
                         << Join(high_reasons);
  const TaskInfo& victim = requeued->tasks[0];
  EXPECT_TRUE(Contains(victim.message, "preempted by job " + std::to_string(high_id)))
      << "the requeued task should say why it was stopped: " << victim.message;

  // The high job runs on the freed GPUs; the low job waits behind it.
  auto high_running = WaitForRunningTask(high_id);
  ASSERT_TRUE(high_running.ok() && high_running->summary.state == "Running") << Describe(high_id);
  EXPECT_EQ(high_running->tasks[0].gpu_indices.size(), 2u);
  auto low_waiting = client_->GetJob(JobId(low_id));
  ASSERT_TRUE(low_waiting.ok());
  EXPECT_EQ(low_waiting->summary.state, "Pending") << Describe(low_id);
  EXPECT_EQ(low_waiting->tasks[0].state, "Pending") << Describe(low_id);
  EXPECT_EQ(low_waiting->tasks[0].attempt, 1u);
  EXPECT_TRUE(WaitFor([&] { return !PidAlive(static_cast<pid_t>(first_pid)); }, 10s))
      << "the first attempt's process is still alive";

  // The victim got SIGTERM and its grace: the trap ran to the end.
  const std::string sigterm = ReadFile(marker);
  EXPECT_EQ(sigterm, "term\ndone\n")
      << "expected the trap to record SIGTERM and then finish within the grace period; got '" << sigterm << "'";

  WriteFile(release, "go\n");
  auto high_done = WaitForState(high_id, "Succeeded");
  ASSERT_TRUE(high_done.ok() && high_done->summary.state == "Succeeded") << Describe(high_id);
  EXPECT_EQ(high_done->tasks[0].attempt, 0u) << "a high job is never preempted";

  auto low_done = WaitForState(low_id, "Succeeded");
  ASSERT_TRUE(low_done.ok() && low_done->summary.state == "Succeeded") << Describe(low_id);
  EXPECT_EQ(low_done->tasks[0].state, "Succeeded");
  EXPECT_EQ(low_done->tasks[0].attempt, 1u);
  EXPECT_EQ(low_done->tasks[0].exit_code, 0);
  EXPECT_GE(low_done->tasks[0].start_ms, high_done->summary.finish_ms - 1000)
      << "the second attempt must start after the high job (clock skew allowance 1 s)";
  auto log = client_->GetTaskLog(JobId(low_id), 0, 4096);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  EXPECT_TRUE(Contains(log->data, "rerun attempt=1")) << "the worker must run attempt 1 with GPOOL_TASK_ATTEMPT=1: "
                                                      << log->data;
  EXPECT_EQ(ReadFile(marker), "term\ndone\n") << "the first attempt ran once; the second must not see SIGTERM";
}

TEST_F(PolicyTest, ReclaimReturnsALentGpuToItsOwningQueue) {
  ASSERT_TRUE(CreateQueue("team-a", "root", {{"gpu", 1}}).ok());
  ASSERT_TRUE(CreateQueue("team-b", "root", {{"gpu", 1}}).ok());

  auto sleeper = [](const std::string& name, const std::string& queue, const std::string& cls = "medium") {
    JobSpec spec = ShellJob(name, 1, "exec sleep 600");
    spec.queue = queue;
    spec.priority_class = cls;
    return spec;
  };
  // team-a takes its own GPU, then borrows team-b's idle one: only low-class
  // work may borrow (the only kind reclaim may take back), so a medium job
  // beyond the share waits and says why.
  const uint64_t a1 = Submit(sleeper("a1", "team-a"));
  ASSERT_NE(a1, 0u);
  auto a1_running = WaitForRunningTask(a1);
  ASSERT_TRUE(a1_running.ok() && a1_running->summary.state == "Running") << Describe(a1);
  const uint64_t medium = Submit(sleeper("a-medium", "team-a"));
  ASSERT_NE(medium, 0u);
  ASSERT_TRUE(WaitFor(
      [&] {
        auto job = client_->GetJob(JobId(medium));
        return job.ok() && Contains(job->summary.reason, "only low-class work may borrow");
      },
      10s))
      << Describe(medium);
  ASSERT_TRUE(client_->CancelJob(JobId(medium), 0).ok());
  const uint64_t a2 = Submit(sleeper("a2", "team-a", "low"));
  ASSERT_NE(a2, 0u);
  auto a2_running = WaitForRunningTask(a2);
  ASSERT_TRUE(a2_running.ok() && a2_running->summary.state == "Running")
      << "team-a may borrow beyond its deserved share while team-b is idle\n"
      << Describe(a2);
  EXPECT_EQ(Allocated("team-a", "gpu"), 2u);
  EXPECT_EQ(Allocated("team-b", "gpu"), 0u);
  const int64_t a1_pid = a1_running->tasks[0].pid;
  const int64_t a2_pid = a2_running->tasks[0].pid;

  // team-b wants its GPU back: the most recently placed team-a job goes.
  const uint64_t b1 = Submit(sleeper("b1", "team-b"));
  ASSERT_NE(b1, 0u);
  // Wait for either team-a job to be evicted, then check it was the right one.
  Result<GetJobReply> a1_seen = Status::NotFound("never fetched");
  Result<GetJobReply> a2_requeued = Status::NotFound("never fetched");
  const bool evicted = WaitFor(
      [&] {
        a1_seen = client_->GetJob(JobId(a1));
        a2_requeued = client_->GetJob(JobId(a2));
        auto requeued = [](const Result<GetJobReply>& r) {
          return r.ok() && !r->tasks.empty() && r->tasks[0].attempt >= 1;
        };
        return requeued(a1_seen) || requeued(a2_requeued);
      },
      20s);
  ASSERT_TRUE(evicted && a1_seen.ok() && a2_requeued.ok())
      << "team-b's job never reclaimed the GPU lent to team-a (PRODUCT BUG: SchedulerDriver::Tick drops the plan's "
         "evictions, see control/scheduler_driver.cc)\n"
      << Describe(a2) << "\nteam-b job:\n"
      << Describe(b1);
  ASSERT_EQ(a1_seen->tasks[0].attempt, 0u)
      << "the older team-a job was evicted; the most recently placed one should go\n"
      << Describe(a1);
  ASSERT_EQ(a2_requeued->tasks[0].attempt, 1u) << Describe(a2);
  EXPECT_TRUE(Contains(a2_requeued->tasks[0].message, "reclaimed by queue team-b"))
      << a2_requeued->tasks[0].message;

  auto b1_running = WaitForRunningTask(b1);
  ASSERT_TRUE(b1_running.ok() && b1_running->summary.state == "Running") << Describe(b1);
  EXPECT_TRUE(WaitFor([&] { return !PidAlive(static_cast<pid_t>(a2_pid)); }, 10s));

  // The older team-a job was not touched; the evicted one waits (team-a is
  // at its deserved share and team-b is not lending any more).
  auto a1_now = client_->GetJob(JobId(a1));
  ASSERT_TRUE(a1_now.ok());
  EXPECT_EQ(a1_now->summary.state, "Running");
  EXPECT_EQ(a1_now->tasks[0].attempt, 0u);
  EXPECT_EQ(a1_now->tasks[0].pid, a1_pid);
  EXPECT_TRUE(PidAlive(static_cast<pid_t>(a1_pid)));
  auto a2_now = client_->GetJob(JobId(a2));
  ASSERT_TRUE(a2_now.ok());
  EXPECT_EQ(a2_now->summary.state, "Pending") << Describe(a2);
  EXPECT_EQ(a2_now->tasks[0].state, "Pending");

  EXPECT_EQ(Allocated("team-b", "gpu"), 1u);
  EXPECT_EQ(Allocated("team-a", "gpu"), 1u);
  auto queues = client_->ListQueues();
  ASSERT_TRUE(queues.ok());
  const QueueSummary* team_b = FindQueue(*queues, "team-b");
  ASSERT_NE(team_b, nullptr);
  EXPECT_EQ(team_b->jobs_running, 1u);
  const QueueSummary* team_a = FindQueue(*queues, "team-a");
  ASSERT_NE(team_a, nullptr);
  EXPECT_EQ(team_a->jobs_running, 1u);
  EXPECT_EQ(team_a->jobs_pending, 1u);

  CancelAndWait({a1, a2, b1});
  EXPECT_TRUE(WaitFor([&] { return Allocated("team-a", "gpu") == 0 && Allocated("team-b", "gpu") == 0; }, 10s));
}

// A queue's preemption policy (issue 50): team-a borrows team-b's idle GPU
// with low work, then forbids other queues to take its low work: team-b's
// job waits and the borrowed GPU stays. Allowed again, reclaim takes it.
// Unknown policy values are typed errors that change nothing.
TEST_F(PolicyTest, AQueueThatForbidsReclaimingItsLowWorkKeepsIt) {
  ASSERT_TRUE(CreateQueue("team-a", "root", {{"gpu", 1}}).ok());
  ASSERT_TRUE(CreateQueue("team-b", "root", {{"gpu", 1}}).ok());
  auto sleeper = [](const std::string& name, const std::string& queue, const std::string& cls) {
    JobSpec spec = ShellJob(name, 1, "exec sleep 600");
    spec.queue = queue;
    spec.priority_class = cls;
    return spec;
  };
  const uint64_t a1 = Submit(sleeper("a1", "team-a", "medium"));
  ASSERT_NE(a1, 0u);
  ASSERT_TRUE(WaitForRunningTask(a1).ok()) << Describe(a1);
  const uint64_t a2 = Submit(sleeper("a2", "team-a", "low"));
  ASSERT_NE(a2, 0u);
  auto a2_running = WaitForRunningTask(a2);
  ASSERT_TRUE(a2_running.ok() && a2_running->summary.state == "Running") << Describe(a2);

  auto cli = cluster_.Cli({"queue", "update", "team-a", "--low-reclaimable", "false"});
  ASSERT_EQ(cli.exit_code, 0) << cli.out << cli.err;
  EXPECT_TRUE(Contains(cli.out, "low work not reclaimable")) << cli.out;
  // Unknown values are refused with a typed error, and change nothing.
  auto bad = cluster_.Cli({"queue", "update", "team-a", "--preempting-classes", "medium"});
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_TRUE(Contains(bad.err + bad.out, "medium' work never preempts")) << bad.out << bad.err;
  bad = cluster_.Cli({"queue", "update", "team-a", "--low-reclaimable", "maybe"});
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_TRUE(Contains(bad.err + bad.out, "'maybe' is not one of true, false")) << bad.out << bad.err;
  UpdateQueue raw;
  raw.op = QueueOp::kUpdate;
  raw.spec.name = "team-a";
  raw.spec.deserved = {{"gpu", 1}};
  raw.spec.preempting_classes = {"urgent"};
  EXPECT_EQ(client_->UpdateQueue(raw).status().code(), StatusCode::kInvalidArgument);
  auto queues = client_->ListQueues();
  ASSERT_TRUE(queues.ok());
  const QueueSummary* team_a = FindQueue(*queues, "team-a");
  ASSERT_NE(team_a, nullptr);
  EXPECT_FALSE(team_a->spec.low_reclaimable);
  EXPECT_EQ(team_a->spec.preempting_classes, (std::vector<std::string>{"high", "system"}));

  // team-b's job waits: the scheduler has weighed it (it says why) and
  // evicted nothing for it.
  const uint64_t b1 = Submit(sleeper("b1", "team-b", "medium"));
  ASSERT_NE(b1, 0u);
  std::vector<std::string> why;
  ASSERT_TRUE(WaitFor(
      [&] {
        auto explained = client_->ExplainJob(JobId(b1));
        if (explained.ok()) why = explained->reasons;
        return !why.empty();
      },
      20s))
      << Describe(b1);
  EXPECT_FALSE(AnyContains(why, "reclaim")) << Join(why);
  auto a2_kept = client_->GetJob(JobId(a2));
  ASSERT_TRUE(a2_kept.ok());
  EXPECT_EQ(a2_kept->summary.state, "Running") << Describe(a2);
  EXPECT_EQ(a2_kept->tasks[0].attempt, 0u) << Describe(a2);
  EXPECT_EQ(a2_kept->tasks[0].pid, a2_running->tasks[0].pid);
  EXPECT_EQ(Allocated("team-a", "gpu"), 2u);

  // Allowed again (the default), reclaim takes the borrowed GPU back.
  cli = cluster_.Cli({"queue", "update", "team-a", "--low-reclaimable", "true"});
  ASSERT_EQ(cli.exit_code, 0) << cli.out << cli.err;
  auto a2_requeued =
      WaitForJob(a2, [](const GetJobReply& r) { return !r.tasks.empty() && r.tasks[0].attempt >= 1; });
  ASSERT_TRUE(a2_requeued.ok() && a2_requeued->tasks[0].attempt >= 1) << Describe(a2);
  EXPECT_TRUE(Contains(a2_requeued->tasks[0].message, "reclaimed by queue team-b")) << a2_requeued->tasks[0].message;
  auto b1_running = WaitForRunningTask(b1);
  EXPECT_TRUE(b1_running.ok() && b1_running->summary.state == "Running") << Describe(b1);

  CancelAndWait({a1, a2, b1});
}

TEST_F(PolicyTest, BadQueueRequestsAreRefusedAndChangeNothing) {
  ASSERT_TRUE(CreateQueue("team-a", "root", {{"gpu", 1}}, {{"gpu", 2}}).ok());
  auto before = client_->ListQueues();
  ASSERT_TRUE(before.ok()) << before.status().ToString();
  auto specs = [](const ListQueuesReply& reply) {
    std::vector<QueueSpec> out;
    for (const auto& q : reply.queues) out.push_back(q.spec);
    return out;
  };
  ASSERT_NE(FindQueue(*before, "default"), nullptr);
  ASSERT_NE(FindQueue(*before, "team-a"), nullptr);

  // A parent that does not exist.
  EXPECT_EQ(CreateQueue("orphan", "no-such-parent", {}).code(), StatusCode::kNotFound);
  // The built-in queues cannot go.
  UpdateQueue remove_default;
  remove_default.op = QueueOp::kDelete;
  remove_default.spec.name = "default";
  EXPECT_EQ(client_->UpdateQueue(remove_default).status().code(), StatusCode::kFailedPrecondition);
  // deserved above capability, on create and on update.
  EXPECT_EQ(CreateQueue("greedy", "root", {{"gpu", 4}}, {{"gpu", 2}}).code(), StatusCode::kInvalidArgument);
  UpdateQueue raise;
  raise.op = QueueOp::kUpdate;
  raise.spec.name = "team-a";
  raise.spec.deserved = {{"gpu", 3}};
  raise.spec.capability = {{"gpu", 2}};
  EXPECT_EQ(client_->UpdateQueue(raise).status().code(), StatusCode::kInvalidArgument);
  // An unknown resource name.
  EXPECT_EQ(CreateQueue("odd", "root", {{"tpu", 1}}).code(), StatusCode::kInvalidArgument);
  // Creating one that exists; deleting one that does not.
  EXPECT_EQ(CreateQueue("team-a", "root", {}).code(), StatusCode::kAlreadyExists);
  UpdateQueue remove_missing;
  remove_missing.op = QueueOp::kDelete;
  remove_missing.spec.name = "no-such-queue";
  EXPECT_EQ(client_->UpdateQueue(remove_missing).status().code(), StatusCode::kNotFound);

  // A job for a queue that does not exist.
  auto jobs_before = client_->ListJobs(true, 100);
  ASSERT_TRUE(jobs_before.ok());
  JobSpec lost = ShellJob("lost", 0, "true");
  lost.queue = "no-such-queue";
  auto submitted = client_->Submit(lost, "");
  EXPECT_EQ(submitted.status().code(), StatusCode::kNotFound) << submitted.status().ToString();
  // A parent queue takes no jobs: make team-a one.
  ASSERT_TRUE(CreateQueue("team-a-child", "team-a", {{"gpu", 1}}).ok());
  JobSpec to_parent = ShellJob("to-parent", 0, "true");
  to_parent.queue = "team-a";
  EXPECT_EQ(client_->Submit(to_parent, "").status().code(), StatusCode::kInvalidArgument);
  // A child may not promise more than its parent can hold.
  EXPECT_EQ(CreateQueue("too-big-child", "team-a", {}, {{"gpu", 3}}).code(), StatusCode::kFailedPrecondition);
  // A queue with a child cannot be deleted.
  UpdateQueue remove_parent;
  remove_parent.op = QueueOp::kDelete;
  remove_parent.spec.name = "team-a";
  EXPECT_EQ(client_->UpdateQueue(remove_parent).status().code(), StatusCode::kFailedPrecondition);

  auto jobs_after = client_->ListJobs(true, 100);
  ASSERT_TRUE(jobs_after.ok());
  EXPECT_EQ(jobs_after->jobs.size(), jobs_before->jobs.size()) << "a refused submission created a job";

  // Nothing changed but the one child created on purpose.
  UpdateQueue remove_child;
  remove_child.op = QueueOp::kDelete;
  remove_child.spec.name = "team-a-child";
  ASSERT_TRUE(client_->UpdateQueue(remove_child).ok());
  auto after = client_->ListQueues();
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(specs(*after), specs(*before));
  for (const char* name : {"orphan", "greedy", "odd", "too-big-child"}) {
    EXPECT_EQ(FindQueue(*after, name), nullptr) << name << " was created although refused";
  }
  const QueueSummary* team_a = FindQueue(*after, "team-a");
  ASSERT_NE(team_a, nullptr);
  EXPECT_EQ(team_a->spec.deserved, (Quota{{"gpu", 1}})) << "a refused update changed the quotas";
  EXPECT_EQ(team_a->spec.capability, (Quota{{"gpu", 2}}));

  // The default queue still takes work.
  JobSpec ok = ShellJob("still-works", 0, "true");
  auto fine = client_->Submit(ok, "");
  ASSERT_TRUE(fine.ok()) << fine.status().ToString();
  auto done = WaitForState(fine->job_id, "Succeeded");
  EXPECT_TRUE(done.ok() && done->summary.state == "Succeeded") << Describe(fine->job_id);
}

// A task past its max_runtime is stopped by its worker (SIGTERM, which this
// one ignores, then SIGKILL after the job's grace), fails with "time limit"
// and is not restarted although its policy restarts failures.
TEST_F(PolicyTest, ATaskPastItsMaxRuntimeIsStoppedAndFailsWithTimeLimit) {
  JobSpec limited = ShellJob("limited", 1, "trap '' TERM\nsleep 600 &\nwhile :; do wait; done\n");
  limited.max_runtime_ms = 1'000;
  limited.grace_period_ms = 500;
  limited.restart = RestartSpec{"on-failure", 3};
  const uint64_t job = Submit(limited);
  ASSERT_NE(job, 0u);
  auto failed = WaitForState(job, "Failed");
  ASSERT_TRUE(failed.ok() && failed->summary.state == "Failed") << Describe(job);
  ASSERT_EQ(failed->tasks.size(), 1u);
  EXPECT_EQ(failed->tasks[0].attempt, 0u) << "not restarted: " << Describe(job);
  EXPECT_EQ(failed->tasks[0].signal, 9) << Describe(job);
  EXPECT_TRUE(Contains(failed->tasks[0].message, "time limit")) << Describe(job);
  EXPECT_TRUE(Contains(Describe(job), "time limit")) << Describe(job);
}

}  // namespace
}  // namespace gpool::testing
