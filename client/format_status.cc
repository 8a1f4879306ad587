// `gpool status` and `gpool admin replica list`: the answering replica's
// summary and the replica table (MATCH, LAG, HEARD).
#include <cstdio>
#include <optional>
#include <sstream>

#include "client/format.h"
#include "protocol/messages_admin.h"

namespace gpool {

std::string FormatHeard(int64_t heard_ms_ago) {
  if (heard_ms_ago < 0) return "-";
  if (heard_ms_ago >= 60'000) return FormatDuration(heard_ms_ago) + " ago";
  // Tenths of a second: liveness windows are a second or two.
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%lld.%llds ago", static_cast<long long>(heard_ms_ago / 1000),
                static_cast<long long>(heard_ms_ago % 1000 / 100));
  return buffer;
}

std::optional<uint64_t> ReplicaLag(const ClusterStatusReply& reply, const ReplicaInfo& replica) {
  if (reply.role != "leader") return std::nullopt;
  const bool is_leader = replica.role == "leader" || replica.id == reply.replica_id;
  if (replica.match_index == 0 && !is_leader) return std::nullopt;
  if (replica.match_index >= reply.commit_index) return 0;
  return reply.commit_index - replica.match_index;
}

std::string FormatClusterStatus(const ClusterStatusReply& reply) {
  std::ostringstream out;
  Table summary({"Replica:", Dash(reply.replica_id) + " (" + Dash(reply.role) + ", term " +
                                 std::to_string(reply.term) + ")"});
  summary.AddRow({"Log:", "commit " + std::to_string(reply.commit_index) + ", applied " +
                              std::to_string(reply.applied_index)});
  summary.AddRow({"Nodes:", std::to_string(reply.nodes_ready) + " ready of " + std::to_string(reply.nodes_total)});
  summary.AddRow({"GPUs:", std::to_string(reply.gpus_used) + " used of " + std::to_string(reply.gpus_total)});
  summary.AddRow({"Jobs:", std::to_string(reply.jobs_pending) + " pending, " + std::to_string(reply.jobs_running) +
                               " running"});
  // Shown only while it matters: writes are refused until space returns.
  if (reply.disk_full) {
    summary.AddRow({"Disk:", "FULL, writes refused, reads served: " + Dash(reply.disk_error)});
  }
  out << summary.Render();
  if (!reply.replicas.empty()) out << "\n" << FormatReplicasTable(reply);
  return out.str();
}

std::string FormatReplicasTable(const ClusterStatusReply& reply) {
  if (reply.replicas.empty()) return "No replicas.\n";
  // HEARD: when the leader last heard from each replica, what removals and
  // promotions judge liveness by (within an election timeout: live).
  // VERSION: the state version each replica's binary runs, as the replica
  // asked heard it ("-": not known there); the leader refuses what an older
  // one would apply differently until every replica is upgraded.
  Table table({"REPLICA", "ADDRESS", "ROLE", "MATCH", "LAG", "HEARD", "VERSION"});
  for (const auto& r : reply.replicas) {
    std::optional<uint64_t> lag = ReplicaLag(reply, r);
    table.AddRow({Dash(r.id), Dash(r.address), Dash(r.role), std::to_string(r.match_index),
                  lag ? std::to_string(*lag) : "-", FormatHeard(r.heard_ms_ago),
                  r.state_version == 0 ? "-" : std::to_string(r.state_version)});
  }
  return table.Render();
}

}  // namespace gpool
