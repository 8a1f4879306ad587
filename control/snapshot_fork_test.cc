// SnapshotFork and SnapshotTaker (issue 49): an image encoded by a forked
// child is the state at the fork's index, whatever the loop applies meanwhile;
// the loop is never blocked by a slow child; a killed child is reported,
// cleaned up and retried; exports get an image covering their index.
//
// Slow children are gated, not timed: the injected encoder waits until the
// test creates a gate file (with a deadline, so a broken test cannot hang).
#include "control/snapshot_fork.h"

#include <signal.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "control/log/local_log.h"
#include "control/log/image_file.h"
#include "control/snapshot_exports.h"
#include "control/snapshot_taker.h"
#include "control/state/cluster_state_fixture.h"
#include "protocol/base/sha256.h"
#include "storage/leveldb_store.h"
#include "storage/log_store.h"

namespace gpool::control {
namespace {

namespace fs = std::filesystem;

// An encoder that waits for `gate` to exist (at most 30 s), then encodes.
SnapshotFork::Encoder GatedForkEncoder(const fs::path& gate) {
  return [gate](const state::ClusterState& state) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!fs::exists(gate) && std::chrono::steady_clock::now() < deadline) usleep(2'000);
    return state.Snapshot();
  };
}

void OpenForkGate(const fs::path& gate) { std::ofstream(gate) << "go"; }

size_t ForkTempFiles(const fs::path& dir) {
  size_t n = 0;
  for (const auto& entry : fs::directory_iterator(dir)) n += entry.path().extension() == ".tmp";
  return n;
}

class SnapshotForkTest : public state::ClusterStateTest {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) / ("snapshot_fork_" + std::to_string(::getpid()) + "_" +
                                             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "images");
    gate_ = dir_ / "gate";
  }
  void TearDown() override {
    // Released images are unlinked on a thread of their own: waited for.
    EXPECT_TRUE(replication::WaitForBackgroundUnlinks(std::chrono::seconds(10)));
    fs::remove_all(dir_);
  }

  // Polls (as the loop does, a turn every 2 ms) until the child ended, 30 s at most.
  Result<std::shared_ptr<ForkedImage>> WaitForChild(SnapshotFork& fork) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (std::chrono::steady_clock::now() < deadline) {
      if (auto done = fork.Poll()) return std::move(*done);
      usleep(2'000);
    }
    return Status::DeadlineExceeded("the snapshot child did not finish in 30 s");
  }

  void AddJobs(int n) {
    for (int i = 0; i < n; ++i) Submit("job-" + std::to_string(index_), 1, 1);
  }

  fs::path dir_;
  fs::path gate_;
};

TEST_F(SnapshotForkTest, TheImageIsTheStateAtTheForkIndex) {
  AddJobs(50);
  const std::string expected = state_.Snapshot();
  const uint64_t at = state_.applied_index();
  SnapshotFork fork((dir_ / "images").string(), GatedForkEncoder(gate_));
  ASSERT_TRUE(fork.Start(state_).ok());
  EXPECT_EQ(fork.pending_index(), at);
  // The loop goes on applying while the child encodes: none of it is in the image.
  AddJobs(20);
  OpenForkGate(gate_);
  auto file = WaitForChild(fork);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  EXPECT_EQ((*file)->index(), at);
  auto image = (*file)->ReadAll();
  ASSERT_TRUE(image.ok()) << image.status().ToString();
  EXPECT_EQ((*file)->bytes(), image->size());
  EXPECT_EQ((*file)->sha256(), Sha256::Of(*image));
  EXPECT_TRUE(*image == expected) << "the child's image differs from the state at index " << at;
  state::ClusterState restored;
  ASSERT_TRUE(restored.Restore(*image).ok());
  EXPECT_EQ(restored.applied_index(), at);
  EXPECT_EQ(restored.jobs().size(), 50u);
  EXPECT_EQ(state_.jobs().size(), 70u);
  // The file goes with its last holder.
  const std::string path = (*file)->path();
  EXPECT_TRUE(fs::exists(path));
  file = Status::NotFound("released");
  EXPECT_FALSE(fs::exists(path));
}

