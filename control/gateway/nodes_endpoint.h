// NodesEndpoint: ListNodes, UpdateNode (cordon, pools, taints, enrolling a
// worker key) and ReportProbe (`gpool probe` results, which flag slow nodes).
// Updates are validated here, at the edge; apply takes what it is given.
#pragma once

#include "control/gateway/endpoint.h"
#include "protocol/message_type.h"
#include "protocol/messages_nodes.h"
#include "protocol/model/node_update.h"

namespace gpool::control {

class NodesEndpoint final : public Endpoint {
 public:
  explicit NodesEndpoint(RequestContext& ctx) : ctx_(ctx) {}
  std::vector<MessageType> Serves() const override {
    return {MessageType::kListNodes, MessageType::kUpdateNode, MessageType::kReportProbe};
  }
  void Handle(const Request& request, const Envelope& envelope, int64_t now_ms) override;

 private:
  void OnList(const Request& request, bool devices);
  void OnUpdate(const Request& request, UpdateNode msg);
  void OnReportProbe(const Request& request, ReportProbe msg);

  RequestContext& ctx_;
};

}  // namespace gpool::control
