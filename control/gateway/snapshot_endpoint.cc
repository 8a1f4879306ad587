#include "control/gateway/snapshot_endpoint.h"
#include "protocol/messages_snapshot.h"

#include <algorithm>

#include <spdlog/spdlog.h>

namespace gpool::control {

void SnapshotEndpoint::Handle(const Request& request, const Envelope& envelope, int64_t now_ms) {
  last_tick_ms_ = std::max(last_tick_ms_, now_ms);
  auto msg = envelope.Body<ExportSnapshot>();
  if (!msg.ok()) return ctx_.Fail(request, msg.status());
  const bool start = msg->export_id == 0;
  if (!ctx_.Permit(request, Permission::kExportSnapshot, {},
              start ? "snapshot" : "snapshot export " + std::to_string(msg->export_id))) {
    return;
  }
  if (!start) {
    auto chunk = exports_.Read(msg->export_id, msg->offset, msg->max_bytes, now_ms);
    if (!chunk.ok()) return ctx_.Fail(request, chunk.status());
    return ctx_.Answer(request, *chunk);
  }
  if (msg->offset != 0) {
    return ctx_.Fail(request, Status::InvalidArgument("offset: a new export (export_id 0) starts at 0"));
  }
  ctx_.ProposeApprovedAudit();
  // After the barrier: the image holds every write acknowledged before it.
  ctx_.AfterBarrier(request, [this, request, max_bytes = msg->max_bytes, now_ms] {
    const uint64_t term = ctx_.proposer().epoch();
    const int64_t taken_ms = RequestContext::WallNowMs();
    if (!ctx_.options().request_snapshot_image) {
      auto first = exports_.Start(ctx_.state().Snapshot(), ctx_.state().applied_index(), term, taken_ms,
                                  ctx_.options().replica_id, max_bytes, now_ms);
      return Started(request, std::move(first));
    }
    // Issue 49: encoded by a forked child, off the loop; answered from a
    // later loop turn once the image is on disk.
    ctx_.options().request_snapshot_image(
        ctx_.state().applied_index(),
        [this, request, max_bytes, term, taken_ms](Result<std::shared_ptr<ForkedImage>> file) {
          if (!file.ok()) return ctx_.Fail(request, file.status());
          if (!ctx_.proposer().leading() || ctx_.proposer().epoch() != term) {
            return ctx_.Fail(request, Status::Unavailable("the coordinator leader changed while the snapshot was "
                                                          "made; start the export again"));
          }
          Started(request, exports_.StartFile(std::move(*file), term, taken_ms, ctx_.options().replica_id,
                                              max_bytes, last_tick_ms_));
        });
  });
}

void SnapshotEndpoint::Started(const Request& request, Result<ExportSnapshotReply> first) {
  if (!first.ok()) return ctx_.Fail(request, first.status());
  spdlog::info("snapshot export started user={} export={} index={} term={} bytes={}", request.actor.name,
               first->export_id, first->index, first->term, first->total_bytes);
  ctx_.Answer(request, *first);
}

void SnapshotEndpoint::Tick(int64_t now_ms) {
  last_tick_ms_ = now_ms;
  // An export's reader restarts at the new leader; the images are not kept.
  if (!ctx_.proposer().leading()) return exports_.DropAll();
  exports_.Expire(now_ms);
}

}  // namespace gpool::control