// The child writes the state as SnapshotTo hands it on, a few MB at a time,
// never holding the image whole (at 100,000 GPUs that was 2.8 GB more per
// snapshot): an image of several pieces is the state's, byte for byte.
TEST_F(SnapshotForkTest, AnImageOfSeveralPiecesIsWrittenWholeAndInOrder) {
  const std::string padding(3000, 'x');
  for (int i = 0; i < 1600; ++i) Submit(padding + std::to_string(i), 1, 1);
  const std::string expected = state_.Snapshot();
  ASSERT_GT(expected.size(), size_t{4} << 20) << "more than one of SnapshotTo's pieces";
  size_t pieces = 0;
  std::string joined;
  state_.SnapshotTo([&](std::string_view piece) {
    EXPECT_FALSE(piece.empty());
    ++pieces;
    joined.append(piece);
  });
  EXPECT_GE(pieces, 2u);
  EXPECT_TRUE(joined == expected);
  SnapshotFork fork((dir_ / "images").string());
  ASSERT_TRUE(fork.Start(state_).ok());
  auto file = WaitForChild(fork);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  auto image = (*file)->ReadAll();
  ASSERT_TRUE(image.ok()) << image.status().ToString();
  EXPECT_EQ((*file)->bytes(), expected.size());
  EXPECT_EQ((*file)->sha256(), Sha256::Of(expected));
  EXPECT_TRUE(*image == expected) << "the child's file differs from the state's image";
}

// The child yields the CPU to the coordinators' loops: its encoder sees the
// nice value it runs at (written as the image).
TEST_F(SnapshotForkTest, TheChildRunsBehindTheLoopsForTheCpu) {
  const int parent_nice = getpriority(PRIO_PROCESS, 0);
  SnapshotFork fork((dir_ / "images").string(), [](const state::ClusterState&) {
    return std::to_string(getpriority(PRIO_PROCESS, 0));
  });
  ASSERT_TRUE(fork.Start(state_).ok());
  auto file = WaitForChild(fork);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  auto image = (*file)->ReadAll();
  ASSERT_TRUE(image.ok()) << image.status().ToString();
  EXPECT_EQ(*image, std::to_string(std::min(parent_nice + kSnapshotChildNice, 19)));
  EXPECT_EQ(getpriority(PRIO_PROCESS, 0), parent_nice) << "the coordinator itself keeps its priority";
}

