// NodeLabelSync: keeps each worker's copy of its node's operator labels
// (`gpool node label`, the state's admin labels) equal to the state's, so
// what the worker decides from its own labels (the self-repair switches,
// repair.gpool.io/...) follows the operator without a restart (issue 50).
//
// Every heartbeat names, by digest, the labels its worker holds
// (Heartbeat.labels_digest; 0: a worker that does not take them). When that
// differs from the digest of the node's admin labels, the whole map goes to
// the worker (NodeLabels, through the WorkerRelay) and the next heartbeats
// show whether it took it. So a label change reaches a connected worker
// within a heartbeat; a restarted worker or a new leader needs no replay:
// the first heartbeat it sees differs. One push per node is in flight at a
// time, and the same labels are not sent again within kResendMs of the last
// send (a worker that refuses them is asked again, not flooded).
//
// Thread-safety: none; the coordinator's loop thread owns it.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "control/worker_relay.h"
#include "control/worker_table.h"

namespace gpool::state {
class ClusterState;
}

namespace gpool::control {

class NodeLabelSync final : public WorkerEvents {
 public:
  static constexpr int64_t kResendMs = 5000;

  NodeLabelSync(const state::ClusterState& state, WorkerRelay& relay) : state_(state), relay_(relay) {}

  // WorkerEvents
  void NodeHeartbeat(const std::string& node, uint64_t labels_digest, int64_t now_ms) override;
  void NodeConnected(const std::string& node) override { sent_.erase(node); }

  uint64_t pushes() const { return pushes_; }

 private:
  struct Sent {
    uint64_t digest = 0;  // of the labels last sent
    int64_t at_ms = 0;
    bool in_flight = false;
    uint64_t push = 0;  // which push is in flight: an older one's answer frees nothing
  };

  const state::ClusterState& state_;
  WorkerRelay& relay_;
  std::map<std::string, Sent> sent_;  // nodes whose worker holds other labels than the state's
  uint64_t pushes_ = 0;
};

}  // namespace gpool::control
