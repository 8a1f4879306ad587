#include "control/replication/peer_transport.h"

#include <chrono>

#include <spdlog/spdlog.h>

#include "protocol/base/endpoint.h"
#include "protocol/base/token_file.h"
#include "protocol/security/curve_socket.h"

namespace gpool::replication {
namespace {

constexpr int64_t kReopenMs = 1000;
// A rotated peer in its grace is tried under its other key this often while
// sends fail: about libzmq's reconnect interval (250 ms at most), so a
// replica restarted on its new key is found about as soon as after a plain
// restart, before it would time out and call an election.
constexpr int64_t kRotatedReopenMs = 150;

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

PeerTransport::PeerTransport(zmq::context_t& context, const PeerTransportOptions& options)
    : context_(context), options_(options), inbound_(context, zmq::socket_type::router) {}

PeerTransport::~PeerTransport() {
  for (auto& [id, peer] : outbound_) peer.socket->close();
  inbound_.close();
}

Result<std::unique_ptr<PeerTransport>> PeerTransport::Open(zmq::context_t& context,
                                                           const PeerTransportOptions& options) {
  std::unique_ptr<PeerTransport> transport(new PeerTransport(context, options));
  try {
    transport->inbound_.set(zmq::sockopt::linger, 0);
    transport->inbound_.set(zmq::sockopt::rcvhwm, 100'000);
    transport->inbound_.set(zmq::sockopt::maxmsgsize, static_cast<int64_t>(options.max_frame_bytes));
    if (!options.curve_keys.secret_key.empty()) {
      GPOOL_RETURN_IF_ERROR(
          security::MakeCurveServer(transport->inbound_, options.curve_keys, security::kPeersDomain));
    }
    transport->inbound_.bind(BindableEndpoint(options.listen_endpoint));
    transport->listen_endpoint_ = transport->inbound_.get(zmq::sockopt::last_endpoint);
  } catch (const zmq::error_t& e) {
    return Status::Unavailable("cannot listen for peers on " + options.listen_endpoint + ": " + e.what());
  }
  for (const auto& [id, endpoint] : options.peers) GPOOL_RETURN_IF_ERROR(transport->AddPeer(id, endpoint, ""));
  return transport;
}

Result<std::unique_ptr<zmq::socket_t>> PeerTransport::Connect(uint64_t id, const std::string& endpoint,
                                                              const std::string& key) {
  auto socket = std::make_unique<zmq::socket_t>(context_, zmq::socket_type::dealer);
  if (!options_.curve_keys.secret_key.empty()) {
    GPOOL_RETURN_IF_ERROR(security::MakeCurveClient(*socket, options_.curve_keys, key));
  }
  socket->set(zmq::sockopt::linger, 0);
  socket->set(zmq::sockopt::sndhwm, options_.send_queue_frames);
  // Frames for a peer that is down are not worth keeping: Raft resends.
  socket->set(zmq::sockopt::immediate, 1);
  socket->set(zmq::sockopt::reconnect_ivl, 50);
  // A restarted replica is found again within a quarter second.
  socket->set(zmq::sockopt::reconnect_ivl_max, 250);
  try {
    socket->connect(endpoint);
  } catch (const zmq::error_t& e) {
    return Status::InvalidArgument("cannot connect to replica " + std::to_string(id) + " at '" + endpoint +
                                   "': " + e.what());
  }
  return socket;
}

Status PeerTransport::AddPeer(uint64_t id, const std::string& endpoint, const std::string& key) {
  const bool secured = !options_.curve_keys.secret_key.empty();
  if (secured && !security::IsZ85Key(key)) {
    return Status::InvalidArgument("replica " + std::to_string(id) + " at '" + endpoint +
                                   "' has no public key; a CurveZMQ cluster needs one for every replica "
                                   "(--peer-keys, or replica add --replica-key)");
  }
  auto existing = outbound_.find(id);
  if (existing != outbound_.end() && existing->second.endpoint == endpoint && existing->second.key == key) {
    return Status::Ok();
  }
  // The configuration naming a rotated peer's previous key again (a replica
  // started with the --peer-keys of before the rotation, whose state then
  // rotates it) is the rotation's business: keep the rotated key.
  if (existing != outbound_.end() && existing->second.endpoint == endpoint && !key.empty() &&
      key == existing->second.previous_key) {
    return Status::Ok();
  }
  GPOOL_ASSIGN_OR_RETURN(std::unique_ptr<zmq::socket_t> socket, Connect(id, endpoint, key));
  if (existing != outbound_.end()) existing->second.socket->close();
  Outbound added;
  added.endpoint = endpoint;
  added.key = key;
  added.pinned = key;
  added.socket = std::move(socket);
  added.reopened_ms = NowMs();
  outbound_[id] = std::move(added);
  if (options_.on_peer_added) options_.on_peer_added(id, key);
  return Status::Ok();
}

void PeerTransport::RemovePeer(uint64_t id) {
  auto it = outbound_.find(id);
  if (it == outbound_.end()) return;
  it->second.socket->close();
  outbound_.erase(it);
  if (options_.on_peer_removed) options_.on_peer_removed(id);
}

Status PeerTransport::RotatePeerKey(uint64_t id, const std::string& key, const std::string& previous_key,
                                    int64_t previous_until_ms) {
  auto it = outbound_.find(id);
  if (it == outbound_.end()) return Status::NotFound("replica " + std::to_string(id) + " is not a peer here");
  if (!options_.curve_keys.secret_key.empty() && !security::IsZ85Key(key)) {
    return Status::InvalidArgument("replica " + std::to_string(id) + ": its new key is not a Z85 public key");
  }
  Outbound& peer = it->second;
  peer.key = key;
  peer.previous_key = previous_key == key ? std::string() : previous_key;
  peer.previous_until_ms = previous_until_ms;
  // A peer reached under its previous key keeps that connection during the
  // grace: the replica may not have been restarted on the new key yet, and
  // a working connection is not given up for a guess.
  const bool keep = peer.pinned == key || (peer.pinned == peer.previous_key && PreviousValid(peer));
  if (!keep) (void)Repin(id, peer, key);
  if (options_.on_peer_added) options_.on_peer_added(id, key);
  return Status::Ok();
}

std::string PeerTransport::PinnedKey(uint64_t id) const {
  auto it = outbound_.find(id);
  return it == outbound_.end() ? std::string() : it->second.pinned;
}

bool PeerTransport::Repin(uint64_t id, Outbound& peer, const std::string& key) {
  auto socket = Connect(id, peer.endpoint, key);
  if (!socket.ok()) return false;
  peer.socket->close();
  peer.socket = std::move(socket).value();
  peer.pinned = key;
  peer.reopened_ms = NowMs();
  peer.failing_since_ms = -1;
  return true;
}

bool PeerTransport::Send(uint64_t peer, std::string_view frame) {
  auto it = outbound_.find(peer);
  if (it == outbound_.end()) {
    ++stats_.dropped_unknown_peer;
    return false;
  }
  // A connection under a rotated peer's previous key ends with its grace.
  if (it->second.pinned != it->second.key && !PreviousValid(it->second)) {
    if (Repin(peer, it->second, it->second.key)) {
      ++stats_.key_switches;
      spdlog::info("peer key grace ended, reconnecting under the new key replica={} endpoint={}", peer,
                   it->second.endpoint);
    }
  }
  zmq::socket_t& socket = *it->second.socket;
  // Both parts of a message are queued together or not at all (ZeroMQ's
  // atomic multipart delivery); a full queue refuses the first part.
  if (!options_.token.empty() &&
      !socket.send(zmq::buffer(options_.token), zmq::send_flags::dontwait | zmq::send_flags::sndmore).has_value()) {
    ++stats_.dropped_queue_full;
    return false;
  }
  auto sent = socket.send(zmq::buffer(frame.data(), frame.size()), zmq::send_flags::dontwait);
  if (sent.has_value()) {
    ++stats_.sent;
    it->second.failing_since_ms = -1;
    return true;
  }
  ++stats_.dropped_queue_full;
  MaybeReopen(peer, it->second);
  return false;
}

void PeerTransport::MaybeReopen(uint64_t id, Outbound& peer) {
  if (options_.curve_keys.secret_key.empty()) return;  // plaintext: libzmq reconnects by itself
  const int64_t now = NowMs();
  if (peer.failing_since_ms < 0) peer.failing_since_ms = now;
  const int64_t wait_ms = PreviousValid(peer) ? kRotatedReopenMs : kReopenMs;
  if (now - peer.failing_since_ms < wait_ms || now - peer.reopened_ms < wait_ms) return;
  // A rotated peer may serve either key during the grace (restarted on the
  // new one or not yet): a connection that does not complete under one is
  // tried under the other, the new key first.
  const bool other = peer.pinned == peer.key && PreviousValid(peer);
  const std::string key = other ? peer.previous_key : peer.key;
  const std::string was = peer.pinned;
  if (!Repin(id, peer, key)) return;
  if (key != was) ++stats_.key_switches;
  spdlog::debug("peer socket reopened replica={} endpoint={} key={} (its handshake may have been refused)", id,
                peer.endpoint, key == peer.key ? "current" : "previous");
}

std::vector<InboundFrame> PeerTransport::Drain(size_t max) {
  std::vector<InboundFrame> frames;
  while (frames.size() < max) {
    zmq::message_t identity;
    if (!inbound_.recv(identity, zmq::recv_flags::dontwait)) break;
    std::vector<zmq::message_t> parts;
    while (inbound_.get(zmq::sockopt::rcvmore)) {
      zmq::message_t part;
      if (!inbound_.recv(part, zmq::recv_flags::dontwait)) break;
      parts.push_back(std::move(part));
    }
    const size_t expected = options_.token.empty() ? 1 : 2;
    if (parts.size() != expected) {
      if (stats_.dropped_malformed++ % 1000 == 0) {
        spdlog::warn("peer message dropped parts={} expected={} (is the cluster token the same on every "
                     "replica?) dropped_so_far={}", parts.size(), expected, stats_.dropped_malformed);
      }
      continue;
    }
    if (expected == 2 && !ConstantTimeEquals(parts[0].to_string_view(), options_.token)) {
      if (stats_.dropped_unauthenticated++ % 1000 == 0) {
        spdlog::warn("peer message dropped: wrong token dropped_so_far={}", stats_.dropped_unauthenticated);
      }
      continue;
    }
    ++stats_.received;
    zmq::message_t& frame = parts.back();
    uint64_t sender = 0;
    if (options_.replica_of_user_id) {
      const char* user_id = zmq_msg_gets(frame.handle(), "User-Id");
      if (user_id != nullptr) sender = options_.replica_of_user_id(user_id);
    }
    if (sender == kRefusedSender) {
      // A rotated replica's old key after its grace: the handshake would be
      // refused now, and so are the frames of a connection it still holds.
      if (stats_.dropped_retired_key++ % 1000 == 0) {
        spdlog::warn("peer message dropped: its connection's key was rotated away and its grace has ended "
                     "dropped_so_far={}", stats_.dropped_retired_key);
      }
      continue;
    }
    frames.push_back(InboundFrame{sender, std::string(static_cast<const char*>(frame.data()), frame.size())});
  }
  return frames;
}

}  // namespace gpool::replication
