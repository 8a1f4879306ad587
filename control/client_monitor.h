// ClientMonitor: the client ROUTER's socket monitor, read into a
// ConnectionLedger (issue 48: connections per key). Started before the
// ROUTER binds, so no connection is accepted unseen; its events are read
// (Drain) before each drain of the client port (connection_ledger.h says
// why that order matters).
//
// The monitor's pipe has no high-water mark: libzmq drops an event that
// does not fit, and a dropped close would hold a slot until the fd is
// reused.
//
// Thread-safety: none; the coordinator's loop thread owns it.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include <zmq.hpp>

#include "control/connection_ledger.h"
#include "protocol/base/status.h"

namespace gpool::control {

class ClientMonitor {
 public:
  static Result<std::unique_ptr<ClientMonitor>> Start(zmq::context_t& context, zmq::socket_t& router,
                                                      uint32_t max_per_key);

  // For the loop's poll: readable when events wait.
  zmq::socket_t& events() { return events_; }
  // Reads every waiting event into the ledger; `closed(peer)` for each
  // connection that closed having spoken.
  void Drain(const std::function<void(const std::string& peer)>& closed);
  // ConnectionLedger::Admit for a message that arrived on `fd`. A
  // connection's accept event is sent before any of its messages can
  // arrive, but on another pipe: a message read before the events were may
  // name an fd the ledger has not seen yet, and would go uncounted. So an
  // unknown fd first reads the events waiting (`closed` as for Drain).
  Status Admit(int fd, const std::string& peer, const std::string& key, const std::function<bool()>& exempt,
               int64_t now_ms, const std::function<void(const std::string& peer)>& closed);
  ConnectionLedger& ledger() { return ledger_; }
  const ConnectionLedger& ledger() const { return ledger_; }

 private:
  ClientMonitor(zmq::context_t& context, uint32_t max_per_key)
      : events_(context, zmq::socket_type::pair), ledger_(max_per_key) {}

  zmq::socket_t events_;
  ConnectionLedger ledger_;
};

}  // namespace gpool::control
