// Conversions from state-machine records to the protocol's reply structs.
// Pure functions; the Gateway uses them to answer read requests.
#pragma once

#include <optional>
#include <string>

#include "control/state/cluster_state.h"
#include "protocol/messages_admin.h"
#include "protocol/messages_client.h"
#include "protocol/messages_nodes.h"

namespace gpool::control {

// `now_ms` (wall): counts an open session's GPU-seconds so far (session_view.h).
JobSummary ToJobSummary(const state::JobRecord& job, int64_t now_ms = 0);
// Why the job is pending, as text: its reason codes rendered here, at the
// edge (state written before codes holds text, passed through).
std::vector<std::string> PendingTexts(const state::JobRecord& job);
// Issue 50: why a job that has not started waits when its queue's credit
// account is used up (the scheduler leaves it out); nullopt otherwise.
std::optional<std::string> CreditPendingText(const state::JobRecord& job, const state::ClusterState& state);
TaskInfo ToTaskInfo(const state::JobRecord& job, const state::TaskRecord& task, const state::ClusterState& state);
// Each of the job's groups with scale rules (issue 50): bounds, target, last
// change, and the cool-down left at wall time `now_ms`.
std::vector<GroupScaleStatus> ToScaleStatus(const state::JobRecord& job, int64_t now_ms);
// `now_ms` (wall), for the summary and the scale status.
GetJobReply ToJobDetail(const state::JobRecord& job, const state::ClusterState& state, int64_t now_ms);
// `devices`: also its devices and NUMA nodes.
// With `devices`, the node's devices too; `state` (when given) supplies the
// shares, MIG instances and cores tenants hold.
NodeSummary ToNodeSummary(const state::NodeRecord& node, bool devices = false,
                          const state::ClusterState* state = nullptr);
// Every queue, parents before children and siblings by name.
ListQueuesReply ToQueueList(const state::ClusterState& state);
QueueSummary ToQueueSummary(const state::ClusterState& state, const std::string& name);
ExplainJobReply ToExplanation(const state::JobRecord& job, const state::ClusterState& state, int64_t now_ms);
// The stream's events after request.after_seq that match its node and job,
// at most request.limit (capped at kMaxEventsPerReply).
inline constexpr uint32_t kMaxEventsPerReply = 1000;
ListEventsReply ToEventList(const state::ClusterState& state, const ListEvents& request);
// NotFound for a job id the state does not hold. One that retention forgot
// says so, with what its summary kept: "job 17 finished (Succeeded, 2.0
// GPU-hours) and was compacted away by the coordinator's retention ...";
// any other "job N does not exist".
Status JobNotFound(const state::ClusterState& state, uint64_t job_id);

}  // namespace gpool::control
