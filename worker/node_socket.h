// NodeSocket: one node's DEALER socket to the coordinator. It performs what
// a Link asks (connect: drop the socket and open a new one to the endpoint,
// ZMQ_LINGER 0 and bounded HWMs; send: non-blocking, a frame that cannot be
// queued is dropped, counted and logged, and the Link resends what matters)
// and hands the Link every frame that arrives.
//
// The Agent drives one; a fleet (fleet.h) drives thousands on one thread,
// all on one ZeroMQ context, polling their handles together.
//
// Ownership and threads: owns the socket, not the context or the Link,
// which must outlive it. One thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <optional>

#include <spdlog/logger.h>
#include <zmq.hpp>

#include "protocol/security/keys.h"
#include "protocol/security/server_keys.h"
#include "worker/link.h"

namespace gpool::worker {

struct NodeSocketOptions {
  int send_hwm = 1000;                     // frames queued per socket before sends drop
  int receive_hwm = 1000;
  size_t max_frames_per_turn = 1000;       // keeps timers running under a flood
  std::shared_ptr<spdlog::logger> logger;  // nullptr: spdlog's default
  // CurveZMQ: this node's key pair (empty secret: plaintext, --insecure) and
  // each coordinator endpoint's public key.
  security::KeyPair curve_keys;
  security::ServerKeys server_keys;
};

class NodeSocket {
 public:
  NodeSocket(zmq::context_t& context, Link& link, NodeSocketOptions options);
  ~NodeSocket();
  NodeSocket(const NodeSocket&) = delete;
  NodeSocket& operator=(const NodeSocket&) = delete;

  // Performs the Link's pending actions, in order; returns how many there
  // were.
  size_t ApplyActions();
  // Feeds the Link what has arrived, at most max_frames_per_turn frames;
  // returns how many it fed.
  size_t ReceiveFrames();
  // Closes the socket, giving queued frames `linger_ms` on the wire.
  void Close(int linger_ms);

  // For zmq_poll; nullptr while there is no socket (a connect failed).
  void* handle() { return socket_ ? socket_->handle() : nullptr; }
  // ZMQ_FD, for epoll; -1 while there is no socket. It signals edges only:
  // after sending, check readable(), since a send can consume the edge of a
  // frame that arrived meanwhile.
  int fd();
  // ZMQ_EVENTS has POLLIN: a frame is waiting.
  bool readable();
  uint64_t dropped_sends() const { return dropped_sends_; }
  // Counts the sockets opened: a change means a new socket (whose fd may
  // reuse the old one's number).
  uint64_t generation() const { return generation_; }

 private:
  void Connect(const std::string& endpoint);

  zmq::context_t& context_;
  Link& link_;
  NodeSocketOptions options_;
  std::shared_ptr<spdlog::logger> log_;
  std::optional<zmq::socket_t> socket_;
  uint64_t dropped_sends_ = 0;
  uint64_t generation_ = 0;
  // An endpoint whose entry accepts several keys (a replica in a key
  // rotation, --coordinator-key new.pub+old.pub): the key to try, moved on
  // when a connection under it brought no frame before the Link gave up.
  struct KeyTry {
    size_t attempt = 0;
    bool tried = false;
    bool heard = false;
  };
  std::map<std::string, KeyTry> key_tries_;
  KeyTry* current_try_ = nullptr;  // socket_'s endpoint's (map nodes do not move)
};

}  // namespace gpool::worker
