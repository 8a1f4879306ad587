// The pieces of the wire protocol every channel shares: MessageType, which
// names each message struct (messages_*.h) in an Envelope, its wire names, and
// the replies usable on any channel (Ack, ErrorReply).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "protocol/types.h"

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
};

std::string_view MessageTypeName(MessageType type);
std::optional<MessageType> MessageTypeFromName(std::string_view name);

// --- Generic replies -------------------------------------------------------

struct Ack {
  static constexpr MessageType kType = MessageType::kAck;
  void Pack(wire::Packer& p) const { p.BeginMap(0); }
  void Unpack(wire::ObjectReader&) {}
};

struct ErrorReply {
  static constexpr MessageType kType = MessageType::kErrorReply;
  std::string code;     // a StatusCode name, e.g. "InvalidArgument"
  std::string message;  // human-readable; names the offending field where there is one
  std::string leader;   // for NotLeader: the client address of the leader, if known

  static ErrorReply FromStatus(const Status& status, std::string leader = {});
  Status ToStatus() const;
  template <typename V>
  void Fields(V& v) {
    v.Required("code", code);
    v.Required("message", message);
    v.Optional("leader", leader);
  }
};

}  // namespace gpool
