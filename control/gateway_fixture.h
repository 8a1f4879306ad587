// The Gateway over the fake ports (fake_ports.h), as the gateway tests drive
// it: frames in, replies recorded, commands applied at once.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "control/gateway.h"
#include "control/testing/fake_ports.h"
#include "protocol/message_type.h"
#include "protocol/messages_client.h"
#include "protocol/messages_common.h"
#include "protocol/model/queue_update.h"
#include "protocol/model/users.h"

namespace gpool::control {

// A body as a peer that spells `op` freely would send it: a string where
// this build has an enum, so tests can send a name the decoder must refuse.
template <MessageType Type>
struct RawOpBody {
  static constexpr MessageType kType = Type;
  std::string node;  // written only when set (UpdateNode's first field)
  std::string op;
  template <typename V>
  void Fields(V& v) {
    if (!node.empty()) v.Required("node", node);
    v.Required("op", op);
  }
};

class GatewayTest : public ::testing::Test {
 protected:
  GatewayTest() { Rebuild(GatewayOptions{.replica_id = "c-1", .client_address = "tcp://127.0.0.1:7400"}); }

  void Rebuild(GatewayOptions options) {
    gateway_ = std::make_unique<Gateway>(options, state_, workers_, relay_, outbox_, proposer_);
  }

  template <typename T>
  void Send(const T& body, uint64_t request_id = 1, std::string token = {}) {
    Header header{.request_id = request_id};
    header.token = std::move(token);
    gateway_->OnFrame("client", EncodeEnvelope(header, body), now_ms_);
  }
  // As the transport would deliver it from a connection authenticated as `principal`.
  template <typename T>
  void SendAs(const Principal& principal, const T& body, uint64_t request_id = 1) {
    Header header{.request_id = request_id};
    gateway_->OnFrame("client", EncodeEnvelope(header, body), now_ms_, principal);
  }

  Envelope Last() {
    EXPECT_FALSE(outbox_.sent.empty());
    if (outbox_.sent.empty()) return Envelope{};
    auto env = DecodeEnvelope(outbox_.sent.back().frame);
    EXPECT_TRUE(env.ok()) << env.status().ToString();
    return std::move(env).value();
  }
  template <typename T>
  T LastAs() {
    Envelope env = Last();
    EXPECT_EQ(env.type(), T::kType) << MessageTypeName(env.type()) << " " << ErrorOf(env);
    auto body = env.Body<T>();
    EXPECT_TRUE(body.ok()) << body.status().ToString();
    return body.ok() ? std::move(body).value() : T{};
  }
  static wire::Bytes Bytes(std::string_view text) {
    wire::Bytes bytes;
    bytes.assign(text);
    return bytes;
  }
  static std::string ErrorOf(const Envelope& env) {
    if (env.type() != MessageType::kErrorReply) return {};
    auto error = env.Body<ErrorReply>();
    return error.ok() ? error->code + ": " + error->message : error.status().ToString();
  }
  // The code of the last reply, which must be an error.
  std::string LastError() {
    Envelope env = Last();
    EXPECT_EQ(env.type(), MessageType::kErrorReply);
    auto error = env.Body<ErrorReply>();
    return error.ok() ? error->code : "undecodable";
  }

  // Applies a command as committed; it must succeed.
  void Apply(state::CommandBody body) {
    proposer_.Propose(std::move(body), [](const state::ApplyResult& r) {
      ASSERT_TRUE(r.status.ok()) << r.status.ToString();
    });
  }
  void AddUser(const std::string& name, const std::string& key, std::vector<RoleGrant> roles) {
    // Each its own uid: two users never share one (issue 48).
    const int64_t uid = 1000 + static_cast<int64_t>(state_.users().size());
    Apply(state::UpdateUserCmd{UpdateUser{UserOp::kCreate, UserSpec{name, {key}, uid, uid, std::move(roles)}}});
  }
  // The queues root -> ml -> {ml-a, ml-b} and root -> web, and one user per
  // role: root-admin (admin), qa (queue-admin of ml), mem (member of ml-a),
  // view (viewer), each with its key below.
  static constexpr char kKeyAdmin[] = "Yne@$w-vo<fVvi]a<NY6T1ed:M$fCG*[IaLV{hID";
  static constexpr char kKeyQa[] = "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7";
  static constexpr char kKeyMember[] = "JTKVSB%%)wK0E.X)V>+}o?pNmC{O&4W4b!Ni{Lh6";
  static constexpr char kKeyViewer[] = "k5fzb!DHw]MM=4NcxBq&O3pC?2A5.yWDzP])7W!7";
  void AddRoleTree() {
    for (const auto& [name, parent] : std::vector<std::pair<std::string, std::string>>{
             {"ml", "root"}, {"ml-a", "ml"}, {"ml-b", "ml"}, {"web", "root"}}) {
      QueueSpec spec;
      spec.name = name;
      spec.parent = parent;
      Apply(state::UpdateQueueCmd{UpdateQueue{QueueOp::kCreate, spec}});
    }
    AddUser("root-admin", kKeyAdmin, {{Role::kAdmin, ""}});
    AddUser("qa", kKeyQa, {{Role::kQueueAdmin, "ml"}});
    AddUser("mem", kKeyMember, {{Role::kMember, "ml-a"}});
    AddUser("view", kKeyViewer, {{Role::kViewer, ""}});
  }

  static JobSpec OneGpuJob(std::string name = "j") {
    JobSpec spec;
    spec.name = std::move(name);
    TaskGroupSpec group;
    group.command = {"true"};
    group.resources.gpus = 1;
    spec.tasks.push_back(group);
    return spec;
  }
  // Node n1 registered on peer-n1, and job 1's task bound to its GPU.
  void RunOneTaskOnN1() {
    proposer_.Propose(state::RegisterNodeCmd{OneGpuNode("n1"), {}}, [](const auto&) {});
    workers_.Connect("n1", "peer-n1", now_ms_, 2'000'000);  // later than any committed sighting
    Send(SubmitJob{OneGpuJob(), ""});
    proposer_.Propose(state::ApplyPlanCmd{{state::PlanBind{JobId(1), 0, "n1", {0}, 0, 0}}, {}},
                      [](const state::ApplyResult& r) { ASSERT_TRUE(r.status.ok()) << r.status.ToString(); });
  }

  state::ClusterState state_;
  WorkerTable workers_;
  RequestIds request_ids_;
  ImmediateProposer proposer_{state_};
  RecordingOutbox outbox_;
  WorkerRelay relay_{WorkerRelayOptions{.timeout_ms = 1000}, workers_, request_ids_, outbox_, proposer_};
  std::unique_ptr<Gateway> gateway_;
  int64_t now_ms_ = 100;
};

}  // namespace gpool::control
