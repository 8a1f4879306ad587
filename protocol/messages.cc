#include "protocol/messages.h"

#include <array>

namespace gpool {
namespace {

// Indexed by MessageType; the strings are the wire names.
constexpr std::array<std::string_view, 81> kTypeNames = {
    "Ack",          "ErrorReply",        "SubmitJob",     "SubmitJobReply", "ListJobs",
    "ListJobsReply", "GetJob",           "GetJobReply",   "CancelJob",      "CancelJobReply",
    "ListNodes",    "ListNodesReply",    "GetTaskLog",    "GetTaskLogReply", "ClusterStatus",
    "ClusterStatusReply", "RegisterNode", "RegisterNodeReply", "Heartbeat",  "BindTask",
    "PreemptTask",  "TaskEvent",         "TaskEventAck",  "FetchLog",       "FetchLogReply",
    "ChangeReplicas", "ChangeReplicasReply", "UpdateNode", "UpdateNodeReply",
    "UpdateQueue", "UpdateQueueReply", "ListQueues", "ListQueuesReply", "ExplainJob", "ExplainJobReply",
    "ListEvents", "ListEventsReply", "ReportProbe", "ReportProbeReply",
    "ExecStart", "ExecStartReply", "ExecPoll", "ExecPollReply", "ExecSignal",
    "TaskExecStart", "TaskExecPoll", "TaskExecSignal",
    "UpdateUser", "UpdateUserReply", "ListUsers", "ListUsersReply", "Bootstrap", "WhoAmI", "WhoAmIReply",
    "ListAudit", "ListAuditReply", "RenewSession", "RenewSessionReply",
    "GetUsage", "GetUsageReply", "UpdatePrices", "UpdatePricesReply",
    "Watch", "WatchReply", "WatchUpdate", "WatchRenew", "WatchRenewReply", "Unwatch",
    "ExportSnapshot", "ExportSnapshotReply", "Enrolment", "EnrolmentReply",
    "CreateToken", "CreateTokenReply", "ListTokens", "ListTokensReply", "RevokeToken", "RevokeTokenReply",
    "Credit", "CreditReply", "NodeLabels",
};
static_assert(kTypeNames.size() == static_cast<size_t>(MessageType::kNodeLabels) + 1);

}  // namespace

std::string_view MessageTypeName(MessageType type) {
  auto index = static_cast<size_t>(type);
  return index < kTypeNames.size() ? kTypeNames[index] : std::string_view("Unknown");
}

std::optional<MessageType> MessageTypeFromName(std::string_view name) {
  for (size_t i = 0; i < kTypeNames.size(); ++i) {
    if (kTypeNames[i] == name) return static_cast<MessageType>(i);
  }
  return std::nullopt;
}

ErrorReply ErrorReply::FromStatus(const Status& status, std::string leader) {
  ErrorReply reply;
  reply.code = std::string(StatusCodeName(status.code()));
  reply.message = status.message();
  reply.leader = std::move(leader);
  return reply;
}

Status ErrorReply::ToStatus() const {
  auto code_value = StatusCodeFromName(code);
  if (!code_value || *code_value == StatusCode::kOk) {
    return Status::Internal("peer sent unknown error code '" + code + "': " + message);
  }
  return Status(*code_value, message);
}

}  // namespace gpool
