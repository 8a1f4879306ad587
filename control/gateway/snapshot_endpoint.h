// SnapshotEndpoint: ExportSnapshot (docs/protocol.md 7.20), how `gpool admin
// snapshot save` copies the state out. Admins only: the image holds every
// job's env and every key binding. Starting an export is audited; reading its
// chunks is not (the start already says who took the copy). An export's
// reader restarts at a new leader: the images are dropped once this replica
// no longer leads, and when idle too long. The image is encoded off the loop
// (issue 49: snapshot_taker.h) when the coordinator provides for it.
#pragma once

#include "control/gateway/endpoint.h"
#include "control/snapshot_exports.h"
#include "protocol/message_type.h"

namespace gpool::control {

class SnapshotEndpoint final : public Endpoint {
 public:
  explicit SnapshotEndpoint(RequestContext& ctx) : ctx_(ctx) {}
  std::vector<MessageType> Serves() const override { return {MessageType::kExportSnapshot}; }
  void Handle(const Request& request, const Envelope& envelope, int64_t now_ms) override;
  void Tick(int64_t now_ms) override;
  size_t exports_held() const { return exports_.held(); }

 private:
  void Started(const Request& request, Result<ExportSnapshotReply> first);

  RequestContext& ctx_;
  SnapshotExports exports_;
  int64_t last_tick_ms_ = 0;  // the loop's clock, for an image that arrives between requests
};

}  // namespace gpool::control
