// MessageType: the tag that names each message struct (messages_*.h,
// model/*.h for records that also travel as they are) in an Envelope, and
// its wire name. Plain: no msgpack, so the model can carry it.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace gpool {

enum class MessageType : uint8_t {
  // Replies usable on any channel.
  kAck,
  kErrorReply,
  // Client API (client -> coordinator, port 7400).
  kSubmitJob,
  kSubmitJobReply,
  kListJobs,
  kListJobsReply,
  kGetJob,
  kGetJobReply,
  kCancelJob,
  kCancelJobReply,
  kListNodes,
  kListNodesReply,
  kGetTaskLog,
  kGetTaskLogReply,
  kClusterStatus,
  kClusterStatusReply,
  // Worker channel (worker <-> coordinator, port 7401).
  kRegisterNode,
  kRegisterNodeReply,
  kHeartbeat,
  kBindTask,
  kPreemptTask,
  kTaskEvent,
  kTaskEventAck,
  kFetchLog,
  kFetchLogReply,
  // Administration (client -> coordinator, port 7400).
  kChangeReplicas,
  kChangeReplicasReply,
  kUpdateNode,
  kUpdateNodeReply,
  kUpdateQueue,
  kUpdateQueueReply,
  kListQueues,
  kListQueuesReply,
  kExplainJob,
  kExplainJobReply,
  kListEvents,
  kListEventsReply,
  kReportProbe,
  kReportProbeReply,
  // Exec (client -> coordinator, port 7400; coordinator -> worker, port 7401).
  kExecStart,
  kExecStartReply,
  kExecPoll,
  kExecPollReply,
  kExecSignal,
  kTaskExecStart,
  kTaskExecPoll,
  kTaskExecSignal,
  // Users, roles and audit (client -> coordinator, port 7400).
  kUpdateUser,
  kUpdateUserReply,
  kListUsers,
  kListUsersReply,
  kBootstrap,
  kWhoAmI,
  kWhoAmIReply,
  kListAudit,
  kListAuditReply,
  // rGPU sessions (client -> coordinator, port 7400).
  kRenewSession,
  kRenewSessionReply,
  // Usage accounting (client -> coordinator, port 7400).
  kGetUsage,
  kGetUsageReply,
  kUpdatePrices,
  kUpdatePricesReply,
  // Watch (client -> coordinator, port 7400; WatchUpdate is pushed).
  kWatch,
  kWatchReply,
  kWatchUpdate,
  kWatchRenew,
  kWatchRenewReply,
  kUnwatch,
  // Snapshot export (client -> coordinator, port 7400).
  kExportSnapshot,
  kExportSnapshotReply,
  // Node enrolment: pending enrolments and join tokens (client -> coordinator, port 7400).
  kEnrolment,
  kEnrolmentReply,
  // API tokens for the HTTP port (client -> coordinator, port 7400; issue 48).
  kCreateToken,
  kCreateTokenReply,
  kListTokens,
  kListTokensReply,
  kRevokeToken,
  kRevokeTokenReply,
  // Credit accounts (client -> coordinator, port 7400; issue 50).
  kCredit,
  kCreditReply,
  // The operator's node labels (coordinator -> worker, port 7401; issue 50).
  kNodeLabels,
};

std::string_view MessageTypeName(MessageType type);
std::optional<MessageType> MessageTypeFromName(std::string_view name);

}  // namespace gpool
