#include "worker/runner/setup/isolation_step.h"

namespace gpool::worker {

Status IsolationStep::Prepare(TaskSetupContext& ctx) {
  std::vector<std::string> owned = ctx.owned_files;
  owned.push_back(ctx.request.log_path);
  if (!ctx.env.share_cache_path.empty()) owned.push_back(ctx.env.share_cache_path);
  if (!ctx.env.cuda_ledger.empty()) owned.push_back(ctx.env.cuda_ledger);
  return ApplyTaskIsolation(options_, log_dir_, ctx.id, ctx.bind, node_, owned, ctx.request);
}

}  // namespace gpool::worker
