#include "control/replication/peer_transport.h"

namespace gpool::replication {
namespace {

std::string NormalizeEndpoint(std::string endpoint) {
  if (endpoint.size() > 2 && endpoint.compare(endpoint.size() - 2, 2, ":0") == 0) {
    endpoint.replace(endpoint.size() - 1, 1, "*");
  }
  return endpoint;
}

}  // namespace

PeerTransport::PeerTransport(zmq::context_t& context, const PeerTransportOptions& options)
    : context_(context), options_(options), inbound_(context, zmq::socket_type::router) {}

PeerTransport::~PeerTransport() {
  for (auto& [id, socket] : outbound_) socket->close();
  inbound_.close();
}

Result<std::unique_ptr<PeerTransport>> PeerTransport::Open(zmq::context_t& context,
                                                           const PeerTransportOptions& options) {
  std::unique_ptr<PeerTransport> transport(new PeerTransport(context, options));
  try {
    transport->inbound_.set(zmq::sockopt::linger, 0);
    transport->inbound_.set(zmq::sockopt::rcvhwm, 100'000);
    transport->inbound_.set(zmq::sockopt::maxmsgsize, static_cast<int64_t>(options.max_frame_bytes));
    transport->inbound_.bind(NormalizeEndpoint(options.listen_endpoint));
    transport->listen_endpoint_ = transport->inbound_.get(zmq::sockopt::last_endpoint);
  } catch (const zmq::error_t& e) {
    return Status::Unavailable("cannot listen for peers on " + options.listen_endpoint + ": " + e.what());
  }
  for (const auto& [id, endpoint] : options.peers) transport->AddPeer(id, endpoint);
  return transport;
}

void PeerTransport::AddPeer(uint64_t id, const std::string& endpoint) {
  auto socket = std::make_unique<zmq::socket_t>(context_, zmq::socket_type::dealer);
  socket->set(zmq::sockopt::linger, 0);
  socket->set(zmq::sockopt::sndhwm, options_.send_queue_frames);
  // Frames for a peer that is down are not worth keeping: Raft resends.
  socket->set(zmq::sockopt::immediate, 1);
  socket->set(zmq::sockopt::reconnect_ivl, 50);
  // A restarted replica is found again within a quarter second.
  socket->set(zmq::sockopt::reconnect_ivl_max, 250);
  socket->connect(endpoint);
  outbound_[id] = std::move(socket);
}

void PeerTransport::RemovePeer(uint64_t id) {
  auto it = outbound_.find(id);
  if (it == outbound_.end()) return;
  it->second->close();
  outbound_.erase(it);
}

void PeerTransport::Send(uint64_t peer, std::string_view frame) {
  auto it = outbound_.find(peer);
  if (it == outbound_.end()) {
    ++stats_.dropped_unknown_peer;
    return;
  }
  auto sent = it->second->send(zmq::buffer(frame.data(), frame.size()), zmq::send_flags::dontwait);
  if (sent.has_value()) {
    ++stats_.sent;
  } else {
    ++stats_.dropped_queue_full;
  }
}

std::vector<std::string> PeerTransport::Drain(size_t max) {
  std::vector<std::string> frames;
  while (frames.size() < max) {
    zmq::message_t identity;
    if (!inbound_.recv(identity, zmq::recv_flags::dontwait)) break;
    std::vector<zmq::message_t> parts;
    while (inbound_.get(zmq::sockopt::rcvmore)) {
      zmq::message_t part;
      if (!inbound_.recv(part, zmq::recv_flags::dontwait)) break;
      parts.push_back(std::move(part));
    }
    if (parts.size() != 1) {
      ++stats_.dropped_malformed;
      continue;
    }
    ++stats_.received;
    frames.emplace_back(static_cast<const char*>(parts[0].data()), parts[0].size());
  }
  return frames;
}

}  // namespace gpool::replication
