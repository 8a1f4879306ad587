#include "control/state/commands.h"

#include "protocol/messages_client.h"
#include "protocol/messages_usage.h"
#include "protocol/messages_users.h"
#include "protocol/messages_worker.h"
#include "protocol/model/node_update.h"
#include "protocol/model/probe.h"
#include "protocol/model/queue_update.h"
#include "protocol/model/task_report.h"
#include "protocol/model/users.h"
#include "protocol/wire.h"

namespace gpool::state {
namespace {

template <typename T>
struct Named;
template <>
struct Named<RegisterNodeCmd> { static constexpr std::string_view kName = "RegisterNode"; };
template <>
struct Named<NodeStateCmd> { static constexpr std::string_view kName = "NodeState"; };
template <>
struct Named<SubmitJobCmd> { static constexpr std::string_view kName = "SubmitJob"; };
template <>
struct Named<CancelJobCmd> { static constexpr std::string_view kName = "CancelJob"; };
template <>
struct Named<ApplyPlanCmd> { static constexpr std::string_view kName = "ApplyPlan"; };
template <>
struct Named<TaskEventCmd> { static constexpr std::string_view kName = "TaskEvent"; };
template <>
struct Named<UpdateNodeCmd> { static constexpr std::string_view kName = "UpdateNode"; };
template <>
struct Named<UpdateQueueCmd> { static constexpr std::string_view kName = "UpdateQueue"; };
template <>
struct Named<RefuseBindCmd> { static constexpr std::string_view kName = "RefuseBind"; };
template <>
struct Named<NodeLostCmd> { static constexpr std::string_view kName = "NodeLost"; };
template <>
struct Named<NodeHealthCmd> { static constexpr std::string_view kName = "NodeHealth"; };
template <>
struct Named<HealthFenceCmd> { static constexpr std::string_view kName = "HealthFence"; };
template <>
struct Named<SinkCursorCmd> { static constexpr std::string_view kName = "SinkCursor"; };
template <>
struct Named<ProbeResultCmd> { static constexpr std::string_view kName = "ProbeResult"; };
template <>
struct Named<ForgetJobsCmd> { static constexpr std::string_view kName = "ForgetJobs"; };
template <>
struct Named<UpdateUserCmd> { static constexpr std::string_view kName = "UpdateUser"; };
template <>
struct Named<BootstrapCmd> { static constexpr std::string_view kName = "Bootstrap"; };
template <>
struct Named<AuditCmd> { static constexpr std::string_view kName = "Audit"; };
template <>
struct Named<RenewSessionCmd> { static constexpr std::string_view kName = "RenewSession"; };
template <>
struct Named<AlertCmd> { static constexpr std::string_view kName = "Alert"; };
template <>
struct Named<UsageCheckpointCmd> { static constexpr std::string_view kName = "UsageCheckpoint"; };
template <>
struct Named<UpdatePricesCmd> { static constexpr std::string_view kName = "UpdatePrices"; };
template <>
struct Named<EnrolmentCmd> { static constexpr std::string_view kName = "Enrolment"; };
template <>
struct Named<TokenCmd> { static constexpr std::string_view kName = "Token"; };
template <>
struct Named<ReplicaKeyCmd> { static constexpr std::string_view kName = "ReplicaKey"; };
template <>
struct Named<CreditCmd> { static constexpr std::string_view kName = "Credit"; };
template <>
struct Named<SkipJobIdsCmd> { static constexpr std::string_view kName = "SkipJobIds"; };
template <>
struct Named<ScaleJobCmd> { static constexpr std::string_view kName = "ScaleJob"; };

template <typename T>
bool TryDecode(std::string_view name, const msgpack::object& body, Result<CommandBody>* out) {
  if (name != Named<T>::kName) return false;
  auto decoded = wire::ObjectReader::ReadObject<T>(body, "command.body");
  if (decoded.ok()) {
    *out = CommandBody(std::move(decoded).value());
  } else {
    *out = decoded.status();
  }
  return true;
}

}  // namespace

std::string_view CommandName(const CommandBody& body) {
  return std::visit([](const auto& b) { return Named<std::decay_t<decltype(b)>>::kName; }, body);
}

std::string EncodeCommand(const Command& command) {
  msgpack::sbuffer buffer;
  wire::Packer p(buffer);
  p.BeginMap(3);
  p.Field("cmd", CommandName(command.body));
  p.Field("t", command.time_ms);
  p.Key("body");
  std::visit([&p](const auto& body) { p.Value(body); }, command.body);
  return std::string(buffer.data(), buffer.size());
}

Result<Command> DecodeCommand(std::string_view bytes) {
  auto handle = wire::UnpackOne(bytes, wire::DecodeLimits{.max_frame_bytes = 256 * 1024 * 1024});
  if (!handle.ok()) return handle.status();
  const msgpack::object& root = handle->get();
  wire::ObjectReader r(root, "command");
  std::string name;
  Command command;
  r.Required("cmd", &name);
  r.Required("t", &command.time_ms);
  if (!r.status().ok()) return r.status();
  const msgpack::object* body = nullptr;
  for (uint32_t i = 0; i < root.via.map.size; ++i) {
    const auto& key = root.via.map.ptr[i].key;
    if (key.type == msgpack::type::STR && std::string_view(key.via.str.ptr, key.via.str.size) == "body") {
      body = &root.via.map.ptr[i].val;
    }
  }
  if (body == nullptr) return Status::Malformed("command.body: required field is missing");
  Result<CommandBody> decoded = Status::UnknownType("unknown command '" + name.substr(0, 64) + "'");
  TryDecode<RegisterNodeCmd>(name, *body, &decoded) || TryDecode<NodeStateCmd>(name, *body, &decoded) ||
      TryDecode<SubmitJobCmd>(name, *body, &decoded) || TryDecode<CancelJobCmd>(name, *body, &decoded) ||
      TryDecode<UpdateNodeCmd>(name, *body, &decoded) || TryDecode<UpdateQueueCmd>(name, *body, &decoded) ||
      TryDecode<ApplyPlanCmd>(name, *body, &decoded) || TryDecode<TaskEventCmd>(name, *body, &decoded) ||
      TryDecode<RefuseBindCmd>(name, *body, &decoded) || TryDecode<NodeLostCmd>(name, *body, &decoded) ||
      TryDecode<NodeHealthCmd>(name, *body, &decoded) || TryDecode<HealthFenceCmd>(name, *body, &decoded) ||
      TryDecode<SinkCursorCmd>(name, *body, &decoded) || TryDecode<ProbeResultCmd>(name, *body, &decoded) ||
      TryDecode<ForgetJobsCmd>(name, *body, &decoded) || TryDecode<UpdateUserCmd>(name, *body, &decoded) ||
      TryDecode<BootstrapCmd>(name, *body, &decoded) || TryDecode<AuditCmd>(name, *body, &decoded) ||
      TryDecode<RenewSessionCmd>(name, *body, &decoded) ||
      TryDecode<UsageCheckpointCmd>(name, *body, &decoded) || TryDecode<UpdatePricesCmd>(name, *body, &decoded) ||
      TryDecode<TokenCmd>(name, *body, &decoded) ||
      TryDecode<AlertCmd>(name, *body, &decoded) || TryDecode<EnrolmentCmd>(name, *body, &decoded) ||
      TryDecode<ReplicaKeyCmd>(name, *body, &decoded) || TryDecode<CreditCmd>(name, *body, &decoded) ||
      TryDecode<ScaleJobCmd>(name, *body, &decoded) || TryDecode<SkipJobIdsCmd>(name, *body, &decoded);
  if (!decoded.ok()) return decoded.status();
  command.body = std::move(decoded).value();
  return command;
}

}  // namespace gpool::state
