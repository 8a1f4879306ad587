// ConnectionLedger: live connections per key on the coordinator's client
// port, so one key cannot take every connection the coordinator can hold
// (issue 48: --max-connections-per-key). Counted in the loop from two
// sources: the client ROUTER's socket monitor (ClientMonitor) says when a
// connection's fd opens (ZMQ_EVENT_ACCEPTED) and closes
// (ZMQ_EVENT_DISCONNECTED), and each message says which fd it came from
// (ZMQ_SRCFD), from which peer (the ROUTER's routing id, never reused
// within a socket) and as which key (the ZAP handler's "User-Id").
//
// A connection counts for its key from its first message on; a message on
// a connection that does not count yet, of a key that has max_per_key
// counted, is refused (ResourceExhausted naming the limit) and the
// connection stays uncounted, so it is admitted once one of that key's
// connections closes. Closing frees the slot, so a client that reconnects
// often is never locked out. Exempt callers (admins) are never counted.
//
// Why the first message rather than the ZAP handler: ZAP sees the key but
// not the connection, and the monitor sees the connection but not the key;
// only a message carries both. A connection that never speaks holds no
// slot (and costs the coordinator no more than an fd).
//
// The monitor's events arrive on their own socket, read before each drain
// of the client port: a message's connection was accepted before it was
// sent, so its ACCEPTED has been read by then. A message read after its
// connection's close (it was queued) is not counted: its peer is
// remembered as closed.
//
// Thread-safety: none; the coordinator's loop thread owns it.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>

#include "control/refusal_log.h"
#include "protocol/base/status.h"

namespace gpool::control {

class ConnectionLedger {
 public:
  explicit ConnectionLedger(uint32_t max_per_key) : max_per_key_(max_per_key) {}

  // A connection was accepted on `fd`. An fd still known here (its close
  // was missed) was closed first.
  void Opened(int fd);
  // The connection on `fd` closed: the peer it spoke as, if it spoke.
  std::optional<std::string> Closed(int fd);
  // A message from `peer` on `fd`, authenticated as `key`. Ok: deliver it
  // (counted now, counted before, exempt, or a connection not tracked);
  // ResourceExhausted: `key` has max_per_key connections counted already.
  // `exempt` is asked once per connection, when it would first be counted.
  Status Admit(int fd, const std::string& peer, const std::string& key, const std::function<bool()>& exempt,
               int64_t now_ms);

  uint32_t held(const std::string& key) const;
  size_t tracked() const { return connections_.size(); }  // open connections, counted or not
  bool Tracks(int fd) const { return connections_.contains(fd); }
  size_t counted() const { return counted_; }
  uint32_t limit() const { return max_per_key_; }

 private:
  struct Connection {
    std::string peer;  // empty until it speaks
    std::string key;   // set once counted
    bool counted = false;
    bool exempt = false;
  };
  void Uncount(Connection& connection);
  void RememberClosed(const std::string& peer);

  uint32_t max_per_key_;
  std::unordered_map<int, Connection> connections_;  // by fd
  std::map<std::string, uint32_t> held_;             // by key
  size_t counted_ = 0;
  // Peers whose connection closed, newest last (bounded): their queued
  // messages are delivered but count for nothing.
  std::set<std::string> closed_peers_;
  std::deque<std::string> closed_order_;
  RefusalLog refusals_;
};

}  // namespace gpool::control
