// Every message struct of the wire protocol, as one type list indexed by
// MessageType, so the fuzz targets can decode any type's body through the
// generic path (wire::ObjectReader) without a hand-written switch.
//
// The static_asserts fail the build when a MessageType is added without its
// struct here, or when the list drifts out of the enum's order: "every
// message decoder" stays every one.
#pragma once

#include <cstddef>
#include <tuple>
#include <utility>

#include "protocol/message_type.h"
#include "protocol/messages_admin.h"
#include "protocol/messages_client.h"
#include "protocol/messages_common.h"
#include "protocol/messages_nodes.h"
#include "protocol/messages_worker.h"
#include "protocol/model/node_update.h"
#include "protocol/model/queue_update.h"
#include "protocol/model/task_report.h"


namespace gpool::fuzz {

using AllMessages =
    std::tuple<Ack, ErrorReply, SubmitJob, SubmitJobReply, ListJobs, ListJobsReply, GetJob, GetJobReply,
               CancelJob, CancelJobReply, ListNodes, ListNodesReply, GetTaskLog, GetTaskLogReply, ClusterStatus,
               ClusterStatusReply, RegisterNode, RegisterNodeReply, Heartbeat, BindTask, PreemptTask, TaskEvent,
               TaskEventAck, FetchLog, FetchLogReply, ChangeReplicas, ChangeReplicasReply, UpdateNode,
               UpdateNodeReply, UpdateQueue, UpdateQueueReply, ListQueues, ListQueuesReply, ExplainJob,
               ExplainJobReply, ListEvents, ListEventsReply, ReportProbe, ReportProbeReply>;

inline constexpr size_t kMessageTypeCount = std::tuple_size_v<AllMessages>;
static_assert(kMessageTypeCount == static_cast<size_t>(MessageType::kReportProbeReply) + 1,
              "a MessageType has no struct in AllMessages");

template <size_t... I>
constexpr bool InEnumOrder(std::index_sequence<I...>) {
  return ((std::tuple_element_t<I, AllMessages>::kType == static_cast<MessageType>(I)) && ...);
}
static_assert(InEnumOrder(std::make_index_sequence<kMessageTypeCount>{}),
              "AllMessages must list the structs in MessageType order");

// Calls f.template operator()<T>() for the struct T of `type`; false when
// `type` names no struct.
template <typename F>
bool VisitMessageType(MessageType type, F&& f) {
  auto index = static_cast<size_t>(type);
  bool found = false;
  [&]<size_t... I>(std::index_sequence<I...>) {
    ((index == I ? (f.template operator()<std::tuple_element_t<I, AllMessages>>(), found = true) : false), ...);
  }(std::make_index_sequence<kMessageTypeCount>{});
  return found;
}

}  // namespace gpool::fuzz
