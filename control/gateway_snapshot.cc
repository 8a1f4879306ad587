// Gateway: ExportSnapshot (docs/protocol.md 7.20), how `gpool admin snapshot
// save` copies the state out. Admins only: the image holds every job's env
// and every key binding. Starting an export is audited; reading its chunks
// is not (the start already says who took the copy).
#include <spdlog/spdlog.h>

#include "control/frames.h"
#include "control/gateway.h"

namespace gpool::control {

void Gateway::OnExportSnapshot(const Request& request, const Envelope& envelope, int64_t now_ms) {
  auto msg = envelope.Body<ExportSnapshot>();
  if (!msg.ok()) return Fail(request.peer, request.id, msg.status());
  const bool start = msg->export_id == 0;
  if (!Permit(request, Permission::kExportSnapshot, {},
              start ? "snapshot" : "snapshot export " + std::to_string(msg->export_id))) {
    return;
  }
  if (!start) {
    auto chunk = exports_.Read(msg->export_id, msg->offset, msg->max_bytes, now_ms);
    if (!chunk.ok()) return Fail(request.peer, request.id, chunk.status());
    return Reply(request.peer, MakeFrame(request.id, proposer_.epoch(), *chunk));
  }
  if (msg->offset != 0) {
    return Fail(request.peer, request.id, Status::InvalidArgument("offset: a new export (export_id 0) starts at 0"));
  }
  ProposeApprovedAudit();
  // After the barrier: the image holds every write acknowledged before it.
  AfterBarrier(request.peer, request.id, [this, request, max_bytes = msg->max_bytes, now_ms] {
    auto first = exports_.Start(state_.Snapshot(), state_.applied_index(), proposer_.epoch(), WallNowMs(),
                                options_.replica_id, max_bytes, now_ms);
    if (!first.ok()) return Fail(request.peer, request.id, first.status());
    spdlog::info("snapshot export started user={} export={} index={} term={} bytes={}", request.actor.name,
                 first->export_id, first->index, first->term, first->total_bytes);
    Reply(request.peer, MakeFrame(request.id, proposer_.epoch(), *first));
  });
}

void Gateway::Tick(int64_t now_ms) {
  // An export's reader restarts at the new leader; the images are not kept.
  if (!proposer_.leading()) return exports_.DropAll();
  exports_.Expire(now_ms);
}

}  // namespace gpool::control
