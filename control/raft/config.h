// Config: the settings of one Raft node, read once when the core is created.
//
// The core (raft.h) has no clock and no I/O: "time" is the number of Tick()
// calls, so every timeout below is a tick count, and the only randomness (the
// election timeout jitter) comes from a generator seeded with `seed`, which
// makes a whole cluster replayable from its seeds.
//
// Thread-safety: a plain value.
#pragma once

#include <cstdint>
#include <vector>

#include "protocol/base/status.h"

namespace gpool::raft {

// Bounds on the numbers a peer may send. No honest cluster gets near them
// (a term grows by one per election, an index by one per entry), so a
// message beyond them is forged or corrupt and is refused before it can
// push a term to where incrementing it would wrap to 0 (which wedged a
// cluster for good: candidates campaigned in term 0 and no one voted).
inline constexpr uint64_t kMaxTerm = uint64_t{1} << 62;
inline constexpr uint64_t kMaxIndex = uint64_t{1} << 62;
// The most a message's term may exceed ours. Real gaps are one per missed
// election; a forged message cannot advance a term by more than this at a
// time, so reaching kMaxTerm would take 2^30 accepted forgeries.
inline constexpr uint64_t kMaxTermJump = uint64_t{1} << 32;
// The most an *answer's* term (AppendResponse, HeartbeatResponse,
// VoteResponse, PreVoteResponse) may exceed ours. Requests of a higher term
// are held back by the leader lease; answers are not (a new leader reaches
// the old one through them), so one forged answer per 2^32 used to cost a
// leader its office and 2^32 terms (issue 48, finding 9). An honest answer
// carries the responder's term, raised only by elections it saw (pre-vote
// gated) or requests it accepted; 2^16 lost elections between two contacts
// never happen honestly. A voter that got further ahead (only by forgery)
// is refused until the leader changes, then catches up through the election
// request path, which allows kMaxTermJump. Reaching kMaxTerm through answers
// would take 2^46 forgeries.
inline constexpr uint64_t kMaxAnswerTermJump = uint64_t{1} << 16;

struct Config {
  // This node's id. Nonzero and unique in the cluster; 0 means "nobody".
  uint64_t id = 0;
  // The voters of a brand-new cluster, this node included. It is the
  // configuration in force before any snapshot or configuration entry, so an
  // original member passes the same list on every restart. A node that joins
  // an existing cluster later passes an empty list and waits to be added.
  std::vector<uint64_t> peers;
  // A follower that hears nothing from a leader for a random number of ticks
  // in [election_tick, 2 * election_tick) starts an election. A leader with
  // check_quorum steps down after election_tick ticks without a quorum.
  int election_tick = 10;
  // A leader sends heartbeats every heartbeat_tick ticks. Must be smaller
  // than election_tick (etcd suggests election_tick = 10 * heartbeat_tick).
  int heartbeat_tick = 1;
  // Batching: one append message carries at most this many entries and,
  // beyond its first entry, at most this many bytes (LogEntry::ByteSize()).
  uint64_t max_msg_entries = 1024;
  uint64_t max_msg_bytes = 1 << 20;
  // Pipelining: a follower in the replicate state may have at most this many
  // append messages in flight before the leader waits for acknowledgements.
  uint64_t max_inflight = 256;
  // ... and at most this many bytes of entries (LogEntry::ByteSize; 0: no
  // byte bound), as etcd's MaxInflightBytes: 256 appends of up to
  // max_msg_bytes each would let a follower that stops reading (SIGSTOP, a
  // stalled disk) hold 256 MB of the leader's memory in its send queue.
  uint64_t max_inflight_bytes = 32 << 20;
  // A leader refuses new proposals (ResourceExhausted, "busy") while the
  // entries it proposed and that are not committed yet hold more than this
  // many bytes of payload (0: no bound), as etcd's MaxUncommittedEntriesSize.
  // Without it, proposals that arrive faster than a quorum commits them (a
  // follower frozen, a loaded disk, workers resending every unacknowledged
  // event each second) grew the leader's log in memory without bound: a
  // 1k-GPU scale run held 2.6 million task events, 3.4 GB, in 10 minutes.
  // One proposal is always admitted, however large.
  uint64_t max_uncommitted_bytes = 64 << 20;
  // A backlog of more than 16 times this many committed entries is handed
  // to the application this many per Ready (0: always whole), as etcd's
  // MaxCommittedSizePerReady: a replica that catches up applies it over
  // several turns of its loop, not in one that holds it for seconds (74,834
  // entries took 1.26 s at 10,000 GPUs). A smaller one, what a leader's
  // quorum round commits in a burst, still comes whole: slicing those cost
  // gpool-bench-e2e a quarter of its p99 and a tenth of its drain rate.
  uint64_t max_committed_per_ready = 0;
  // Pre-vote (thesis 9.6): a node asks whether it could win before it bumps
  // its term, so a node that was cut off cannot disrupt a healthy leader.
  bool pre_vote = true;
  // Check-quorum (thesis 6.2): a leader that has not heard from a quorum
  // within an election timeout steps down; followers that heard from a
  // leader within the timeout ignore vote requests (the leader lease).
  bool check_quorum = true;
  // Seeds the election-timeout jitter; mixed with `id` so nodes differ.
  uint64_t seed = 0;

  // InvalidArgument naming the first bad field, or OK.
  Status Validate() const;
};

}  // namespace gpool::raft
