// ApplyPipeline alone, over a real LocalLog on a LevelDB in a temp dir: what
// its listeners hear, in what order, and that each proposal is settled with
// the state machine's result.
#include "control/apply_pipeline.h"

#include <deque>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "control/log/local_log.h"
#include "control/log/testing/forwarding_log.h"
#include "protocol/base/testing/fake_clock.h"
#include "protocol/model/users.h"
#include "storage/leveldb_store.h"
#include "storage/log_store.h"

namespace gpool::control {
namespace {

class Recorder final : public state::ApplyListener {
 public:
  explicit Recorder(std::vector<std::string>& events, std::string name) : events_(events), name_(std::move(name)) {}
  void BeforeApply(const state::ClusterState& state, const state::Command&) override {
    events_.push_back(name_ + ":before@" + std::to_string(state.applied_index()));
  }
  void AfterApply(const state::ClusterState& state, uint64_t index, const state::Command&,
                  const state::ApplyResult&) override {
    events_.push_back(name_ + ":after" + std::to_string(index) + "@" + std::to_string(state.applied_index()));
  }
  void AfterRestore(const state::ClusterState& state) override {
    events_.push_back(name_ + ":restore@" + std::to_string(state.applied_index()));
  }

 private:
  std::vector<std::string>& events_;
  std::string name_;
};

// Each command takes `ms` to apply, on a fake clock.
class CostlyApply final : public state::ApplyListener {
 public:
  CostlyApply(FakeClock& clock, int64_t ms) : clock_(clock), ms_(ms) {}
  void AfterApply(const state::ClusterState&, uint64_t, const state::Command&, const state::ApplyResult&) override {
    clock_.Advance(ms_);
    ++applied;
  }
  void AfterRestore(const state::ClusterState&) override {}
  int applied = 0;

 private:
  FakeClock& clock_;
  int64_t ms_;
};

// A LocalLog whose commits come out one entry per Sync, saying come straight
// back (MsUntilDue 0) while more wait: how RaftLog hands a replica that fell
// behind its backlog.
class OneEntryPerSyncLog final : public log::testing::ForwardingLog {
 public:
  using ForwardingLog::ForwardingLog;
  Result<log::Committed> Sync() override {
    if (inner().HasUnsynced()) {
      GPOOL_ASSIGN_OR_RETURN(log::Committed more, inner().Sync());
      for (auto& entry : more.entries) waiting_.push_back(std::move(entry));
    }
    log::Committed slice;
    if (!waiting_.empty()) {
      slice.entries.push_back(std::move(waiting_.front()));
      waiting_.pop_front();
    }
    return slice;
  }
  bool HasUnsynced() const override { return !waiting_.empty() || inner().HasUnsynced(); }
  int64_t MsUntilDue() const override { return waiting_.empty() ? INT64_MAX : 0; }

 private:
  std::deque<storage::LogEntry> waiting_;
};

state::CommandBody Audit(const std::string& action) {
  AuditEntry entry;
  entry.request = action;
  return state::AuditCmd{{entry}};
}

class ApplyPipelineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(::testing::TempDir()) /
           ("apply_pipeline_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    Open();
  }
  void TearDown() override {
    Close();
    std::filesystem::remove_all(dir_);
  }
  void Open() {
    storage::LevelDbOptions db;
    db.path = (dir_ / "db").string();
    kv_ = std::move(storage::LevelDbStore::Open(db).value());
    store_ = std::move(storage::LogStore::Open(kv_.get()).value());
    DiskGuardOptions disk;
    disk.path = dir_.string();
    disk.reserve_bytes = 0;
    disk_ = std::make_unique<DiskFullMode>(disk, *kv_, *store_);
    log_ = std::move(log::LocalLog::Open(store_.get()).value());
    disk_->Attach(log_.get());
    tracker_ = std::make_unique<ProposalTracker>(ProposalTrackerOptions{}, *log_);
    tracker_->FollowLeadership();
    pipeline_ = std::make_unique<ApplyPipeline>(state_, snapshots_, *log_, *disk_, *tracker_);
  }
  void Close() {
    pipeline_.reset();
    tracker_.reset();
    log_.reset();
    disk_.reset();
    store_.reset();
    kv_.reset();
  }

