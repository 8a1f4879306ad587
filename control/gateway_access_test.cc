// Who may do what, through the gateway: the permission matrix (every client
// request kind x every role x own and others' objects), owners set from the
// authenticated user, secrets hidden, bootstrap once, and the audit stream.
#include <array>
#include <chrono>
#include <functional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "control/gateway_fixture.h"
#include "protocol/base/sha256.h"
#include "protocol/message_type.h"
#include "protocol/messages_admin.h"
#include "protocol/messages_client.h"
#include "protocol/messages_common.h"
#include "protocol/messages_enrolment.h"
#include "protocol/messages_exec.h"
#include "protocol/messages_nodes.h"
#include "protocol/messages_snapshot.h"
#include "protocol/messages_users.h"
#include "protocol/model/node_update.h"
#include "protocol/model/probe.h"
#include "protocol/model/queue_update.h"
#include "protocol/model/users.h"

namespace gpool::control {
namespace {

constexpr char kKeyNobody[] = "q<}[=BP5Fg0&d9b3K0O[x&rH]jvR2Gb5t=u]Wyr!";

class GatewayAccessTest : public GatewayTest {
 public:
  using GatewayTest::SendAs;
  using GatewayTest::Last;
  using GatewayTest::ErrorOf;

 protected:
  GatewayAccessTest() {
    AddRoleTree();
    AddUser("nobody", kKeyNobody, {});
    Apply(state::RegisterNodeCmd{OneGpuNode("n1"), {}});
    own_job_ = AddJob("mem", "ml-a");     // a job of the member, in its queue
    other_job_ = AddJob("other", "ml-a");  // someone else's, in the member's queue
    far_job_ = AddJob("other", "web");     // someone else's, in a queue nobody but admin covers
  }

  uint64_t AddJob(const std::string& user, const std::string& queue) {
    JobSpec spec = OneGpuJob();
    spec.user = user;
    spec.queue = queue;
    spec.tasks[0].env["HF_TOKEN"] = "secret-of-" + user;
    uint64_t id = 0;
    // A Z85-shaped exec key of this job's own (the gateway derives it from the token).
    std::string exec_key = "exec-key-" + user + "-" + std::to_string(state_.jobs().size());
    exec_key.resize(40, '.');
    proposer_.Propose(state::SubmitJobCmd{spec, "", "exec-token-" + user, exec_key},
                      [&](const state::ApplyResult& r) { id = r.job_id; });
    return id;
  }
  static Principal As(const std::string& name, const std::string& key) {
    return Principal{Principal::Kind::kUser, name, key};
  }
  // The last reply was not a PermissionDenied (or any refusal of who asked).
  bool LastAllowed() {
    Envelope env = Last();
    if (env.type() != MessageType::kErrorReply) return true;
    auto error = env.Body<ErrorReply>();
    return error.ok() && error->code != "PermissionDenied" && error->code != "Unauthenticated";
  }

