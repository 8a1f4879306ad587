#include "control/node_label_sync.h"

#include <spdlog/spdlog.h>

#include "control/state/cluster_state.h"
#include "protocol/labels_digest.h"
#include "protocol/messages_worker.h"

namespace gpool::control {

void NodeLabelSync::NodeHeartbeat(const std::string& node, uint64_t labels_digest, int64_t now_ms) {
  if (labels_digest == 0) return;  // the worker does not take them
  const state::NodeRecord* record = state_.FindNode(node);
  if (record == nullptr) return;
  const uint64_t want = LabelsDigest(record->admin_labels);
  if (labels_digest == want) {
    sent_.erase(node);
    return;
  }
  Sent& sent = sent_[node];
  if (sent.in_flight) return;
  if (sent.digest == want && now_ms - sent.at_ms < kResendMs) return;  // sent; its heartbeat may be on its way
  const uint64_t push = ++pushes_;
  sent = Sent{want, now_ms, true, push};
  spdlog::info("node labels sent node={} labels={}", node, record->admin_labels.size());
  relay_.Ask<NodeLabels, Ack>(node, NodeLabels{node, record->admin_labels}, now_ms,
                              [this, node, push](Result<Ack> reply) {
                                auto it = sent_.find(node);
                                if (it != sent_.end() && it->second.push == push) it->second.in_flight = false;
                                if (!reply.ok()) {
                                  spdlog::warn("node labels not taken node={} error=\"{}\"", node,
                                               reply.status().ToString());
                                }
                              });
}

}  // namespace gpool::control
