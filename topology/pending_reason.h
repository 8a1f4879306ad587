// Why a job is still pending, as the scheduler records it: a code with the
// figures its text needs, never prose. The Raft log and the job records hold
// these; the coordinator renders them to text only when a client asks
// (RenderPendingReason), so the wording can change without touching stored
// state, and "12 nodes: insufficient GPUs" is one code with a count, not one
// string per count.
//
// The numbers are stored: never renumber a code, only add new ones.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gpool::topology {

enum class PendingCode : uint32_t {
  kUnknown = 0,
  // A node check failed first on `count` nodes (in the order nodes are checked).
  kNodeNotReady = 1,
  kNodeCordoned = 2,
  kNodeInAnotherPool = 3,
  kNodeSelector = 4,
  kNodeTaint = 5,
  kNodeGpuModel = 6,
  kNodeNuma = 7,
  kNodeClaimed = 8,
  kNodeReserved = 9,
  kNodeExclusiveBusy = 10,
  kNodeExclusiveWhole = 11,
  kNodeGpus = 12,
  kNodeGpuUuid = 13,
  kNodeShareRoom = 14,
  kNodeShareQos = 15,
  kNodeShareMode = 16,
  kNodeMigFit = 17,
  kNodeMigUnsupported = 18,
  kNodeVendorRule = 19,
  kNodeModelCapability = 20,
  kNodeGpuMemoryCapability = 21,
  kNodeCpu = 22,
  kNodeCpuKeptForGpus = 23,
  kNodeMemory = 24,
  kNodeMemoryKeptForGpus = 25,
  kNodeModelDeserved = 26,
  kNodeGpuMemoryDeserved = 27,
  kNodeOwnedByAnotherQueue = 28,
  kNodeExclusiveCores = 29,  // too few whole cores free for a task's exclusive use
  // The cluster as a whole: no node at all, or task `task` needs `need` of a
  // resource the largest node has only `have` of.
  kNoNodes = 100,
  kTaskGpusOverLargest = 101,
  kTaskCpuOverLargest = 102,
  kTaskMemoryOverLargest = 103,
  // Queue `queue` is at its capability for `resource`: `have` of `limit` in
  // use, the job needs `need` more.
  kQueueAtCapability = 200,
  // Queue `queue` holds its deserved share of `resource` (`have` of `limit`),
  // and the job (`need` more) is of a class that may not borrow beyond it.
  kQueueAtDeserved = 201,
  // Issue 50: queue `queue` admits no new work: the credit account of queue
  // `resource` that pays for it is used up, `need` micro-units below zero.
  // Not the scheduler's: the coordinator adds it to a job it left out.
  kQueueOutOfCredit = 202,
  // Waiting on evictions: its own evicted tasks (to restart whole), its
  // victims (`count` of them while it evicts, else unknown), or nodes held
  // for it as work finishes.
  kOwnTasksStopping = 300,
  kVictimsStopping = 301,
  kPreempting = 302,
  kReclaiming = 303,
  kNodesHeld = 304,
  kNotConsidered = 305,
  // Starving, but no nodes are held for it: its gang would take queue
  // `queue` past its deserved `resource`, and low work beyond the deserved
  // share is what reclaim takes back (issue 50).
  kNoHoldBeyondDeserved = 306,
  // Network placement at switch tier `tier`: no switch holds the running
  // tasks and room for the rest; the tier is not labelled; no switch holds
  // `need` GPUs (the most free under one is `have`); none fits the tasks.
  kSwitchMissesRunningTasks = 400,
  kTierNotLabelled = 401,
  kSwitchTooSmall = 402,
  kSwitchTasksDoNotFit = 403,
};

// A stable snake_case name for a code ("node_gpus", "queue_at_capability"):
// the reason label of the pending-jobs metric.
std::string_view PendingCodeSlug(PendingCode code);

struct PendingReason {
  PendingCode code = PendingCode::kUnknown;
  uint32_t count = 0;  // nodes (node checks) or tasks (evictions)
  uint32_t task = 0;   // the task the figures are for
  uint32_t tier = 0;   // switch tier (network reasons)
  uint64_t need = 0;
  uint64_t have = 0;
  uint64_t limit = 0;
  std::string queue;
  std::string resource;

  template <typename V>
  void Fields(V& v) {
    v.Required("c", code);
    v.Optional("n", count);
    v.Optional("t", task);
    v.Optional("tier", tier);
    v.Optional("need", need);
    v.Optional("have", have);
    v.Optional("limit", limit);
    v.Optional("q", queue);
    v.Optional("r", resource);
  }
  bool operator==(const PendingReason&) const = default;

  static PendingReason Of(PendingCode code) { return PendingReason{.code = code}; }
  static PendingReason Nodes(PendingCode code, uint32_t count) { return PendingReason{.code = code, .count = count}; }
};

// The text users read: "3 nodes: insufficient GPUs", "queue team-a at
// capability for gpu (16 of 16 in use, needs 4 more)".
std::string RenderPendingReason(const PendingReason& reason);
std::vector<std::string> RenderPendingReasons(const std::vector<PendingReason>& reasons);
// A reason that no change of load can cure: the task is bigger than any node.
bool NeverFits(const PendingReason& reason);

}  // namespace gpool::topology