  std::filesystem::path dir_;
  std::unique_ptr<storage::LevelDbStore> kv_;
  std::unique_ptr<storage::LogStore> store_;
  std::unique_ptr<DiskFullMode> disk_;
  std::unique_ptr<log::LocalLog> log_;
  std::unique_ptr<ProposalTracker> tracker_;
  state::ClusterState state_;
  SnapshotSchedule snapshots_{1'000'000, 0};
  std::unique_ptr<ApplyPipeline> pipeline_;
};

TEST_F(ApplyPipelineTest, ListenersHearEachEntryAroundItsApplyInRegistrationOrder) {
  std::vector<std::string> events;
  Recorder first(events, "a"), second(events, "b");
  pipeline_->Listen(&first);
  pipeline_->Listen(&second);
  std::vector<Status> settled;
  tracker_->Propose(Audit("one"), [&](const state::ApplyResult& r) { settled.push_back(r.status); });
  tracker_->Propose(Audit("two"), [&](const state::ApplyResult& r) { settled.push_back(r.status); });

  auto applied = pipeline_->SyncAndApply();
  ASSERT_TRUE(applied.ok()) << applied.status().ToString();
  EXPECT_TRUE(*applied);
  EXPECT_EQ(events, (std::vector<std::string>{"a:before@0", "b:before@0", "a:after1@1", "b:after1@1", "a:before@1",
                                              "b:before@1", "a:after2@2", "b:after2@2"}));
  ASSERT_EQ(settled.size(), 2u);
  EXPECT_TRUE(settled[0].ok() && settled[1].ok());
  EXPECT_EQ(snapshots_.entries_since(), 2u);

  // Nothing proposed: nothing synced, nothing heard.
  events.clear();
  applied = pipeline_->SyncAndApply();
  ASSERT_TRUE(applied.ok());
  EXPECT_FALSE(*applied);
  EXPECT_TRUE(events.empty());
}

TEST_F(ApplyPipelineTest, AnUndecodableEntryIsSettledWithItsErrorAndNoListenerHearsIt) {
  std::vector<std::string> events;
  Recorder recorder(events, "a");
  pipeline_->Listen(&recorder);
  ASSERT_TRUE(log_->Propose("not a command").ok());
  auto applied = pipeline_->SyncAndApply();
  ASSERT_TRUE(applied.ok());
  EXPECT_TRUE(*applied);
  EXPECT_TRUE(events.empty());
  EXPECT_EQ(state_.applied_index(), 0u);
  EXPECT_EQ(snapshots_.entries_since(), 1u);  // its bytes still count towards the next snapshot
}

TEST_F(ApplyPipelineTest, RecoveryReplaysWithoutListenersThenTellsThemOnce) {
  tracker_->Propose(Audit("one"), [](const state::ApplyResult&) {});
  tracker_->Propose(Audit("two"), [](const state::ApplyResult&) {});
  ASSERT_TRUE(pipeline_->SyncAndApply().ok());
  Close();

  state_ = state::ClusterState();
  snapshots_ = SnapshotSchedule(1'000'000, 0);
  Open();
  std::vector<std::string> events;
  Recorder recorder(events, "a");
  pipeline_->Listen(&recorder);
  ASSERT_TRUE(RecoverState(*log_, state_, snapshots_).ok());
  EXPECT_EQ(state_.applied_index(), 2u);
  EXPECT_TRUE(events.empty());
  pipeline_->Restored();
  EXPECT_EQ(events, (std::vector<std::string>{"a:restore@2"}));
}

TEST_F(ApplyPipelineTest, RecoveryRefusesACorruptEntryNamingIt) {
  ASSERT_TRUE(log_->Propose("not a command").ok());
  ASSERT_TRUE(log_->Sync().ok());
  Close();
  state_ = state::ClusterState();
  Open();
  Status recovered = RecoverState(*log_, state_, snapshots_);
  EXPECT_FALSE(recovered.ok());
  EXPECT_NE(recovered.ToString().find("log entry 1 is corrupt"), std::string::npos) << recovered.ToString();
}

TEST_F(ApplyPipelineTest, ABacklogGetsTheTurnsBudgetOverAllItsCallsAndASliceEveryTurn) {
  OneEntryPerSyncLog sliced(*log_);
  ProposalTracker tracker(ProposalTrackerOptions{}, sliced);
  tracker.FollowLeadership();
  FakeClock clock;
  ApplyPipeline pipeline(state_, snapshots_, sliced, *disk_, tracker, clock);
  CostlyApply costly(clock, 5);
  pipeline.Listen(&costly);
  for (int i = 0; i < 40; ++i) tracker.Propose(Audit("entry " + std::to_string(i)), [](const state::ApplyResult&) {});

  // The loop calls SyncAndApply up to five times a turn: the 20 ms budget
  // (four 5 ms entries) is the turn's, not each call's.
  auto turn = [&] {
    pipeline.BeginTurn();
    for (int call = 0; call < 5; ++call) ASSERT_TRUE(pipeline.SyncAndApply().ok());
  };
  turn();
  EXPECT_EQ(costly.applied, 4);
  turn();
  EXPECT_EQ(costly.applied, 8);

  // An entry slower than the whole budget: still one slice each turn, so a
  // backlog always drains.
  CostlyApply slow(clock, 50);
  pipeline.Listen(&slow);
  turn();
  EXPECT_EQ(costly.applied, 9);
  turn();
  EXPECT_EQ(costly.applied, 10);
}

}  // namespace
}  // namespace gpool::control
