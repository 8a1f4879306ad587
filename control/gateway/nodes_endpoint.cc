#include "control/gateway/nodes_endpoint.h"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "control/views.h"
#include "protocol/message_type.h"
#include "protocol/messages_nodes.h"
#include "protocol/model/node_update.h"

namespace gpool::control {

void NodesEndpoint::Handle(const Request& request, const Envelope& envelope, int64_t now_ms) {
  (void)now_ms;
  switch (request.type) {
    case MessageType::kListNodes:
      if (auto msg = ctx_.Decode<ListNodes>(request, envelope)) {
        if (!ctx_.Permit(request, Permission::kReadCluster, {}, "nodes")) return;
        ctx_.AfterBarrier(request, [this, request, devices = msg->devices] { OnList(request, devices); });
      }
      return;
    case MessageType::kUpdateNode:
      if (auto msg = ctx_.Decode<UpdateNode>(request, envelope)) {
        // A key rotation's grace is in the audit target: who kept an old key
        // working, and for how long, is on record.
        const std::string target = msg->op == NodeUpdateOp::kWorkerKey && msg->grace_ms > 0
                                       ? "node " + msg->node + " key-rotation grace_ms=" + std::to_string(msg->grace_ms)
                                       : "node " + msg->node;
        if (!ctx_.Permit(request, Permission::kManageNodes, {}, target)) return;
        OnUpdate(request, std::move(*msg));
      }
      return;
    default:
      if (auto msg = ctx_.Decode<ReportProbe>(request, envelope)) {
        if (!ctx_.Permit(request, Permission::kReportProbe, {}, "probe " + std::string(NameOf(msg->kind)))) return;
        OnReportProbe(request, std::move(*msg));
      }
      return;
  }
}

void NodesEndpoint::OnList(const Request& request, bool devices) {
  ListNodesReply reply;
  for (const auto& [name, node] : ctx_.state().nodes()) {
    reply.nodes.push_back(ToNodeSummary(node, devices, &ctx_.state()));
    reply.nodes.back().last_seen_ms = std::max(reply.nodes.back().last_seen_ms, ctx_.workers().LastSeenWallMs(name));
  }
  ctx_.Answer(request, reply);
}

void NodesEndpoint::OnUpdate(const Request& request, UpdateNode msg) {
  const state::ClusterState& state = ctx_.state();
  if (Status valid = ValidateUpdateNode(msg); !valid.ok()) return ctx_.Fail(request, valid);
  // A worker key may be enrolled before its node ever registers.
  if (state.FindNode(msg.node) == nullptr && msg.op != NodeUpdateOp::kWorkerKey) {
    return ctx_.Fail(request, Status::NotFound("node " + msg.node + " is not registered"));
  }
  if (!msg.queue.empty() && state.FindQueue(msg.queue) == nullptr) {
    return ctx_.Fail(request,
                     Status::NotFound("queue '" + msg.queue + "' does not exist (`gpool queue tree` lists the queues)"));
  }
  const std::string name = msg.node;
  const std::string_view op = NameOf(msg.op);
  ctx_.ProposeAudited(state::UpdateNodeCmd{std::move(msg)}, [this, request, name, op](const state::ApplyResult& result) {
    if (!result.status.ok()) return ctx_.Fail(request, result.status);
    const auto* node = ctx_.state().FindNode(name);
    if (node == nullptr && ctx_.state().enrolled_nodes().count(name) > 0) {
      NodeSummary enrolled;
      enrolled.name = name;
      enrolled.state = "Enrolled";
      spdlog::info("node enrolled before registering node={}", name);
      return ctx_.Answer(request, UpdateNodeReply{enrolled});
    }
    if (node == nullptr) return ctx_.Fail(request, Status::NotFound("node " + name + " is not registered"));
    spdlog::info("node updated node={} op={} cordoned={} pool={} pool_queue={}", name, op, node->cordoned, node->pool,
                 node->pool_queue);
    ctx_.Answer(request, UpdateNodeReply{ToNodeSummary(*node)});
  });
}

void NodesEndpoint::OnReportProbe(const Request& request, ReportProbe msg) {
  constexpr size_t kMaxResults = 100'000;
  if (msg.results.size() > kMaxResults) {
    return ctx_.Fail(request, Status::ResourceExhausted("results: at most 100000 nodes per probe"));
  }
  for (auto& r : msg.results) {
    if (r.node.empty() || r.node.size() > 253) {
      return ctx_.Fail(request, Status::InvalidArgument("results: every result names a node (at most 253 bytes)"));
    }
    if (r.message.size() > 1024) r.message.resize(1024);
  }
  const std::string kind(NameOf(msg.kind));  // network or gpu: decoding refused any other
  ctx_.ProposeAudited(state::ProbeResultCmd{msg.kind, std::move(msg.results)},
                      [this, request, kind](const state::ApplyResult& result) {
                        if (!result.status.ok()) return ctx_.Fail(request, result.status);
                        ReportProbeReply reply;
                        for (const auto& [name, node] : ctx_.state().nodes()) {
                          for (const auto& c : node.probe_health) reply.flagged += c.device == "probe/" + kind ? 1 : 0;
                        }
                        spdlog::info("probe results committed kind={} flagged={}", kind, reply.flagged);
                        ctx_.Answer(request, reply);
                      });
}

}  // namespace gpool::control
