// Output of the gpool CLI: aligned tables for people, JSON for scripts.
//
// Every function is a pure function of a reply struct (plus `now_ms`, the
// wall-clock time that ages are measured from), so tests pin the exact text.
//
// JSON is the reply's wire form (the same field names as protocol/messages.h
// and docs/protocol.md), produced from its msgpack encoding, so the two can
// never drift apart. Bytes that are not UTF-8 (log data) become U+FFFD.
//
// Thread-safe (no state).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/base/ids.h"
#include "protocol/messages_admin.h"
#include "protocol/messages_client.h"
#include "protocol/messages_nodes.h"
#include "protocol/wire.h"

namespace gpool {

// ID NAME QUEUE PRIO STATE TASKS(running/total) GPUS AGE REASON; "No jobs." when empty.
// (No class column: JobSummary does not carry the priority class.)
std::string FormatJobsTable(const ListJobsReply& reply, int64_t now_ms);
// A summary block (state, queue, class, priority, pool; user, node selector,
// preferred labels and tolerations when set), the task groups ("4 (min 2)"
// replicas for an elastic group, "2 GPUs (A100)" for a GPU model), a
// "Scaling" block per group with scale rules (format_scale.h), pending
// reasons as bullets, then a task table: INDEX STATE NODE GPUS PID EXIT
// STARTED DURATION MESSAGE.
std::string FormatJobDetail(const GetJobReply& reply, int64_t now_ms);
// NAME STATE POOL GPUS CPUS MEM(GiB) MODELS TASKS LAST-SEEN TAINTS LABELS;
// used/total for the resources. STATE is the server's ("Ready,Cordoned" for
// a cordoned node); TAINTS and LABELS are "k=v,k=v" sorted by key, "-" when
// none, each shortened to 40 characters ("..."). "No nodes." when empty.
std::string FormatNodesTable(const ListNodesReply& reply, int64_t now_ms);
// `gpool nodes --devices`, after the nodes table: one block per node,
// "Node NAME:" then its device table (FormatDeviceTable, UUIDs shortened),
// or "  No devices." for a node without GPUs. "" when there are no nodes.
std::string FormatNodeDevices(const ListNodesReply& reply);
// `gpool node show`: a summary block (state, hostname, pool, labels, taints,
// GPUs/CPUs/memory used/total, tasks, last seen), the NUMA nodes (ID CPUS
// MEM(GiB) GPUS), the device table with full UUIDs, and the NVLink groups
// (DescribeLinkGroups). A section with nothing to show says so ("none
// reported"), so an old coordinator that sends no devices is visible.
std::string FormatNodeDetail(const NodeSummary& node, int64_t now_ms);
// INDEX UUID MODEL MEM(GiB) NUMA LINK GROUP HEALTH TASK, one row per
// device; "-" for an unknown NUMA node, no link group, no memory size, a
// free GPU. HEALTH is "ok" or "unhealthy". With `short_uuids`, ShortUuid.
std::string FormatDeviceTable(const NodeSummary& node, bool short_uuids, std::string_view indent = {});
// The queue hierarchy as an indented tree (children two spaces deeper than
// their parent): QUEUE, one column per resource (GPU, GPU/<model> for every
// model any queue names, CPU in cores, MEM(GiB)) holding
// allocated/deserved/guarantee/capability with "-" for a quota that is not
// set, then PENDING and RUNNING; a legend line follows. "No queues." when
// empty.
std::string FormatQueueTree(const ListQueuesReply& reply);
// The job's summary line, every reason, the queue path leaf to root with
// allocated/deserved/capability per resource, and "N jobs ahead in queue Q".
std::string FormatExplain(const ExplainJobReply& reply);
// The replica this client talked to, cluster totals, and the replica table.
std::string FormatClusterStatus(const ClusterStatusReply& reply);
// The replica table alone: REPLICA ADDRESS ROLE MATCH LAG; "No replicas."
// when empty. LAG is ReplicaLag, or "-" where that is unknown.
std::string FormatReplicasTable(const ClusterStatusReply& reply);

// One line of JSON, no trailing newline.
std::string MsgpackToJson(std::string_view msgpack);
template <typename T>
std::string ToJson(const T& value) {
  return MsgpackToJson(wire::PackToString(value));
}
// {"job_id":..,"task_index":..,"size":..,"truncated":..,"data":"..."}
std::string LogToJson(JobId job, uint32_t task_index, const GetTaskLogReply& reply);

// --- Building blocks, exposed for tests --------------------------------------

// How many log entries `replica` is behind the answering replica's commit
// index (0 when its match index is at or past it). Known only when the
// answering replica is the leader (`reply.role` is exactly "leader": only a
// leader tracks its followers) and the replica's match index is known
// (non-zero, or the replica is the leader itself); nullopt otherwise.
std::optional<uint64_t> ReplicaLag(const ClusterStatusReply& reply, const ReplicaInfo& replica);

// A GPU UUID short enough for a table: its first 12 characters and "..."
// ("GPU-8a3f2c1e...") when it is longer than 15; "-" when empty.
std::string ShortUuid(const std::string& uuid);
// Sorted, de-duplicated, runs collapsed: {0,1,2,3,6} -> "0-3,6"; "-" when empty.
std::string FormatIndexRanges(std::vector<uint32_t> indices);
// The node's NVLink groups from its devices' link_group, one line each,
// groups in id order: "group 0: GPUs 0-3 (NVLink)", then
// "no NVLink: GPUs 8-9" for the devices in no group. Empty when the node
// has no devices.
std::vector<std::string> DescribeLinkGroups(const NodeSummary& node);

// 45s, 3m12s, 2h05m, 3d04h. Negative counts as 0.
std::string FormatDuration(int64_t ms);
// "5m12s ago"; "-" when `since_ms` is 0 (never happened).
std::string FormatAgo(int64_t since_ms, int64_t now_ms);
// `s`, or "-" when it is empty.
std::string Dash(const std::string& s);
// A replica's heard_ms_ago: "-" (never, or not the leader's view),
// "1.4s ago" under a minute, else as FormatDuration.
std::string FormatHeard(int64_t heard_ms_ago);
// Milli-CPUs as cores: 4500 -> "4.5", 64000 -> "64", 250 -> "0.25".
std::string FormatCores(uint64_t cpu_milli);
// MiB as GiB with at most one decimal: 1536 -> "1.5", 16384 -> "16".
std::string FormatGiB(uint64_t mib);
// "4Gi" / "512Mi" / "1.5Gi" style, for specs.
std::string FormatMemory(uint64_t mib);
// A quota as the CLI's quota flags take it: "gpu=16,gpu/A100=8,cpu=64,memory=256Gi"
// (gpu, then gpu/<model> by name, cpu in cores, memory; any other name last,
// as a raw number); "none" when empty. ParseQuota (cli.h) reads it back.
std::string FormatQuota(const Quota& quota);
// The resources a set of quotas names, in display order: gpu, gpu/<model>
// (sorted), cpu, memory, then any others. gpu, cpu and memory are always
// there.
std::vector<std::string> QuotaResources(const std::vector<const Quota*>& quotas);

// Left-aligned columns separated by two spaces; no trailing spaces. Cells are
// flattened to one line (control characters become spaces).
class Table {
 public:
  explicit Table(std::vector<std::string> header) { rows_.push_back(std::move(header)); }
  void AddRow(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  std::string Render(std::string_view indent = {}) const;

 private:
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace gpool
