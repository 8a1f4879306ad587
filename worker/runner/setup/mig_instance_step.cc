#include "worker/runner/setup/mig_instance_step.h"

#include <utility>

#include "protocol/messages_worker.h"
#include "worker/log.h"

namespace gpool::worker {

MigInstanceStep::MigInstanceStep(NodeSpec node, MigManager* mig, std::shared_ptr<spdlog::logger> logger)
    : node_(std::move(node)), mig_(mig), log_(OrDefault(std::move(logger))) {}

std::vector<MigInstance> MigInstanceStep::DynamicInstances(const BindTask& bind) const {
  std::vector<MigInstance> out;
  if (mig_ == nullptr) return out;
  for (size_t i = 0; i < bind.gpu_indices.size() && i < bind.mig_profiles.size(); ++i) {
    const uint32_t index = bind.gpu_indices[i];
    bool dynamic = false;
    for (const auto& gpu : node_.gpus) dynamic = dynamic || (gpu.index == index && gpu.mig_mode == "dynamic");
    if (bind.mig_profiles[i].empty() || !dynamic) continue;
    out.push_back({index, bind.mig_profiles[i], i < bind.mig_starts.size() ? bind.mig_starts[i] : 0});
  }
  return out;
}

Status MigInstanceStep::Prepare(TaskSetupContext& ctx) {
  for (const MigInstance& m : DynamicInstances(ctx.bind)) {
    auto uuid = mig_->Create(m.gpu_index, m.profile, m.start);
    if (!uuid.ok()) {
      Undo(ctx);  // the instances made before this one
      return uuid.status();
    }
    ctx.record.mig_created.push_back(m);
    ctx.env.mig_uuids[m.gpu_index] = *uuid;
    log_->info("mig instance ready task={} gpu={} profile={} start={} uuid={}", ctx.id.ToString(), m.gpu_index,
               Q(m.profile), m.start, Q(*uuid));
  }
  return Status::Ok();
}

void MigInstanceStep::Undo(TaskSetupContext& ctx) {
  for (const MigInstance& m : std::exchange(ctx.record.mig_created, {})) {
    Status s = mig_->Destroy(m.gpu_index, m.profile, m.start);
    if (s.ok()) {
      log_->info("mig instance destroyed task={} gpu={} profile={} start={}", ctx.id.ToString(), m.gpu_index,
                 Q(m.profile), m.start);
    } else {
      log_->warn("mig instance not destroyed; it keeps its placement until removed task={} gpu={} profile={} "
                 "start={} error={}",
                 ctx.id.ToString(), m.gpu_index, Q(m.profile), m.start, Q(s.ToString()));
    }
  }
}

}  // namespace gpool::worker
