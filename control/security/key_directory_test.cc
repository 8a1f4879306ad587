#include "control/security/key_directory.h"

#include <gtest/gtest.h>

#include "control/principal.h"
#include "protocol/security/curve_socket.h"
#include "protocol/security/keys.h"
#include "protocol/security/task_exec_key.h"
#include "protocol/security/handshake_probe.h"
#include "protocol/security/zap_handler.h"

namespace gpool::control {
namespace {

const std::string kAlice(40, 'a');
const std::string kBob(40, 'b');
const std::string kNodeKey(40, 'n');
const std::string kOther(40, 'o');

Principal Parsed(const std::optional<std::string>& user_id) {
  EXPECT_TRUE(user_id.has_value());
  auto principal = Principal::Parse(user_id.value_or(""));
  EXPECT_TRUE(principal.has_value()) << user_id.value_or("");
  return principal.value_or(Principal{});
}

TEST(KeyDirectory, ClientsAreRegisteredUsersOrTheBootstrapAdmin) {
  KeyDirectory directory;
  EXPECT_FALSE(directory.Authorize("clients", kAlice));
  directory.SetUsers({{kAlice, "alice"}});
  EXPECT_EQ(Parsed(directory.Authorize("clients", kAlice)), (Principal{Principal::Kind::kUser, "alice", kAlice}));
  EXPECT_FALSE(directory.Authorize("clients", kBob));
  directory.SetAdminKey(kBob);
  EXPECT_EQ(Parsed(directory.Authorize("clients", kBob)), (Principal{Principal::Kind::kUser, "admin", kBob}));
  // Replacing the users keeps the bootstrap admin.
  directory.SetUsers({});
  EXPECT_FALSE(directory.Authorize("clients", kAlice));
  EXPECT_TRUE(directory.Authorize("clients", kBob));
}

TEST(KeyDirectory, BootstrapAdmitsAnyClientKeyOnlyWhileOpen) {
  KeyDirectory directory;
  directory.SetBootstrapOpen(true);
  EXPECT_EQ(Parsed(directory.Authorize("clients", kAlice)).kind, Principal::Kind::kBootstrap);
  // Bootstrap is for clients only.
  EXPECT_FALSE(directory.Authorize("peers", kAlice));
  directory.SetBootstrapOpen(false);
  EXPECT_FALSE(directory.Authorize("clients", kAlice));
}

// A task's public exec key, as the worker's `gpool` presents it.
std::string TaskPublicKey(const std::string& job_secret, const TaskId& task) {
  auto secret = security::TaskExecSecret(job_secret, task);
  EXPECT_TRUE(secret.ok());
  auto pair = security::KeyPairOfSecret(secret.ok() ? *secret : std::string());
  EXPECT_TRUE(pair.ok()) << pair.status().ToString();
  return pair.ok() ? pair->public_key : std::string();
}

TEST(KeyDirectory, ALiveTasksExecKeyIsAdmittedAsThatTaskOnTheClientPortOnly) {
  const std::string job_secret = "rq:rm>vjOy/Ly<f^Y+PY%5Q-cR}&0G=u1T*Cn*lc";
  const TaskId first{JobId(7), 0, 0}, second{JobId(7), 1, 0}, retried{JobId(7), 0, 1};
  const std::string first_key = TaskPublicKey(job_secret, first);
  KeyDirectory directory;
  directory.SetBootstrapOpen(true);  // a task's key is a task's even while bootstrap is open
  directory.SetJobLiveTasks(7, {{first, job_secret}, {second, job_secret}});
  EXPECT_EQ(directory.task_keys(), 0u) << "derived at the first handshake, not on the loop";
  EXPECT_EQ(Parsed(directory.Authorize("clients", first_key)), (Principal{Principal::Kind::kTask, "7.0", first_key}));
  EXPECT_EQ(directory.task_keys(), 2u);
  EXPECT_EQ(Parsed(directory.Authorize("clients", TaskPublicKey(job_secret, second))).name, "7.1");
  EXPECT_FALSE(directory.Authorize("peers", first_key));
  directory.SetBootstrapOpen(false);
  EXPECT_FALSE(directory.Authorize("workers", first_key).has_value() &&
               Parsed(directory.Authorize("workers", first_key)).kind == Principal::Kind::kTask);
  // The next attempt of a task is not live yet, and the job's own secret is no task's key.
  EXPECT_FALSE(directory.Authorize("clients", TaskPublicKey(job_secret, retried)));
  auto job_pair = security::KeyPairOfSecret(job_secret);
  ASSERT_TRUE(job_pair.ok());
  EXPECT_FALSE(directory.Authorize("clients", job_pair->public_key));
  // Task 7.0 ended and came back as its next attempt: its old key is refused, the new one admitted.
  directory.SetJobLiveTasks(7, {{retried, job_secret}, {second, job_secret}});
  EXPECT_FALSE(directory.Authorize("clients", first_key));
  EXPECT_EQ(Parsed(directory.Authorize("clients", TaskPublicKey(job_secret, retried))).name, "7.0#1");
  // Another job's tasks replace nothing of job 7's; a full sync does.
  directory.SetJobLiveTasks(8, {{TaskId{JobId(8), 0, 0}, "another secret"}});
  EXPECT_TRUE(directory.Authorize("clients", TaskPublicKey(job_secret, second)));
  directory.SetLiveTasks({});
  EXPECT_FALSE(directory.Authorize("clients", TaskPublicKey(job_secret, second)));
  EXPECT_EQ(directory.task_keys(), 0u);
}

TEST(KeyDirectory, FirstUseAdmitsUnknownWorkerKeysAsNewNodes) {
  KeyDirectory directory(WorkerEnrolment::kFirstUse);
  EXPECT_EQ(Parsed(directory.Authorize("workers", kNodeKey)), (Principal{Principal::Kind::kNewNode, "", kNodeKey}));
  directory.EnrolNode("n1", kNodeKey);
  EXPECT_EQ(Parsed(directory.Authorize("workers", kNodeKey)), (Principal{Principal::Kind::kNode, "n1", kNodeKey}));
  // A foreign key is still a new node here: the registry refuses it the name n1.
  EXPECT_EQ(Parsed(directory.Authorize("workers", kOther)).kind, Principal::Kind::kNewNode);
}

TEST(KeyDirectory, AdminEnrolmentRefusesUnknownWorkerKeys) {
  KeyDirectory directory(WorkerEnrolment::kAdmin);
  EXPECT_FALSE(directory.Authorize("workers", kNodeKey));
  directory.EnrolNode("n1", kNodeKey);
  EXPECT_EQ(Parsed(directory.Authorize("workers", kNodeKey)).name, "n1");
  EXPECT_FALSE(directory.Authorize("workers", kOther));
  // Rotation: a new key for n1 retires the old one.
  directory.EnrolNode("n1", kOther);
  EXPECT_FALSE(directory.Authorize("workers", kNodeKey));
  EXPECT_EQ(Parsed(directory.Authorize("workers", kOther)).name, "n1");
  EXPECT_EQ(directory.KeyOfNode("n1"), kOther);
  directory.SetNodeKeys({{"n2", kNodeKey}});
  EXPECT_FALSE(directory.Authorize("workers", kOther));
  EXPECT_EQ(Parsed(directory.Authorize("workers", kNodeKey)).name, "n2");
}

TEST(KeyDirectory, PeersAreTheConfiguredReplicas) {
  KeyDirectory directory;
  directory.SetReplicas({{1, kAlice}, {2, kBob}});
  EXPECT_EQ(Parsed(directory.Authorize("peers", kBob)), (Principal{Principal::Kind::kReplica, "2", kBob}));
  EXPECT_FALSE(directory.Authorize("peers", kOther));
  directory.AddReplica(3, kOther);
  EXPECT_EQ(Parsed(directory.Authorize("peers", kOther)).name, "3");
  directory.RemoveReplica(2);
  EXPECT_FALSE(directory.Authorize("peers", kBob));
  // A replica's key is not a client's or a worker's.
  EXPECT_FALSE(directory.Authorize("clients", kAlice));
  EXPECT_FALSE(directory.Authorize("nonsense", kAlice));
}

// Admission (the default) lets an unknown key through the handshake as a new
// node: the registry then keeps it pending, with no work, until admitted.
TEST(KeyDirectory, AdmissionIsTheDefaultAndAdmitsUnknownKeysOnlyAsNewNodes) {
  KeyDirectory directory;
  EXPECT_EQ(Parsed(directory.Authorize("workers", kNodeKey)), (Principal{Principal::Kind::kNewNode, "", kNodeKey}));
  directory.EnrolNode("n1", kNodeKey);  // approved
  EXPECT_EQ(Parsed(directory.Authorize("workers", kNodeKey)), (Principal{Principal::Kind::kNode, "n1", kNodeKey}));
  EXPECT_FALSE(directory.Authorize("clients", kNodeKey));
}

TEST(WorkerEnrolmentNames, RoundTrip) {
  EXPECT_EQ(*WorkerEnrolmentFromName("admission"), WorkerEnrolment::kAdmission);
  EXPECT_EQ(WorkerEnrolmentName(WorkerEnrolment::kAdmission), "admission");
  EXPECT_EQ(*WorkerEnrolmentFromName("admin"), WorkerEnrolment::kAdmin);
  EXPECT_EQ(*WorkerEnrolmentFromName("first-use"), WorkerEnrolment::kFirstUse);
  EXPECT_EQ(WorkerEnrolmentFromName("open").status().code(), StatusCode::kInvalidArgument);
}

// The directory behind a real ZAP handler: what it admits is what the
// handshake admits, and updates from this thread reach the handler's.
TEST(KeyDirectoryZap, UpdatesReachTheHandshake) {
  zmq::context_t context(1);
  KeyDirectory directory;
  auto handler = security::ZapHandler::Start(
      context, [&directory](std::string_view domain, std::string_view key) { return directory.Authorize(domain, key); });
  ASSERT_TRUE(handler.ok());
  auto server_keys = security::GenerateKeyPair();
  auto client_keys = security::GenerateKeyPair();
  zmq::socket_t server(context, zmq::socket_type::router);
  server.set(zmq::sockopt::linger, 0);
  ASSERT_TRUE(security::MakeCurveServer(server, *server_keys, security::kClientsDomain).ok());
  server.bind("tcp://127.0.0.1:*");
  const std::string endpoint = server.get(zmq::sockopt::last_endpoint);
  auto probe = [&] { return *security::ProbeHandshake(context, endpoint, *client_keys, server_keys->public_key, 5000); };
  EXPECT_EQ(probe(), security::Handshake::kRefused);
  directory.SetUsers({{client_keys->public_key, "carol"}});
  EXPECT_EQ(probe(), security::Handshake::kAdmitted);
  directory.SetUsers({});
  EXPECT_EQ(probe(), security::Handshake::kRefused);
  server.close();
}

}  // namespace
}  // namespace gpool::control