  uint64_t own_job_ = 0;
  uint64_t other_job_ = 0;
  uint64_t far_job_ = 0;
};

struct Case {
  std::string name;
  std::function<void(GatewayAccessTest&, const Principal&)> send;
  // Expected for admin, queue-admin of ml, member of ml-a, viewer, no role,
  // and a task of the member's own job (its own exec key, while bound).
  std::array<bool, 6> allowed;
};

TEST_F(GatewayAccessTest, PermissionMatrixHasNoUnexpectedAllow) {
  // The member's job's task holds its binding: its exec key is admitted as that task.
  Apply(state::ApplyPlanCmd{{state::PlanBind{JobId(own_job_), 0, "n1", {0}, 0, 0}}, {}});
  const std::array<Principal, 6> callers = {
      As("root-admin", kKeyAdmin), As("qa", kKeyQa), As("mem", kKeyMember), As("view", kKeyViewer),
      As("nobody", kKeyNobody),
      Principal{Principal::Kind::kTask, std::to_string(own_job_) + ".0", state_.jobs().at(own_job_).exec_key}};
  auto job_spec = [](const std::string& queue) {
    JobSpec spec = OneGpuJob();
    spec.queue = queue;
    return spec;
  };
  auto queue_op = [](const std::string& op, const std::string& name, const std::string& parent) {
    QueueSpec spec;
    spec.name = name;
    spec.parent = parent;
    return UpdateQueue{EnumFromName<QueueOp>(op).value(), spec};
  };
  const uint64_t own = own_job_, other = other_job_, far = far_job_;
  const std::vector<Case> cases = {
      {"submit to a queue of one's own", [](auto& t, auto& p) { t.SendAs(p, SubmitJob{[] { JobSpec s = OneGpuJob(); s.queue = "ml-a"; return s; }(), ""}); },
       {true, true, true, false, false, false}},
      {"submit to another's queue", [&](auto& t, auto& p) { t.SendAs(p, SubmitJob{job_spec("web"), ""}); },
       {true, false, false, false, false, false}},
      {"cancel the member's own job", [&](auto& t, auto& p) { t.SendAs(p, CancelJob{own}); },
       {true, true, true, false, false, false}},
      {"cancel another's job in the member's queue", [&](auto& t, auto& p) { t.SendAs(p, CancelJob{other}); },
       {true, true, false, false, false, false}},
      {"cancel another's job elsewhere", [&](auto& t, auto& p) { t.SendAs(p, CancelJob{far}); },
       {true, false, false, false, false, false}},
      {"get the member's own job", [&](auto& t, auto& p) { t.SendAs(p, GetJob{own}); },
       {true, true, true, true, false, true}},
      {"exec into the member's own job",
       [&](auto& t, auto& p) { t.SendAs(p, ExecStart{std::to_string(own) + ".0", own, {"sh"}, 10'000, ""}); },
       {true, true, true, false, false, true}},
      {"get another's job in the member's queue", [&](auto& t, auto& p) { t.SendAs(p, GetJob{other}); },
       {true, true, true, true, false, false}},
      {"get another's job elsewhere", [&](auto& t, auto& p) { t.SendAs(p, GetJob{far}); },
       {true, false, false, true, false, false}},
      {"explain another's job elsewhere", [&](auto& t, auto& p) { t.SendAs(p, ExplainJob{far}); },
       {true, false, false, true, false, false}},
      {"read the member's own log", [&](auto& t, auto& p) { t.SendAs(p, GetTaskLog{own, 0}); },
       {true, true, true, false, false, false}},
      {"read another's log in the member's queue", [&](auto& t, auto& p) { t.SendAs(p, GetTaskLog{other, 0}); },
       {true, true, false, false, false, false}},
      {"exec into another's job in the member's queue",
       [&](auto& t, auto& p) { t.SendAs(p, ExecStart{std::to_string(other) + ".0", other, {"sh"}, 10'000, ""}); },
       {true, true, false, false, false, false}},
      {"list nodes", [](auto& t, auto& p) { t.SendAs(p, ListNodes{}); }, {true, true, true, true, false, false}},
      {"list queues", [](auto& t, auto& p) { t.SendAs(p, ListQueues{}); }, {true, true, true, true, false, false}},
      {"list events", [](auto& t, auto& p) { t.SendAs(p, ListEvents{}); }, {true, true, true, true, false, false}},
      {"cluster status", [](auto& t, auto& p) { t.SendAs(p, ClusterStatus{}); }, {true, true, true, true, true, true}},
      {"who am i", [](auto& t, auto& p) { t.SendAs(p, WhoAmI{}); }, {true, true, true, true, true, true}},
      {"cordon a node", [](auto& t, auto& p) { t.SendAs(p, UpdateNode{"n1", NodeUpdateOp::kCordon}); },
       {true, false, false, false, false, false}},
      {"create a queue below ml", [&](auto& t, auto& p) { t.SendAs(p, queue_op("create", "ml-c", "ml")); },
       {true, true, false, false, false, false}},
      {"change ml itself", [&](auto& t, auto& p) { t.SendAs(p, queue_op("update", "ml", "root")); },
       {true, false, false, false, false, false}},
      {"move a queue of ml out to web", [&](auto& t, auto& p) { t.SendAs(p, queue_op("update", "ml-b", "web")); },
       {true, false, false, false, false, false}},
      {"change web", [&](auto& t, auto& p) { t.SendAs(p, queue_op("update", "web", "root")); },
       {true, false, false, false, false, false}},
      {"report a probe", [](auto& t, auto& p) { t.SendAs(p, ReportProbe{ProbeKind::kGpu, {}}); },
       {true, false, false, false, false, false}},
      {"change replicas", [](auto& t, auto& p) { t.SendAs(p, ChangeReplicas{ReplicaOp::kRemove, 9}); },
       {true, false, false, false, false, false}},
      {"create a user",
       [](auto& t, auto& p) { t.SendAs(p, UpdateUser{UserOp::kCreate, UserSpec{"new-" + p.name, {}, -1, -1, {}}}); },
       {true, false, false, false, false, false}},
      {"list users", [](auto& t, auto& p) { t.SendAs(p, ListUsers{}); }, {true, false, false, false, false, false}},
      {"read the audit stream", [](auto& t, auto& p) { t.SendAs(p, ListAudit{}); },
       {true, false, false, false, false, false}},
      {"export a snapshot", [](auto& t, auto& p) { t.SendAs(p, ExportSnapshot{}); },
       {true, false, false, false, false, false}},
      {"list pending enrolments", [](auto& t, auto& p) { t.SendAs(p, Enrolment{EnrolmentOp::kListPending}); },
       {true, false, false, false, false, false}},
      {"mint a join token",
       [](auto& t, auto& p) { t.SendAs(p, Enrolment{.op = EnrolmentOp::kCreateToken, .ttl_ms = 60'000}); },
       {true, false, false, false, false, false}},
      {"bootstrap again", [](auto& t, auto& p) { t.SendAs(p, Bootstrap{UserSpec{"again"}}); },
       {true, false, false, false, false, false}},  // the admin passes the check; apply refuses (FailedPrecondition)
  };
  int unexpected_allows = 0;
  for (const auto& c : cases) {
    for (size_t who = 0; who < callers.size(); ++who) {
      c.send(*this, callers[who]);
      const bool allowed = LastAllowed();
      if (allowed && !c.allowed[who]) ++unexpected_allows;
      EXPECT_EQ(allowed, c.allowed[who]) << c.name << " as " << callers[who].name << ": "
                                         << ErrorOf(Last());
    }
  }
  EXPECT_EQ(unexpected_allows, 0);
}

// A join token is shown once, to the admin who minted it; listings carry
// neither it nor its hash, and bad requests change nothing.
TEST_F(GatewayAccessTest, AJoinTokenIsShownOnceAndListedWithoutItsHash) {
  const Principal admin = As("root-admin", kKeyAdmin);
  SendAs(admin, Enrolment{.op = EnrolmentOp::kCreateToken, .ttl_ms = 60'000, .labels = {{"rack", "r7"}}});
  const EnrolmentReply created = LastAs<EnrolmentReply>();
  ASSERT_FALSE(created.token.empty());
  ASSERT_EQ(created.tokens.size(), 1u);
  EXPECT_EQ(created.tokens[0].creator, "root-admin");
  EXPECT_TRUE(state_.CheckJoinToken(Sha256::Of(created.token), RequestContext::WallNowMs()).ok());
  SendAs(admin, Enrolment{.op = EnrolmentOp::kListTokens});
  const EnrolmentReply listed = LastAs<EnrolmentReply>();
  ASSERT_EQ(listed.tokens.size(), 1u);
  EXPECT_TRUE(listed.tokens[0].hash.empty());
  EXPECT_TRUE(listed.token.empty());
  SendAs(admin, Enrolment{.op = EnrolmentOp::kCreateToken, .ttl_ms = 0});
  EXPECT_EQ(LastError(), "InvalidArgument");
  SendAs(admin, Enrolment{.op = EnrolmentOp::kCreateToken, .ttl_ms = 60'000, .labels = {{"bad key!", "x"}}});
  EXPECT_EQ(LastError(), "InvalidArgument");
  SendAs(admin, Enrolment{.op = EnrolmentOp::kApprove, .node = "nowhere"});
  EXPECT_EQ(LastError(), "NotFound");
  EXPECT_EQ(state_.join_tokens().size(), 1u);
}

TEST_F(GatewayAccessTest, TheOwnerIsWhoTheTransportAuthenticated) {
  JobSpec spec = OneGpuJob();
  spec.queue = "ml-a";
  spec.user = "root-admin";  // a claim the gateway ignores
  SendAs(As("mem", kKeyMember), SubmitJob{spec, ""});
  const auto reply = LastAs<SubmitJobReply>();
  ASSERT_NE(state_.FindJob(JobId(reply.job_id)), nullptr);
  EXPECT_EQ(state_.FindJob(JobId(reply.job_id))->spec.user, "mem");
}

// Issue 48: a user without a uid (made before uids were allocated) may not
// submit: its tasks would run as the worker's --task-user, shared with every
// such user. An update without --uid gives it one from the range, and then it may.
TEST_F(GatewayAccessTest, AnOwnerWithoutAUidIsRefusedUntilItHasOne) {
  constexpr char kKeyOld[] = "Dq6T!gQ1w]r0Mn{(3b&Yy8Zz*Vv@Kk+Hh5Ll6Pp7";
  Apply(state::UpdateUserCmd{UpdateUser{UserOp::kCreate, UserSpec{"old", {kKeyOld}, -1, -1, {{Role::kMember, "ml-a"}}}}});
  JobSpec spec = OneGpuJob();
  spec.queue = "ml-a";
  const size_t jobs = state_.jobs().size();
  SendAs(As("old", kKeyOld), SubmitJob{spec, ""});
  EXPECT_EQ(ErrorOf(Last()).rfind("FailedPrecondition: user old has no uid to run tasks as", 0), 0u) << ErrorOf(Last());
  EXPECT_NE(ErrorOf(Last()).find("gpool admin user update old"), std::string::npos);
  EXPECT_EQ(state_.jobs().size(), jobs) << "refused, nothing changed";
  SendAs(As("root-admin", kKeyAdmin), UpdateUser{UserOp::kUpdate, UserSpec{"old"}});
  ASSERT_EQ(LastAs<UpdateUserReply>().user.uid, 200'000) << "the lowest free uid of the default --uid-range";
  SendAs(As("old", kKeyOld), SubmitJob{spec, ""}, 2);
  EXPECT_NE(state_.FindJob(JobId(LastAs<SubmitJobReply>().job_id)), nullptr);
}

TEST_F(GatewayAccessTest, OthersSeeAJobWithoutItsEnvAndListOnlyWhatTheyMayRead) {
  SendAs(As("mem", kKeyMember), GetJob{other_job_});
  EXPECT_TRUE(LastAs<GetJobReply>().spec.tasks[0].env.empty());
  SendAs(As("mem", kKeyMember), GetJob{own_job_});
  EXPECT_EQ(LastAs<GetJobReply>().spec.tasks[0].env.at("HF_TOKEN"), "secret-of-mem");
  SendAs(As("qa", kKeyQa), GetJob{other_job_});
  EXPECT_EQ(LastAs<GetJobReply>().spec.tasks[0].env.at("HF_TOKEN"), "secret-of-other");

  auto listed = [&](const std::string& name, const char* key) {
    SendAs(As(name, key), ListJobs{});
    std::set<uint64_t> ids;
    for (const auto& job : LastAs<ListJobsReply>().jobs) ids.insert(job.job_id);
    return ids;
  };
  EXPECT_EQ(listed("mem", kKeyMember), (std::set<uint64_t>{own_job_, other_job_}));
  EXPECT_EQ(listed("qa", kKeyQa), (std::set<uint64_t>{own_job_, other_job_}));
  EXPECT_EQ(listed("view", kKeyViewer), (std::set<uint64_t>{own_job_, other_job_, far_job_}));
  EXPECT_TRUE(listed("nobody", kKeyNobody).empty());
}

TEST_F(GatewayAccessTest, UnknownKeysAndOtherChannelsKeysAreUnauthenticated) {
  SendAs(As("ghost", kKeyNobody), ListJobs{});
  EXPECT_EQ(LastError(), "Unauthenticated");
  SendAs(As("mem", kKeyNobody), ListJobs{});  // a key that is not the member's
  EXPECT_EQ(LastError(), "Unauthenticated");
  SendAs(Principal{Principal::Kind::kNode, "n1", kKeyMember}, ListJobs{});
  EXPECT_EQ(LastError(), "Unauthenticated");
  SendAs(Principal{Principal::Kind::kBootstrap, "", kKeyNobody}, Bootstrap{UserSpec{"eve"}});
  EXPECT_EQ(LastError(), "Unauthenticated");  // the cluster has an admin: bootstrap is closed
}

// Enrolment decisions change who may run work (docs/operations.md 2.3:
// "Approving and rejecting need the admin role and are in the audit
// stream"): an approval, a join token made and a refusal are each audited,
// like every other mutating request; listing the pending ones is not.
TEST_F(GatewayAccessTest, EnrolmentDecisionsAreInTheAuditStream) {
  state::EnrolmentCmd seen;
  seen.op = state::EnrolmentCmdOp::kPending;
  seen.pending = PendingEnrolment{.node = "stranger", .fingerprint = "SHA256:0123456789abcdef",
                                  .key = "Hs]u1T0bN}9Wn&e4(9xYzP7lJ4k2Rr!sV8cQa3Fm"};
  Apply(seen);
  const Principal admin = As("root-admin", kKeyAdmin);
  const auto audited = [&](size_t from, const std::string& outcome) {
    for (size_t i = from; i < state_.audit().size(); ++i) {
      const AuditEntry& entry = state_.audit()[i];
      if (entry.request == "Enrolment" && entry.outcome == outcome) return &entry;
    }
    return static_cast<const AuditEntry*>(nullptr);
  };

  size_t before = state_.audit().size();
  SendAs(admin, Enrolment{.op = EnrolmentOp::kListPending});
  ASSERT_EQ(LastAs<EnrolmentReply>().pending.size(), 1u);
  EXPECT_EQ(state_.audit().size(), before) << "a read is not audited";

  before = state_.audit().size();
  SendAs(admin, Enrolment{.op = EnrolmentOp::kApprove, .node = "stranger"});
  ASSERT_EQ(LastAs<EnrolmentReply>().pending.size(), 1u);
  EXPECT_TRUE(state_.pending_enrolments().empty());
  ASSERT_NE(audited(before, "requested"), nullptr);
  const AuditEntry* approved = audited(before, "succeeded");
  ASSERT_NE(approved, nullptr);
  EXPECT_EQ(approved->user, "root-admin");
  EXPECT_NE(approved->target.find("stranger"), std::string::npos) << approved->target;

  before = state_.audit().size();
  SendAs(admin, Enrolment{.op = EnrolmentOp::kCreateToken, .ttl_ms = 60'000});
  ASSERT_FALSE(LastAs<EnrolmentReply>().token.empty());
  EXPECT_NE(audited(before, "succeeded"), nullptr);

  before = state_.audit().size();
  SendAs(As("mem", kKeyMember), Enrolment{.op = EnrolmentOp::kCreateToken, .ttl_ms = 60'000});
  EXPECT_EQ(LastError(), "PermissionDenied");
  const AuditEntry* refused = audited(before, "denied");
  ASSERT_NE(refused, nullptr);
  EXPECT_EQ(refused->user, "mem");
  EXPECT_EQ(state_.join_tokens().size(), 1u);
}

TEST_F(GatewayAccessTest, RefusalsAreAuditedWithinABudgetAndTheAuditIsForAdmins) {
  const size_t before = state_.audit().size();
  SendAs(As("mem", kKeyMember), CancelJob{far_job_});
  EXPECT_EQ(LastError(), "PermissionDenied");
  ASSERT_EQ(state_.audit().size(), before + 1);
  const AuditEntry& refused = state_.audit().back();
  EXPECT_EQ(refused.user, "mem");
  EXPECT_EQ(refused.request, "CancelJob");
  EXPECT_FALSE(refused.allowed);
  EXPECT_EQ(refused.outcome, "denied");
  EXPECT_NE(refused.reason.find("cancel-job"), std::string::npos) << refused.reason;
  // Reads refused are not audited; the entries are readable by admins only.
  SendAs(As("nobody", kKeyNobody), ListNodes{});
  EXPECT_EQ(state_.audit().size(), before + 1);
  SendAs(As("root-admin", kKeyAdmin), ListAudit{});
  const auto page = LastAs<ListAuditReply>();
  ASSERT_FALSE(page.entries.empty());
  EXPECT_EQ(page.entries.back().seq, refused.seq);

  // A flood of refusals in one second records the budget's worth, and the
  // next recorded one counts the rest.
  GatewayOptions options{.replica_id = "c-1"};
  options.audit_refusals_per_s = 3;
  Rebuild(options);
  const size_t start = state_.audit().size();
  for (int i = 0; i < 10; ++i) SendAs(As("mem", kKeyMember), CancelJob{far_job_});
  EXPECT_EQ(state_.audit().size(), start + 3);
  now_ms_ += 1000;
  SendAs(As("mem", kKeyMember), CancelJob{far_job_});
  EXPECT_NE(state_.audit().back().reason.find("and 7 refusals"), std::string::npos) << state_.audit().back().reason;
}

// Issue 48, finding 6: per-user limits on long-lived resources. A member
// may have max_sessions_per_user rGPU sessions open; one more is refused,
// typed, naming the limit, and opens nothing; admins are not held to it;
// a finished session makes room.
TEST_F(GatewayAccessTest, AUserIsHeldToItsSessionLimitAndAdminsAreNot) {
  GatewayOptions options{.replica_id = "c-1"};
  options.max_sessions_per_user = 2;
  Rebuild(options);
  const auto session = [] {
    JobSpec spec = OneGpuJob("session");
    spec.queue = "ml-a";
    spec.session.enabled = true;
    spec.session.lease_ms = 30'000;
    spec.tasks[0].command = {"gpool-rgpu-server"};
    return spec;
  };
  std::vector<uint64_t> opened;
  for (int i = 0; i < 2; ++i) {
    SendAs(As("mem", kKeyMember), SubmitJob{session(), ""});
    opened.push_back(LastAs<SubmitJobReply>().job_id);
  }
  const size_t jobs = state_.jobs().size();
  SendAs(As("mem", kKeyMember), SubmitJob{session(), ""});
  EXPECT_EQ(LastError(), "ResourceExhausted");
  EXPECT_NE(ErrorOf(Last()).find("mem has 2 sessions open, the most one user may (--max-sessions-per-user 2)"),
            std::string::npos)
      << ErrorOf(Last());
  EXPECT_EQ(state_.jobs().size(), jobs) << "a refusal opens nothing";
  // Ordinary jobs are not sessions: not counted.
  JobSpec plain = OneGpuJob();
  plain.queue = "ml-a";
  SendAs(As("mem", kKeyMember), SubmitJob{plain, ""});
  EXPECT_EQ(Last().type(), MessageType::kSubmitJobReply);
  // Admins are not held to it.
  for (int i = 0; i < 3; ++i) {
    SendAs(As("root-admin", kKeyAdmin), SubmitJob{session(), ""});
    EXPECT_EQ(Last().type(), MessageType::kSubmitJobReply) << i;
  }
  // A closed session gives its room back.
  SendAs(As("mem", kKeyMember), CancelJob{opened[0], 0});
  SendAs(As("mem", kKeyMember), SubmitJob{session(), ""});
  EXPECT_EQ(Last().type(), MessageType::kSubmitJobReply) << ErrorOf(Last());
}

TEST_F(GatewayAccessTest, AnInvalidAllowedRequestLeavesNoAuditEntry) {
  const size_t before = state_.audit().size();
  JobSpec spec = OneGpuJob();
  spec.queue = "ml-a";
  spec.tasks.clear();
  SendAs(As("mem", kKeyMember), SubmitJob{spec, ""});
  EXPECT_EQ(LastError(), "InvalidArgument");
  EXPECT_EQ(state_.audit().size(), before);
}

// A fresh cluster: the first key in becomes the admin, once.
class BootstrapTest : public GatewayTest {};

TEST_F(BootstrapTest, TheFirstKeyBecomesTheOnlyAdmin) {
  const Principal first{Principal::Kind::kBootstrap, "", kKeyAdmin};
  SendAs(first, SubmitJob{OneGpuJob(), ""});
  EXPECT_EQ(LastError(), "PermissionDenied");  // bootstrap may do nothing else
  SendAs(first, Bootstrap{UserSpec{"alice", {kKeyQa}, 1000, 1000, {}}});
  const auto made = LastAs<UpdateUserReply>().user;
  EXPECT_EQ(made.name, "alice");
  EXPECT_EQ(made.keys, std::vector<std::string>{kKeyAdmin});  // the caller's key, not the one it named
  EXPECT_EQ(made.roles, (std::vector<RoleGrant>{{Role::kAdmin, ""}}));
  SendAs(Principal{Principal::Kind::kBootstrap, "", kKeyQa}, Bootstrap{UserSpec{"mallory"}});
  EXPECT_EQ(LastError(), "Unauthenticated");
  EXPECT_EQ(state_.users().size(), 1u);
  // The last admin cannot be removed.
  SendAs(Principal{Principal::Kind::kUser, "alice", kKeyAdmin}, UpdateUser{UserOp::kDelete, UserSpec{"alice"}});
  EXPECT_EQ(LastError(), "FailedPrecondition");
}

}  // namespace
}  // namespace gpool::control

// Issue 48: a user's key rotated with a grace still speaks for the user
// until its deadline, on a connection opened before the rotation too, and is
// refused from then on (the record decides, by the gateway's wall clock) even
// though it is still in the record until the user's next change.
namespace gpool::control {
namespace {

TEST_F(GatewayAccessTest, ARotatedUserKeyIsRefusedOnceItsGraceHasEnded) {
  const int64_t wall_now = std::chrono::duration_cast<std::chrono::milliseconds>(
                               std::chrono::system_clock::now().time_since_epoch())
                               .count();
  // The proposer's commands are stamped 1'000'000 ms: a grace of an hour
  // past today's wall clock is still running, one of 1 ms ended long ago.
  UpdateUser running{UserOp::kRotateKey, UserSpec{"view", {"abcdefghij0123456789abcdefghij0123456789"}}};
  running.retire_keys = {kKeyViewer};
  running.grace_ms = static_cast<uint64_t>(wall_now - 1'000'000 + 3'600'000);
  Apply(state::UpdateUserCmd{running});
  SendAs(As("view", kKeyViewer), WhoAmI{});
  EXPECT_EQ(LastAs<WhoAmIReply>().user.name, "view");
  SendAs(As("view", "abcdefghij0123456789abcdefghij0123456789"), WhoAmI{});
  EXPECT_EQ(LastAs<WhoAmIReply>().user.name, "view");

  const std::string fresh = "0123456789abcdefghij0123456789abcdefghij";
  UpdateUser ended{UserOp::kRotateKey, UserSpec{"mem", {fresh}}};
  ended.retire_keys = {kKeyMember};
  ended.grace_ms = 1;
  Apply(state::UpdateUserCmd{ended});
  ASSERT_EQ(state_.FindUser("mem")->keys.size(), 2u);  // still held: dropped lazily
  SendAs(As("mem", kKeyMember), WhoAmI{});
  EXPECT_EQ(LastError(), "Unauthenticated");
  SendAs(As("mem", fresh), WhoAmI{});
  EXPECT_EQ(LastAs<WhoAmIReply>().user.name, "mem");
}

}  // namespace
}  // namespace gpool::control