// The child holds none of the coordinator's fds (a listening socket kept by
// a dying child blocks the restarted coordinator's bind).
TEST_F(SnapshotForkTest, TheChildKeepsNoneOfTheCoordinatorsFds) {
  const int held = open((dir_ / "held").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
  ASSERT_GE(held, 0);
  const int inheritable = dup(held);  // no O_CLOEXEC: what a fork alone keeps
  ASSERT_GE(inheritable, 0);
  SnapshotFork fork((dir_ / "images").string(), [held, inheritable](const state::ClusterState&) {
    return std::to_string(fcntl(held, F_GETFD) == -1) + std::to_string(fcntl(inheritable, F_GETFD) == -1);
  });
  ASSERT_TRUE(fork.Start(state_).ok());
  auto file = WaitForChild(fork);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  auto image = (*file)->ReadAll();
  ASSERT_TRUE(image.ok()) << image.status().ToString();
  EXPECT_EQ(*image, "11") << "1 = closed in the child";
  EXPECT_NE(fcntl(inheritable, F_GETFD), -1) << "the coordinator keeps its own";
  close(inheritable);
  close(held);
}

TEST_F(SnapshotForkTest, TheLoopIsNotBlockedByASlowChildAndOneRunsAtATime) {
  AddJobs(5);
  SnapshotFork fork((dir_ / "images").string(), GatedForkEncoder(gate_));
  ASSERT_TRUE(fork.Start(state_).ok());
  // The child cannot finish before the gate opens: Poll answers at once.
  const auto before = std::chrono::steady_clock::now();
  for (int i = 0; i < 100; ++i) EXPECT_FALSE(fork.Poll().has_value());
  EXPECT_LT(std::chrono::steady_clock::now() - before, std::chrono::seconds(1));
  EXPECT_TRUE(fork.running());
  const Status second = fork.Start(state_);
  EXPECT_EQ(second.code(), StatusCode::kFailedPrecondition) << second.ToString();
  OpenForkGate(gate_);
  auto file = WaitForChild(fork);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  EXPECT_FALSE(fork.running());
  EXPECT_TRUE(fork.Start(state_).ok()) << "a new child once the last one is collected";
  EXPECT_TRUE(WaitForChild(fork).ok());
}

TEST_F(SnapshotForkTest, AKilledChildIsAnErrorAndLeavesNoFile) {
  AddJobs(5);
  SnapshotFork fork((dir_ / "images").string(), GatedForkEncoder(gate_));
  ASSERT_TRUE(fork.Start(state_).ok());
  ASSERT_EQ(kill(fork.child_pid(), SIGKILL), 0);
  auto file = WaitForChild(fork);
  ASSERT_FALSE(file.ok());
  EXPECT_EQ(file.status().code(), StatusCode::kInternal);
  EXPECT_NE(file.status().message().find("killed by signal 9"), std::string::npos) << file.status().ToString();
  EXPECT_EQ(ForkTempFiles(dir_ / "images"), 0u);
}

TEST_F(SnapshotForkTest, AFailingEncoderIsAnError) {
  SnapshotFork fork((dir_ / "images").string(),
                    [](const state::ClusterState&) -> std::string { throw std::runtime_error("no"); });
  ASSERT_TRUE(fork.Start(state_).ok());
  auto file = WaitForChild(fork);
  ASSERT_FALSE(file.ok());
  EXPECT_NE(file.status().message().find("failed encoding"), std::string::npos) << file.status().ToString();
}

TEST_F(SnapshotForkTest, FilesLeftByAnEarlierProcessAreRemoved) {
  std::ofstream(dir_ / "images" / "snapshot-1-1.tmp") << "stale";
  std::ofstream(dir_ / "images" / "keep.txt") << "other";
  SnapshotFork fork((dir_ / "images").string());
  EXPECT_FALSE(fs::exists(dir_ / "images" / "snapshot-1-1.tmp"));
  EXPECT_TRUE(fs::exists(dir_ / "images" / "keep.txt"));
}

TEST_F(SnapshotForkTest, AnExportReadsTheFileInChunks) {
  AddJobs(200);
  SnapshotFork fork((dir_ / "images").string());
  ASSERT_TRUE(fork.Start(state_).ok());
  auto file = WaitForChild(fork);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  const std::string whole = (*file)->ReadAll().value();
  SnapshotExports exports;
  auto first = exports.StartFile(*file, /*term=*/3, /*taken_ms=*/1, "r1", /*max_bytes=*/1000, /*now_ms=*/0);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(first->total_bytes, whole.size());
  EXPECT_EQ(first->sha256, Sha256::Of(whole));
  EXPECT_EQ(first->index, state_.applied_index());
  std::string copied = first->data;
  while (copied.size() < whole.size()) {
    auto chunk = exports.Read(first->export_id, copied.size(), 1000, 0);
    ASSERT_TRUE(chunk.ok()) << chunk.status().ToString();
    ASSERT_FALSE(chunk->data.empty());
    copied += chunk->data;
  }
  EXPECT_TRUE(copied == whole);
  EXPECT_EQ(exports.Read(first->export_id, whole.size() + 1, 1000, 0).status().code(),
            StatusCode::kInvalidArgument);
}

// SnapshotTaker over a real LocalLog on LevelDB: what the loop does each turn.
class SnapshotTakerTest : public SnapshotForkTest {
 protected:
  void SetUp() override {
    SnapshotForkTest::SetUp();
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
    taker_ = std::make_unique<SnapshotTaker>(schedule_, *log_, *disk_, &metrics_,
                                             std::make_unique<SnapshotFork>((dir_ / "images").string(),
                                                                            GatedForkEncoder(gate_)));
  }
  void TearDown() override {
    taker_.reset();
    log_.reset();
    disk_.reset();
    store_.reset();
    kv_.reset();
    SnapshotForkTest::TearDown();
  }

  // Commits and applies `n` submits, as the pipeline would.
  void Commit(int n) {
    for (int i = 0; i < n; ++i) {
      const state::Command command{1000, state::SubmitJobCmd{state::MakeJob("c" + std::to_string(i), 1, 1), ""}};
      const std::string data = state::EncodeCommand(command);
      ASSERT_TRUE(log_->Propose(data).ok());
      auto committed = log_->Sync();
      ASSERT_TRUE(committed.ok()) << committed.status().ToString();
      for (const auto& entry : committed->entries) {
        state_.Apply(entry.index, *state::DecodeCommand(entry.data));
        schedule_.Applied(entry.index, entry.data.size());
      }
    }
  }

  // Ticks (a turn every 2 ms, at loop time `now_ms`) until `done`, 30 s at most.
  template <typename F>
  bool TickUntil(int64_t now_ms, F&& done) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (std::chrono::steady_clock::now() < deadline) {
      taker_->Tick(state_, now_ms);
      if (done()) return true;
      usleep(2'000);
    }
    return false;
  }

  SnapshotSchedule schedule_{/*min_entries=*/3, /*log_ratio=*/0};
  ReplicationMetrics metrics_;
  std::unique_ptr<storage::LevelDbStore> kv_;
  std::unique_ptr<storage::LogStore> store_;
  std::unique_ptr<DiskFullMode> disk_;
  std::unique_ptr<log::LocalLog> log_;
  std::unique_ptr<SnapshotTaker> taker_;
};

TEST_F(SnapshotTakerTest, ADueSnapshotIsSavedFromTheChildAndTheLogGoesOnMeanwhile) {
  Commit(3);
  const std::string expected = state_.Snapshot();
  taker_->Tick(state_, 0);
  ASSERT_TRUE(taker_->fork().running());
  EXPECT_EQ(taker_->fork().pending_index(), 3u);
  Commit(2);  // the loop commits while the child encodes
  EXPECT_EQ(metrics_.snapshots, 0u);
  OpenForkGate(gate_);
  ASSERT_TRUE(TickUntil(0, [&] { return metrics_.snapshots == 1; }));
  EXPECT_EQ(schedule_.last_index(), 3u);
  EXPECT_EQ(schedule_.entries_since(), 2u) << "what was applied during the encoding counts towards the next";
  EXPECT_GT(schedule_.bytes_since(), 0u);
  auto stored = store_->LoadSnapshot();
  ASSERT_TRUE(stored.ok() && stored->has_value());
  EXPECT_EQ((*stored)->first.index, 3u);
  EXPECT_TRUE((*stored)->second == expected);
  EXPECT_EQ(store_->FirstIndex(), 4u) << "the entries the snapshot covers are dropped";
  EXPECT_EQ(metrics_.last_snapshot_bytes, expected.size());
  EXPECT_EQ(ForkTempFiles(dir_ / "images"), 0u);
}

TEST_F(SnapshotTakerTest, AKilledChildIsRetriedAfterAPause) {
  Commit(3);
  taker_->Tick(state_, 0);
  ASSERT_TRUE(taker_->fork().running());
  ASSERT_EQ(kill(taker_->fork().child_pid(), SIGKILL), 0);
  ASSERT_TRUE(TickUntil(10, [&] { return !taker_->fork().running(); }));
  EXPECT_EQ(metrics_.snapshots, 0u);
  taker_->Tick(state_, 10 + SnapshotTaker::kRetryMs - 1);
  EXPECT_FALSE(taker_->fork().running()) << "not retried at once: a child that always dies must not spin";
  taker_->Tick(state_, 10 + SnapshotTaker::kRetryMs);
  ASSERT_TRUE(taker_->fork().running()) << "retried while the snapshot is still due";
  OpenForkGate(gate_);
  ASSERT_TRUE(TickUntil(10 + SnapshotTaker::kRetryMs, [&] { return metrics_.snapshots == 1; }));
  EXPECT_EQ(schedule_.last_index(), 3u);
}

TEST_F(SnapshotTakerTest, AnExportGetsAnImageThatCoversItsIndex) {
  Commit(3);
  taker_->Tick(state_, 0);  // due: a child at index 3
  ASSERT_EQ(taker_->fork().pending_index(), 3u);
  Commit(2);
  std::vector<uint64_t> served;
  taker_->RequestImage(state_.applied_index(), [&](Result<std::shared_ptr<ForkedImage>> file) {
    ASSERT_TRUE(file.ok()) << file.status().ToString();
    served.push_back((*file)->index());
    state::ClusterState restored;
    ASSERT_TRUE(restored.Restore((*file)->ReadAll().value()).ok());
    EXPECT_EQ(restored.applied_index(), (*file)->index());
  });
  taker_->RequestImage(2, [&](Result<std::shared_ptr<ForkedImage>> file) {
    ASSERT_TRUE(file.ok()) << file.status().ToString();
    served.push_back((*file)->index());
  });
  OpenForkGate(gate_);
  ASSERT_TRUE(TickUntil(0, [&] { return served.size() == 2; }));
  // The request at 2 shares the running child; the one at 5 waits for the next.
  EXPECT_EQ(served, (std::vector<uint64_t>{3, 5}));
  EXPECT_EQ(taker_->waiting(), 0u);
}

TEST_F(SnapshotTakerTest, AFailedChildFailsTheExportsWaitingForIt) {
  Commit(1);
  Status got = Status::Ok();
  taker_->RequestImage(1, [&](Result<std::shared_ptr<ForkedImage>> file) { got = file.status(); });
  taker_->Tick(state_, 0);  // not due (1 entry of 3): started for the export alone
  ASSERT_TRUE(taker_->fork().running());
  ASSERT_EQ(kill(taker_->fork().child_pid(), SIGKILL), 0);
  ASSERT_TRUE(TickUntil(0, [&] { return taker_->waiting() == 0; }));
  EXPECT_EQ(got.code(), StatusCode::kUnavailable) << got.ToString();
  EXPECT_NE(got.message().find("killed by signal 9"), std::string::npos) << got.ToString();
  EXPECT_EQ(metrics_.snapshots, 0u);
}

TEST_F(SnapshotTakerTest, WithoutAForkTheSnapshotIsEncodedOnTheLoop) {
  SnapshotTaker on_loop(schedule_, *log_, *disk_, &metrics_, nullptr);  // --snapshot-on-loop
  Commit(3);
  const std::string expected = state_.Snapshot();
  on_loop.Tick(state_, 0);
  EXPECT_EQ(metrics_.snapshots, 1u) << "saved within the turn";
  auto stored = store_->LoadSnapshot();
  ASSERT_TRUE(stored.ok() && stored->has_value());
  EXPECT_TRUE((*stored)->second == expected);
}

TEST_F(SnapshotTakerTest, WaitingExportsFailWhenLeadershipMoves) {
  Commit(1);
  Status got = Status::Ok();
  taker_->RequestImage(1, [&](Result<std::shared_ptr<ForkedImage>> file) { got = file.status(); });
  taker_->DropRequests(Status::Unavailable("leader changed"));
  EXPECT_EQ(got.code(), StatusCode::kUnavailable);
  EXPECT_EQ(taker_->waiting(), 0u);
}

}  // namespace
}  // namespace gpool::control
