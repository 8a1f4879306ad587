// ClusterEndpoint: ClusterStatus (any authenticated caller: it is what health
// checks and `gpool status` ask, answered from this replica without the read
// barrier), ListEvents, and ChangeReplicas (`gpool admin replica add|remove`,
// Raft single-server changes through Proposer::ChangeMembership; `rotate-key`,
// a member's new CurveZMQ key with a grace for its old one, a replicated
// command: cluster_endpoint_rotate.cc).
#pragma once

#include "control/gateway/endpoint.h"
#include "protocol/message_type.h"
#include "protocol/messages_admin.h"

namespace gpool::control {

class ClusterEndpoint final : public Endpoint {
 public:
  explicit ClusterEndpoint(RequestContext& ctx) : ctx_(ctx) {}
  std::vector<MessageType> Serves() const override {
    return {MessageType::kClusterStatus, MessageType::kListEvents, MessageType::kChangeReplicas};
  }
  void Handle(const Request& request, const Envelope& envelope, int64_t now_ms) override;

  // This replica's view: its role, the replicas, nodes, GPUs and jobs.
  ClusterStatusReply StatusNow() const;

 private:
  void OnChangeReplicas(const Request& request, const ChangeReplicas& msg);
  void OnRotateReplicaKey(const Request& request, const ChangeReplicas& msg);

  RequestContext& ctx_;
};

}  // namespace gpool::control
