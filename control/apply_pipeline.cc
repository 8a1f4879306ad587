#include "control/apply_pipeline.h"

#include "control/apply_batch_timer.h"

#include <malloc.h>

#include <utility>

#include <spdlog/spdlog.h>

namespace gpool::control {

namespace {

// One loop turn's share of a backlog, over all the turn's SyncAndApply calls.
constexpr int64_t kApplyTurnBudgetMs = 20;

}  // namespace

Status RecoverState(log::CommitLog& log, state::ClusterState& state, SnapshotSchedule& snapshots) {
  GPOOL_ASSIGN_OR_RETURN(log::Committed recovered, log.Recover());
  if (recovered.snapshot.has_value()) {
    GPOOL_RETURN_IF_ERROR(state.Restore(recovered.snapshot->data).WithContext("loading snapshot"));
    snapshots.Covered(recovered.snapshot->index, recovered.snapshot->data.size());
    recovered.snapshot.reset();  // the image's bytes, before the log is replayed
    // What decoding freed (each record's msgpack zone) goes back to the
    // system rather than staying resident in malloc's free lists (issue 49).
    malloc_trim(0);
  }
  uint64_t replayed = 0;
  for (const auto& entry : recovered.entries) {
    if (entry.index <= state.applied_index()) continue;
    auto command = state::DecodeCommand(entry.data);
    if (!command.ok() && command.status().code() == StatusCode::kInvalidArgument) {
      // Well-formed, but naming an op, kind, state or role this build does
      // not know (base/enum_names.h): refused as ApplyEntry refuses it live,
      // changing nothing, so a replay ends where the live replica did.
      spdlog::warn("log entry {} refused on replay: {}", entry.index, command.status().message());
      snapshots.Applied(entry.index, entry.data.size());
      continue;
    }
    if (!command.ok()) {
      return command.status().WithContext("log entry " + std::to_string(entry.index) + " is corrupt");
    }
    state.Apply(entry.index, *command);
    snapshots.Applied(entry.index, entry.data.size());
    ++replayed;
  }
  spdlog::info("state recovered snapshot_index={} replayed={}", snapshots.last_index(), replayed);
  return Status::Ok();
}

void ApplyPipeline::Restored() {
  for (state::ApplyListener* listener : listeners_) listener->AfterRestore(state_);
}

void ApplyPipeline::BeginTurn() {
  turn_end_ms_ = clock_.MonoMs() + kApplyTurnBudgetMs;
  turn_applied_ = false;
}

Result<bool> ApplyPipeline::SyncAndApply() {
  bool applied_any = false;
  tracker_.IssueReads();
  tracker_.AfterSync();  // a single replica's reads are ready at once
  // A backlog (RaftLog hands it over in slices and says come straight back,
  // MsUntilDue 0) is applied for at most the turn's budget, however many
  // times the loop calls this in one turn: a turn calls it up to five times,
  // and a budget per call let one turn apply five budgets' worth.
  auto spent = [&] { return turn_applied_ && clock_.MonoMs() >= turn_end_ms_ && log_.MsUntilDue() == 0; };
  while (log_.HasUnsynced() && disk_.CheckWrite().ok() && !spent()) {
    auto committed = log_.Sync();
    if (!committed.ok()) {
      // LocalLog: nothing of this Sync is durable (ResumeWrites drops what
      // LevelDB might still replay), so its proposals fail with the refusal.
      const Status refusal = disk_.WriteFailed(committed.status(), "committing proposals");
      tracker_.FailProposals(refusal);
      break;
    }
    applied_any = applied_any || !committed->empty();
    turn_applied_ = turn_applied_ || !committed->empty();
    GPOOL_RETURN_IF_ERROR(Apply(std::move(committed).value()));
    tracker_.AfterSync();
    if (Status held = log_.write_error(); !held.ok()) {
      // RaftLog: the Ready it could not persist waits, unsent and unapplied;
      // its proposals wait too (failed with NotLeader if leadership moves).
      (void)disk_.WriteFailed(held, "persisting raft state");
      break;
    }
  }
  return applied_any;
}

Status ApplyPipeline::Apply(log::Committed committed) {
  const uint64_t snapshot_index = committed.snapshot ? committed.snapshot->index : 0;
  ApplyBatchTimer timer;  // a batch that holds the loop is logged with its time per command
  for (const auto& entry : committed.entries) {
    const auto start = ApplyBatchTimer::Now();
    if (entry.index < snapshot_index) timer.Time(ApplyEntry(entry), start);
  }
  if (committed.snapshot.has_value()) {
    // A follower that fell behind the leader's log: its state is replaced.
    Status restored = state_.Restore(committed.snapshot->data);
    if (!restored.ok()) return restored.WithContext("installing the snapshot from the leader");
    snapshots_.Covered(snapshot_index, committed.snapshot->data.size());
    Restored();
    spdlog::info("state replaced by snapshot index={} jobs={} nodes={}", snapshot_index, state_.jobs().size(),
                 state_.nodes().size());
  }
  for (const auto& entry : committed.entries) {
    const auto start = ApplyBatchTimer::Now();
    if (entry.index > snapshot_index) timer.Time(ApplyEntry(entry), start);
  }
  if (timer.total_us() >= kSlowApplyBatchUs) {
    spdlog::warn("apply batch slow entries={} ms={} by_command=\"{}\"", timer.entries(), timer.total_us() / 1000,
                 timer.Summary());
  }
  return Status::Ok();
}

std::string_view ApplyPipeline::ApplyEntry(const storage::LogEntry& entry) {
  snapshots_.Applied(entry.index, entry.data.size());
  auto command = state::DecodeCommand(entry.data);
  state::ApplyResult result;
  std::string_view name;
  if (command.ok()) {
    name = state::CommandName(command->body);
    for (state::ApplyListener* listener : listeners_) listener->BeforeApply(state_, *command);
    result = state_.Apply(entry.index, *command);
    for (state::ApplyListener* listener : listeners_) listener->AfterApply(state_, entry.index, *command, result);
  } else {
    result.status = command.status();
  }
  tracker_.Settle(entry.index, entry.term, result);
  return name;
}

}  // namespace gpool::control
