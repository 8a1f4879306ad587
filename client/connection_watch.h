// ConnectionWatch: tells a client at once that the coordinator it talks to
// dropped the connection (its process died, its host went away).
//
// Without it, a request in flight to a coordinator that was just killed
// waits out its whole reply timeout, and a socket that sat idle while its
// peer died blocks its next send for the connect timeout, before the client
// moves on to another replica: both add directly to how long a leader's
// death is felt (issue 49). ZeroMQ reports a broken TCP session on the
// socket's monitor (ZMQ_EVENT_DISCONNECTED) within milliseconds; the client
// polls it beside the socket and treats the event like a timeout, so its
// usual failover (the next endpoint, NotLeader redirects) starts at once.
// Only sessions that were up can be lost: a connect that never succeeds is
// still bounded by the connect timeout.
//
// Ownership: watches a socket it does not own; destroy the watch (or call
// Stop) before the socket. Thread-safety: the socket's thread.
#pragma once

#include <memory>
#include <string>

#include <zmq.hpp>

namespace gpool {

class ConnectionWatch {
 public:
  // Starts monitoring `socket` (before or after it connects).
  ConnectionWatch(zmq::context_t& context, zmq::socket_t& socket);
  ~ConnectionWatch();
  ConnectionWatch(const ConnectionWatch&) = delete;
  ConnectionWatch& operator=(const ConnectionWatch&) = delete;

  // False when the monitor could not be started: Lost() is then always false.
  bool active() const { return events_ != nullptr; }
  // For zmq::poll beside the socket (when active); POLLIN: an event waits.
  zmq::pollitem_t poll_item();
  // Reads the waiting events without blocking; true when one says the
  // connection was lost. Once lost, stays lost.
  bool Lost();

 private:
  zmq::socket_t& socket_;
  std::unique_ptr<zmq::socket_t> events_;  // null when monitoring could not start
  bool lost_ = false;
};

}  // namespace gpool
