// The messages Raft nodes exchange, and their msgpack encoding.
//
// The core produces Messages in Ready::messages and consumes them in Step();
// the transport carries them as bytes (EncodeMessage/DecodeMessage). A
// Message is also wire::Packable/Unpackable, so it can ride inside a larger
// envelope. One struct serves every type, as in etcd's raftpb.Message; the
// comment on each field says which types use it.
//
// Terms: every message carries the sender's term, except the ReadIndex pair,
// which is term-less (term 0): a read index is valid whatever term the
// requester is in by the time the answer arrives, because the leader confirms
// its leadership after the request reached it.
//
// Thread-safety: plain values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "control/raft/entry.h"
#include "protocol/base/status.h"
#include "protocol/message_type.h"
#include "protocol/wire.h"
#include "storage/log_types.h"

namespace gpool::raft {

// The numbers travel on the wire; never renumber.
enum class MessageType : uint8_t {
  kAppend = 1,             // leader -> follower: entries after (index, log_term), or none (a probe)
  kAppendResponse = 2,     // follower -> leader: accepted up to `index`, or reject with a hint
  kVote = 3,               // candidate -> all: vote for me in `term`
  kVoteResponse = 4,
  kPreVote = 5,            // pre-candidate -> all: would you vote for me in `term` (= its term + 1)?
  kPreVoteResponse = 6,
  kSnapshot = 7,           // leader -> follower: InstallSnapshot
  kHeartbeat = 8,          // leader -> follower: commit index and a ReadIndex context
  kHeartbeatResponse = 9,
  kTimeoutNow = 10,        // leader -> transferee: start an election now (leader transfer)
  kReadIndex = 11,         // follower -> leader: a forwarded ReadIndex request (term 0)
  kReadIndexResponse = 12, // leader -> follower: the read index for `context` (term 0)
  // leader -> follower: one piece of a kSnapshot whose image is a file
  // (issue 49; replication/snapshot_transfer.h). `snapshot` is the leader's
  // (its data the small file reference), `index` the piece's offset in the
  // image, `context` its bytes, `log_term` the transfer's attempt (bumped
  // each time the leader goes back to resend). Never stepped into the core:
  // RaftLog reassembles the file and steps the kSnapshot it stands for.
  kSnapshotChunk = 13,
  // follower -> leader: the answer to every kSnapshotChunk, so the leader
  // keeps a bounded window of chunks unacknowledged (a stopped or slow
  // follower cannot make it queue a whole image, again and again). `snapshot`
  // names the image (index and term, no data), `index` is the next offset
  // the follower expects (0: start again), `log_term` echoes the chunk's
  // attempt, `reject` says the follower gave the transfer up (it is stale
  // there, or the image was bad or could not be written). Never stepped into
  // the core either.
  kSnapshotChunkAck = 14,
};
inline constexpr uint8_t kMaxMessageType = 14;
std::string_view MessageTypeName(MessageType type);

// A state-machine snapshot: the last entry it covers, the configuration in
// force at that entry, and the application's serialized state.
struct Snapshot {
  uint64_t index = 0;  // 0 = no snapshot
  uint64_t term = 0;
  ConfState conf;
  std::string data;
  bool empty() const { return index == 0; }
  bool operator==(const Snapshot&) const = default;
};

struct Message {
  MessageType type = MessageType::kAppend;
  uint64_t from = 0;
  uint64_t to = 0;
  uint64_t term = 0;      // sender's term; 0 for the term-less ReadIndex pair
  // kAppend: term of the entry at `index`. kVote/kPreVote: candidate's last
  // log term. Rejecting kAppendResponse: term of the entry at reject_hint.
  uint64_t log_term = 0;
  // kAppend: index of the entry preceding `entries`. kAppendResponse: last
  // index now matching the leader, or (reject) the `index` being rejected.
  // kVote/kPreVote: candidate's last index. kReadIndexResponse: read index.
  uint64_t index = 0;
  std::vector<LogEntry> entries;  // kAppend
  uint64_t commit = 0;            // kAppend, kHeartbeat: leader's commit index (capped for heartbeats)
  bool reject = false;            // responses: the request was refused
  // Rejecting kAppendResponse: the follower's guess of the last index where
  // the logs may agree (the fast backtracking hint, with log_term).
  // Rejecting kHeartbeatResponse: the follower's last index, which is below
  // the commit index `index` the leader thought it held (its log was lost).
  uint64_t reject_hint = 0;
  Snapshot snapshot;              // kSnapshot
  // kHeartbeat/kHeartbeatResponse/kReadIndex/kReadIndexResponse: ReadIndex
  // request context. kVote: "transfer" when forced by leader transfer.
  std::string context;
  // Every type: the state version the sender's binary implements (issue 50:
  // rolling upgrades; control/state/state_version.h). 0: not sent, a replica
  // from before versions were advertised. Raft itself ignores it; the leader
  // refuses commands that an older replica would apply differently.
  uint32_t state_version = 0;

  bool operator==(const Message&) const = default;
  std::string DebugString() const;

  void Pack(wire::Packer& p) const;
  void Unpack(wire::ObjectReader& r);
};

std::string EncodeMessage(const Message& m);
// Never throws or crashes on hostile bytes: Malformed / ResourceExhausted.
Result<Message> DecodeMessage(std::string_view bytes, const wire::DecodeLimits& limits = {});

}  // namespace gpool::raft
