#include "worker/node_socket.h"

#include "protocol/security/curve_socket.h"

#include <cerrno>
#include <vector>

#include "worker/log.h"

namespace gpool::worker {

NodeSocket::NodeSocket(zmq::context_t& context, Link& link, NodeSocketOptions options)
    : context_(context), link_(link), options_(std::move(options)), log_(OrDefault(options_.logger)) {}

NodeSocket::~NodeSocket() { Close(0); }

void NodeSocket::Close(int linger_ms) {
  if (!socket_) return;
  socket_->set(zmq::sockopt::linger, linger_ms);
  socket_->close();
  socket_.reset();
}

void NodeSocket::Connect(const std::string& endpoint) {
  Close(0);
  try {
    zmq::socket_t socket(context_, zmq::socket_type::dealer);
    socket.set(zmq::sockopt::linger, 0);
    socket.set(zmq::sockopt::sndhwm, options_.send_hwm);
    socket.set(zmq::sockopt::rcvhwm, options_.receive_hwm);
    if (!options_.curve_keys.secret_key.empty()) {
      KeyTry& keys = key_tries_[endpoint];
      if (keys.tried && !keys.heard && options_.server_keys.Count(endpoint) > 1) {
        ++keys.attempt;
        log_->info("trying the endpoint's next accepted coordinator key endpoint={} key_index={}", endpoint,
                   keys.attempt % options_.server_keys.Count(endpoint));
      }
      keys.tried = true;
      keys.heard = false;
      Status curve =
          security::MakeCurveClient(socket, options_.curve_keys, options_.server_keys.For(endpoint, keys.attempt));
      if (!curve.ok()) {
        // Without the endpoint's key there is no secure way there: the Link
        // times out on the silence and moves on to the next endpoint.
        log_->error("cannot connect securely endpoint={} error={}", Q(endpoint), Q(curve.ToString()));
        return;
      }
    }
    socket.connect(endpoint);
    socket_ = std::move(socket);
    current_try_ = &key_tries_[endpoint];
    ++generation_;
    log_->debug("socket connected endpoint={}", endpoint);
  } catch (const zmq::error_t& e) {
    // The Link will time out on the silence and move to the next endpoint.
    log_->error("cannot connect endpoint={} error={}", Q(endpoint), Q(e.what()));
    socket_.reset();
  }
}

int NodeSocket::fd() {
  if (!socket_) return -1;
  try {
    return socket_->get(zmq::sockopt::fd);
  } catch (const zmq::error_t&) {
    return -1;
  }
}

bool NodeSocket::readable() {
  if (!socket_) return false;
  try {
    return (socket_->get(zmq::sockopt::events) & ZMQ_POLLIN) != 0;
  } catch (const zmq::error_t&) {
    return false;
  }
}

size_t NodeSocket::ApplyActions() {
  std::vector<LinkAction> actions = link_.TakeActions();
  for (LinkAction& action : actions) {
    if (action.kind == LinkAction::Kind::kConnect) {
      Connect(action.data);
      continue;
    }
    if (!socket_) {
      ++dropped_sends_;
      continue;
    }
    try {
      auto sent = socket_->send(zmq::buffer(action.data), zmq::send_flags::dontwait);
      if (!sent) {
        ++dropped_sends_;
        log_->debug("send queue full, frame dropped bytes={} dropped_total={}", action.data.size(), dropped_sends_);
      }
    } catch (const zmq::error_t& e) {
      ++dropped_sends_;
      log_->warn("send failed error={}", Q(e.what()));
    }
  }
  return actions.size();
}

size_t NodeSocket::ReceiveFrames() {
  size_t fed = 0;
  if (!socket_) return fed;
  for (size_t n = 0; n < options_.max_frames_per_turn; ++n) {
    // Coordinator frames are single-part; tolerate a leading empty delimiter.
    std::vector<zmq::message_t> parts;
    try {
      zmq::message_t part;
      if (!socket_->recv(part, zmq::recv_flags::dontwait)) return fed;
      bool more = part.more();
      parts.push_back(std::move(part));
      while (more) {
        zmq::message_t next;
        if (!socket_->recv(next, zmq::recv_flags::none)) break;
        more = next.more();
        parts.push_back(std::move(next));
      }
    } catch (const zmq::error_t& e) {
      if (e.num() != EINTR) log_->warn("receive failed error={}", Q(e.what()));
      return fed;
    }
    size_t first = 0;
    while (first + 1 < parts.size() && parts[first].size() == 0) ++first;
    if (parts.size() - first != 1) {
      log_->warn("multi-part message from coordinator dropped parts={}", parts.size());
      continue;
    }
    if (current_try_ != nullptr) current_try_->heard = true;  // the key it was made with works there
    link_.Receive(parts[first].to_string_view());
    ++fed;
  }
  return fed;
}

}  // namespace gpool::worker
