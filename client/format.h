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
#include "protocol/messages.h"
#include "protocol/wire.h"

namespace gpool {

// ID NAME QUEUE PRIO STATE TASKS(running/total) GPUS AGE REASON; "No jobs." when empty.
std::string FormatJobsTable(const ListJobsReply& reply, int64_t now_ms);
// A summary block, the task groups, pending reasons as bullets, then a task
// table: INDEX STATE NODE GPUS PID EXIT STARTED DURATION MESSAGE.
std::string FormatJobDetail(const GetJobReply& reply, int64_t now_ms);
// NAME STATE POOL GPUS CPUS MEM(GiB) MODELS TASKS LAST-SEEN LABELS; used/total
// for the resources. STATE is the server's ("Ready,Cordoned" for a cordoned
// node); LABELS is "k=v,k=v" sorted by key, "-" when none, shortened to 40
// characters ("..."). "No nodes." when empty.
std::string FormatNodesTable(const ListNodesReply& reply, int64_t now_ms);
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

// 45s, 3m12s, 2h05m, 3d04h. Negative counts as 0.
std::string FormatDuration(int64_t ms);
// "5m12s ago"; "-" when `since_ms` is 0 (never happened).
std::string FormatAgo(int64_t since_ms, int64_t now_ms);
// Milli-CPUs as cores: 4500 -> "4.5", 64000 -> "64", 250 -> "0.25".
std::string FormatCores(uint64_t cpu_milli);
// MiB as GiB with at most one decimal: 1536 -> "1.5", 16384 -> "16".
std::string FormatGiB(uint64_t mib);
// "4Gi" / "512Mi" / "1.5Gi" style, for specs.
std::string FormatMemory(uint64_t mib);

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
