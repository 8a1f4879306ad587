// Administration and status messages (client -> coordinator, port 7400): the
// cluster's status and its coordinator replicas, the queue hierarchy, and why a
// job waits (ExplainJob).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "protocol/messages_client.h"
#include "protocol/messages_common.h"
#include "protocol/model/queue_update.h"
#include "protocol/types.h"

namespace gpool {

// --- Cluster status and replicas -------------------------------------------

struct ClusterStatus {
  static constexpr MessageType kType = MessageType::kClusterStatus;
  template <typename V>
  void Fields(V&) {}  // no fields: an empty map
};

struct ReplicaInfo {
  std::string id;
  std::string address;
  std::string role;  // "leader", "follower", "learner" (not yet a voter), "candidate", "unknown"
  uint64_t match_index = 0;
  // Leader only: milliseconds since it last heard from that replica (-1:
  // never, or not known here). Removals and promotions count a replica as
  // live when this is within an election timeout.
  int64_t heard_ms_ago = -1;
  // The state version its binary runs, as this replica last heard it
  // (control/state/state_version.h; issue 50's rolling upgrades). 0: not
  // known here (an older binary, or not heard from).
  uint32_t state_version = 0;
  template <typename V>
  void Fields(V& v) {
    v.Required("id", id);
    v.Optional("address", address);
    v.Optional("role", role);
    v.Optional("match_index", match_index);
    v.Optional("heard_ms_ago", heard_ms_ago);
    v.Optional("state_version", state_version);
  }
};

struct ClusterStatusReply {
  static constexpr MessageType kType = MessageType::kClusterStatusReply;
  std::string replica_id;
  std::string role;
  uint64_t term = 0;
  uint64_t commit_index = 0;
  uint64_t applied_index = 0;
  std::vector<ReplicaInfo> replicas;
  uint32_t nodes_ready = 0;
  uint32_t nodes_total = 0;
  uint32_t jobs_pending = 0;
  uint32_t jobs_running = 0;
  uint32_t gpus_total = 0;
  uint32_t gpus_used = 0;
  // This replica's data dir refuses writes (a full disk): it answers writes
  // with Unavailable `disk_error` ("disk full (<path>, <free> bytes free)"),
  // keeps serving reads, and resumes by itself once space returns.
  bool disk_full = false;
  std::string disk_error;
  uint64_t disk_free_bytes = 0;
  template <typename V>
  void Fields(V& v) {
    v.Required("replica_id", replica_id);
    v.Required("role", role);
    v.Optional("term", term);
    v.Optional("commit_index", commit_index);
    v.Optional("applied_index", applied_index);
    v.Optional("replicas", replicas);
    v.Optional("nodes_ready", nodes_ready);
    v.Optional("nodes_total", nodes_total);
    v.Optional("jobs_pending", jobs_pending);
    v.Optional("jobs_running", jobs_running);
    v.Optional("gpus_total", gpus_total);
    v.Optional("gpus_used", gpus_used);
    v.Optional("disk_full", disk_full);
    v.Optional("disk_error", disk_error);
    v.Optional("disk_free_bytes", disk_free_bytes);
  }
};

// Adds or removes one coordinator replica. Answered once the new
// configuration is committed. Start an added replica (with --join) first:
// the leader checks that its peer address answers (Unavailable, nothing
// changed, if not), adds it as a learner, which replicates the log without
// a vote, and promotes it to voter by itself once it has caught up. A
// remove that would leave fewer live voters than a quorum is refused
// (FailedPrecondition) unless `force`.
// "rotate-key" (issue 48) gives a member replica a new CurveZMQ key
// (`public_key`) with a grace for its current one (`grace_ms`, at most 30
// days; 0: none): answered once committed, with the configuration
// unchanged. NotFound for a replica not in the configuration, AlreadyExists
// for its current key, InvalidArgument for a malformed key or grace,
// FailedPrecondition on a cluster without replica keys; nothing changes.
// On the wire by name: "add", "remove" or "rotate-key".
enum class ReplicaOp : uint8_t { kAdd, kRemove, kRotateKey };
template <>
struct EnumNames<ReplicaOp> {
  static constexpr std::array<std::string_view, 3> kNames = {"add", "remove", "rotate-key"};
};

struct ChangeReplicas {
  static constexpr MessageType kType = MessageType::kChangeReplicas;
  ReplicaOp op = ReplicaOp::kAdd;
  uint64_t replica_id = 0;     // positive
  std::string peer_address;    // add: where the replica listens for peers, e.g. tcp://10.0.0.4:7402
  std::string client_address;  // add: its client endpoint, for redirects; may be empty
  std::string worker_address;  // add: its worker endpoint, for workers' redirects; may be empty
  bool force = false;          // remove: even if fewer live voters than a quorum would remain
  // add, on a CurveZMQ cluster: the replica's public key (Z85); the peers
  // admit it and authenticate it by this key (docs/operations.md).
  // rotate-key: its new key.
  std::string public_key;
  uint64_t grace_ms = 0;       // rotate-key: how long the replaced key stays admitted
  template <typename V>
  void Fields(V& v) {
    v.Required("op", op);
    v.Required("replica_id", replica_id);
    v.Optional("peer_address", peer_address);
    v.Optional("client_address", client_address);
    v.Optional("worker_address", worker_address);
    v.Optional("force", force);
    v.Optional("public_key", public_key);
    v.Optional("grace_ms", grace_ms);
  }
};

struct ChangeReplicasReply {
  static constexpr MessageType kType = MessageType::kChangeReplicasReply;
  uint64_t index = 0;             // log index of the committed change
  std::vector<uint64_t> voters;   // the configuration it put in force
  std::vector<uint64_t> learners; // members not yet promoted to voter
  template <typename V>
  void Fields(V& v) {
    v.Required("index", index);
    v.Required("voters", voters);
    v.Optional("learners", learners);
  }
};

// --- Queues and explanations -----------------------------------------------

struct QueueSummary {
  QueueSpec spec;
  Quota allocated;  // held by bound and running tasks of it and its descendants
  uint32_t jobs_pending = 0;
  uint32_t jobs_running = 0;
  // Issue 50: the classes above medium granted to this queue itself
  // ("high", "system"); its jobs may also use those of its ancestors.
  std::vector<std::string> granted_classes;
  template <typename V>
  void Fields(V& v) {
    v.Required("spec", spec);
    v.Optional("allocated", allocated);
    v.Optional("jobs_pending", jobs_pending);
    v.Optional("jobs_running", jobs_running);
    v.Optional("granted_classes", granted_classes);
  }
};

struct UpdateQueueReply {
  static constexpr MessageType kType = MessageType::kUpdateQueueReply;
  QueueSummary queue;
  template <typename V>
  void Fields(V& v) {
    v.Required("queue", queue);
  }
};

struct ListQueues {
  static constexpr MessageType kType = MessageType::kListQueues;
  template <typename V>
  void Fields(V&) {}  // no fields: an empty map
};

// Parents come before their children; siblings by name.
struct ListQueuesReply {
  static constexpr MessageType kType = MessageType::kListQueuesReply;
  std::vector<QueueSummary> queues;
  template <typename V>
  void Fields(V& v) {
    v.Required("queues", queues);
  }
};

struct ExplainJob {
  static constexpr MessageType kType = MessageType::kExplainJob;
  uint64_t job_id = 0;
  template <typename V>
  void Fields(V& v) {
    v.Required("job_id", job_id);
  }
};

// Why a job is where it is: the scheduler's reasons from its latest cycle,
// the job's queue and every ancestor with their quotas and usage, and how
// many jobs of its queue are ahead of it.
struct ExplainJobReply {
  static constexpr MessageType kType = MessageType::kExplainJobReply;
  JobSummary job;
  std::vector<std::string> reasons;
  std::vector<QueueSummary> queue_path;  // leaf first, then its parent, up to root
  uint32_t jobs_ahead = 0;               // pending jobs of the same queue ordered before it
  template <typename V>
  void Fields(V& v) {
    v.Required("job", job);
    v.Optional("reasons", reasons);
    v.Optional("queue_path", queue_path);
    v.Optional("jobs_ahead", jobs_ahead);
  }
};

}  // namespace gpool
