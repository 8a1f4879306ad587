// PeerTransport: moves opaque frames between coordinator replicas over
// ZeroMQ, for Raft.
//
// Each replica binds one ROUTER on its peer endpoint (default port 7402) and
// keeps one DEALER per peer. Delivery is best effort and never blocks the
// caller: Raft already tolerates loss, duplication and reordering, so a frame
// for a peer whose queue is full, or a peer that is unknown, is dropped and
// counted rather than waited for. What the frames mean (who sent them, for
// which term) is inside the frame; the transport knows nothing of Raft.
//
// With a token, every message is two parts, [token, frame], and a message
// whose token differs (or that has no token) is dropped and counted, so a
// process that is not a replica of this cluster cannot inject Raft messages.
// Peers are connected by id; connecting an id again to the same endpoint is
// a no-op, to another endpoint replaces the connection.
//
// Thread-safety: none; the coordinator's loop thread owns it and polls
// inbound() with its other sockets.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <zmq.hpp>

#include "protocol/base/clock.h"
#include "protocol/base/status.h"
#include "protocol/security/keys.h"

namespace gpool::replication {

struct PeerTransportOptions {
  // Where this replica listens, e.g. "tcp://127.0.0.1:7402"; port 0 picks a free one.
  std::string listen_endpoint = "tcp://127.0.0.1:7402";
  // Replica id -> peer endpoint, this replica excluded.
  std::map<uint64_t, std::string> peers;
  // Frames queued per peer before new ones are dropped.
  int send_queue_frames = 10'000;
  // Larger inbound frames are dropped (snapshots travel in chunks below this).
  size_t max_frame_bytes = 64 * 1024 * 1024;
  // Shared by every replica of the cluster; empty: frames are not checked.
  std::string token;
  // CurveZMQ (issue 31): with a secret key, the inbound ROUTER is a CURVE
  // server in ZAP domain "peers" and each DEALER a CURVE client of its peer's
  // public key; the coordinator's ZAP handler must already be bound.
  security::KeyPair curve_keys;
  // Told when a peer is connected (with its key) and forgotten, so the ZAP
  // handler admits exactly the replicas of the configuration.
  std::function<void(uint64_t id, const std::string& key)> on_peer_added;
  std::function<void(uint64_t id)> on_peer_removed;
  // CurveZMQ: the replica id a frame's ZAP User-Id names (0 for none), so
  // Raft can refuse a frame whose `from` is another replica's: an admitted
  // replica's key vouches for that replica only. Unset: frames carry 0.
  // kRefusedSender: the connection's key was a replica's whose grace has
  // ended (a rotated replica's old key); its frames are dropped.
  std::function<uint64_t(std::string_view user_id)> replica_of_user_id;
  // Wall time, for the deadline of a rotated peer's previous key.
  const Clock* clock = &SystemClock::Get();
};

// replica_of_user_id's answer for a connection whose frames are to be dropped.
inline constexpr uint64_t kRefusedSender = UINT64_MAX;

// A frame as received, with the replica its connection authenticated as
// (0: not authenticated, e.g. --insecure).
struct InboundFrame {
  uint64_t sender = 0;
  std::string bytes;
};

struct TransportStats {
  uint64_t sent = 0;
  uint64_t dropped_unknown_peer = 0;
  uint64_t dropped_queue_full = 0;
  uint64_t received = 0;
  uint64_t dropped_malformed = 0;        // wrong number of parts, or oversize
  uint64_t dropped_unauthenticated = 0;  // wrong or missing token
  uint64_t dropped_retired_key = 0;      // from a connection whose key's grace has ended
  uint64_t key_switches = 0;             // reconnections to a rotated peer under its other key
};

class PeerTransport {
 public:
  static Result<std::unique_ptr<PeerTransport>> Open(zmq::context_t& context, const PeerTransportOptions& options);
  ~PeerTransport();

  // Best effort; never blocks. False when the frame was dropped (unknown
  // peer, queue full), for a sender that keeps its own window.
  bool Send(uint64_t peer, std::string_view frame);
  // Membership changes: connect to a new replica, or forget a removed one.
  // InvalidArgument for an endpoint ZeroMQ cannot connect to, or, with
  // CurveZMQ on, a replica without a valid public key.
  Status AddPeer(uint64_t id, const std::string& endpoint, const std::string& key = "");
  void RemovePeer(uint64_t id);
  // Issue 48: peer `id` was given the key `key` (CurveZMQ pins a server's
  // public key). Until wall time previous_until_ms it may still serve
  // `previous_key` (not restarted on the new one yet): a connection whose
  // sends keep failing is made anew under the other of the two keys, the new
  // one preferred; after the deadline only the new one is used. A working
  // connection under the previous key is kept during the grace. NotFound for
  // an unknown peer, InvalidArgument for a key that is not Z85.
  Status RotatePeerKey(uint64_t id, const std::string& key, const std::string& previous_key,
                       int64_t previous_until_ms);
  // The server key peer `id`'s connection pins now (tests, status).
  std::string PinnedKey(uint64_t id) const;

  // The inbound socket, for zmq::poll alongside the coordinator's others.
  zmq::socket_t& inbound() { return inbound_; }
  // Takes up to `max` frames that have arrived, without blocking.
  std::vector<InboundFrame> Drain(size_t max = 1024);

  const std::string& listen_endpoint() const { return listen_endpoint_; }
  const TransportStats& stats() const { return stats_; }

 private:
  PeerTransport(zmq::context_t& context, const PeerTransportOptions& options);
  Result<std::unique_ptr<zmq::socket_t>> Connect(uint64_t id, const std::string& endpoint, const std::string& key);

  zmq::context_t& context_;
  PeerTransportOptions options_;
  zmq::socket_t inbound_;
  struct Outbound {
    std::string endpoint;
    std::string key;
    std::unique_ptr<zmq::socket_t> socket;
    // A rotated peer (RotatePeerKey): the key it served before, tried until
    // the wall-clock deadline, and the key `socket` pins (key or previous_key).
    std::string previous_key;
    int64_t previous_until_ms = 0;
    std::string pinned;
    // CurveZMQ: libzmq does not reconnect a connection whose handshake the
    // peer's ZAP handler refused (a replica that was not yet, or not yet
    // known to be, in the configuration). Sends to it then fail for good, so
    // a socket whose sends have failed this long is made anew.
    int64_t failing_since_ms = -1;
    int64_t reopened_ms = 0;
  };
  // A secured peer whose sends keep failing gets a fresh socket, at most
  // once a second.
  void MaybeReopen(uint64_t id, Outbound& peer);
  // Replaces peer's socket by one pinning `key`; false if it cannot connect.
  bool Repin(uint64_t id, Outbound& peer, const std::string& key);
  bool PreviousValid(const Outbound& peer) const {
    return !peer.previous_key.empty() && options_.clock->WallMs() < peer.previous_until_ms;
  }

  std::map<uint64_t, Outbound> outbound_;
  std::string listen_endpoint_;
  TransportStats stats_;
};

}  // namespace gpool::replication
