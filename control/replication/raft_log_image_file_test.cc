// RaftLog with snapshot images kept as files (issue 49): the leader's save
// stores only a reference, a lagging follower is sent the file in bounded
// chunks and installs its own copy, and a restart recovers from the file —
// or refuses, naming it, when the file is missing or altered.
#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "control/replication/raft_log_harness.h"
#include "control/replication/stored_snapshot.h"
#include "protocol/base/sha256.h"

namespace gpool::replication::testing {
namespace {

constexpr size_t kTestChunkBytes = 4096;

// Old images are unlinked on a thread of their own (image_file.h): waited
// for, so remove_all does not race it.
void RemoveImageRoot(const std::string& dir) {
  EXPECT_TRUE(WaitForBackgroundUnlinks(std::chrono::seconds(10)));
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  EXPECT_FALSE(std::filesystem::exists(dir)) << dir;
}

class RaftLogImageFileTest : public RaftLogTest {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/gpool-raft-images-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    image_root_ = pattern;
    snapshot_chunk_bytes_ = kTestChunkBytes;
    for (uint64_t id = 1; id <= 3; ++id) {
      std::filesystem::create_directories(image_root_ + "/replica-" + std::to_string(id));
    }
    RaftLogTest::SetUp();
  }
  void TearDown() override {
    for (auto& r : replicas_) Stop(r);
    RemoveImageRoot(image_root_);
  }

  // What the snapshot child does: the image in an fsynced file, then the
  // log keeps that file.
  Status SaveAsFile(Replica& r) {
    const std::string image = r.machine.Snapshot();
    const std::string path = ImageDir(r) + "/snapshot-child.tmp";
    {
      std::ofstream out(path, std::ios::binary);
      out << image;
    }
    Status saved = r.log->SaveSnapshotFile(r.machine.applied, path, image.size(), Sha256::Of(image));
    std::filesystem::remove(path);  // the child's name goes; the linked image stays
    return saved;
  }

  static std::string ReadWhole(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream buffer;
    buffer << in.rdbuf();
    return buffer.str();
  }

  // A large-ish state: many chunks of kTestChunkBytes.
  void ProposeLarge(Replica& leader, const std::string& prefix, int n) {
    for (int i = 0; i < n; ++i) {
      auto index = leader.log->Propose(prefix + std::to_string(i) + std::string(1000, 'x'));
      ASSERT_TRUE(index.ok()) << index.status().ToString();
    }
  }
};

TEST_F(RaftLogImageFileTest, LaggingFollowerIsSentTheImageFileInBoundedChunks) {
  Replica& leader = AwaitLeader();
  Replica& follower = replicas_[leader.id % 3];
  ProposeAll(leader, "r-", 5);
  ASSERT_TRUE(RunUntil([&] { return AllApplied(5); }));
  Crash(follower);
  ProposeLarge(leader, "s-", 40);
  ASSERT_TRUE(RunUntil([&] { return leader.machine.commands.size() == 45; }));
  ASSERT_TRUE(SaveAsFile(leader).ok());
  const uint64_t snapshot_index = leader.machine.applied;
  const std::string image = leader.machine.Snapshot();
  ASSERT_GT(image.size(), 8 * kTestChunkBytes);

  // The leader's LevelDB holds a reference, not the image.
  auto stored = leader.store->LoadSnapshot();
  ASSERT_TRUE(stored.ok() && stored->has_value());
  EXPECT_LT((*stored)->second.size(), 1024u) << "the stored snapshot is a small reference";
  EXPECT_EQ(ReadWhole(ImageDir(leader) + "/" + ImageFileName(snapshot_index)), image);
  EXPECT_FALSE(std::filesystem::exists(ImageDir(leader) + "/snapshot-child.tmp"));

  ProposeAll(leader, "t-", 5);
  follower.kv = std::make_unique<storage::MemoryStore>();  // it lost its log
  Start(follower);
  ASSERT_TRUE(RunUntil([&] { return AllApplied(50); }));
  EXPECT_EQ(follower.machine.commands, leader.machine.commands);
  EXPECT_EQ(follower.log->stats().snapshots_installed, 1u);

  // Chunks of at most kTestChunkBytes, enough of them to carry the image.
  const SnapshotTransferStats& sent = leader.log->snapshot_sender()->stats();
  const SnapshotTransferStats& received = follower.log->snapshot_receiver()->stats();
  EXPECT_GE(sent.transfers_finished, 1u);
  EXPECT_LE(sent.largest_chunk, kTestChunkBytes);
  EXPECT_GE(received.chunks, (image.size() + kTestChunkBytes - 1) / kTestChunkBytes);
  EXPECT_LE(received.largest_chunk, kTestChunkBytes);
  EXPECT_EQ(received.transfers_finished, 1u);

  // The follower keeps its own copy, referenced from its small record.
  EXPECT_EQ(ReadWhole(ImageDir(follower) + "/" + ImageFileName(snapshot_index)), image);
  auto follower_stored = follower.store->LoadSnapshot();
  ASSERT_TRUE(follower_stored.ok() && follower_stored->has_value());
  EXPECT_LT((*follower_stored)->second.size(), 1024u);
  EXPECT_FALSE(std::filesystem::exists(follower.log->snapshot_receiver()->part_path()));

  // And restarts from it.
  Crash(follower);
  Start(follower);
  EXPECT_GE(follower.machine.commands.size(), 45u);
  ASSERT_TRUE(RunUntil([&] { return AllApplied(50); }));
  EXPECT_EQ(follower.machine.commands, leader.machine.commands);
}

// A follower that stops reading (SIGSTOP) while it needs the image: the
// leader sends it one window of chunks and no more, however often its core
// asks again, and finishes once the follower runs again. Before the window,
// the leader queued the whole image on every re-send (a 1k-GPU scale run grew
// a leader by 5 GB in 3 minutes with a follower down).
TEST_F(RaftLogImageFileTest, AFollowerThatStopsReadingCostsTheLeaderOneWindowOfChunks) {
  Replica& leader = AwaitLeader();
  Replica& follower = replicas_[leader.id % 3];
  ProposeAll(leader, "r-", 5);
  ASSERT_TRUE(RunUntil([&] { return AllApplied(5); }));
  Crash(follower);
  ProposeLarge(leader, "s-", 150);
  ASSERT_TRUE(RunUntil([&] { return leader.machine.commands.size() == 155; }));
  ASSERT_TRUE(SaveAsFile(leader).ok());
  const std::string image = leader.machine.Snapshot();
  ASSERT_GT(image.size(), 4 * SnapshotSender::kWindowChunks * kTestChunkBytes);

  // It comes back with its log lost, hears the leader once, then stops.
  follower.kv = std::make_unique<storage::MemoryStore>();
  Start(follower);
  const SnapshotTransferStats& sent = leader.log->snapshot_sender()->stats();
  ASSERT_TRUE(RunUntil([&] { return sent.chunks > 0; }));
  follower.paused = true;
  const uint64_t chunks_at_pause = sent.chunks;
  // 15 s of the fake clock: many election timeouts, so the core re-sends
  // kSnapshot many times, and several stalls of the sender.
  for (int i = 0; i < 3000; ++i) {
    Turn();
    ASSERT_LE(leader.log->snapshot_sender()->outstanding_bytes(), SnapshotSender::kWindowChunks * kTestChunkBytes);
  }
  // The window it was sent before it stopped, and at most one resend of it
  // (it was heard after its last ack, so the first stall cannot tell it from
  // a live follower that lost chunks); never one per re-send of the core.
  EXPECT_LE(sent.chunks - chunks_at_pause, 2 * SnapshotSender::kWindowChunks)
      << "chunks sent to a follower that read none of them";
  EXPECT_LE(sent.resends, 1u) << "a silent follower is not resent to again";

  follower.paused = false;
  ASSERT_TRUE(RunUntil([&] { return AllApplied(155); }));
  EXPECT_EQ(follower.machine.commands, leader.machine.commands);
  EXPECT_EQ(follower.log->stats().snapshots_installed, 1u);
  EXPECT_TRUE(RunUntil([&] { return !leader.log->snapshot_sender()->busy(); }))
      << "the follower acknowledges every byte";
  EXPECT_LE(sent.chunks, 2 * ((image.size() + kTestChunkBytes - 1) / kTestChunkBytes))
      << "about one image's worth of chunks in all";
}

TEST_F(RaftLogImageFileTest, RestartRecoversFromTheReferencedFileAndRemovesUnreferencedOnes) {
  Replica& leader = AwaitLeader();
  ProposeLarge(leader, "a-", 10);
  ASSERT_TRUE(RunUntil([&] { return AllApplied(10); }));
  ASSERT_TRUE(SaveAsFile(leader).ok());
  const uint64_t first_index = leader.machine.applied;
  ProposeAll(leader, "b-", 3);
  ASSERT_TRUE(RunUntil([&] { return AllApplied(13); }));
  ASSERT_TRUE(SaveAsFile(leader).ok());
  const uint64_t second_index = leader.machine.applied;
  // The older image is unreferenced once the newer one is saved.
  EXPECT_FALSE(std::filesystem::exists(ImageDir(leader) + "/" + ImageFileName(first_index)));
  ASSERT_TRUE(std::filesystem::exists(ImageDir(leader) + "/" + ImageFileName(second_index)));
  // A crash between linking an image and storing its reference leaves one.
  const std::string stray = ImageDir(leader) + "/" + ImageFileName(second_index + 100);
  std::ofstream(stray) << "left by a crash";

  const std::vector<std::string> before = leader.machine.commands;
  Crash(leader);
  Start(leader);
  EXPECT_EQ(leader.machine.commands, before) << "recovered from the file";
  EXPECT_EQ(leader.machine.applied, second_index);
  EXPECT_FALSE(std::filesystem::exists(stray)) << "unreferenced images are removed at start";
  EXPECT_TRUE(std::filesystem::exists(ImageDir(leader) + "/" + ImageFileName(second_index)));
}

TEST_F(RaftLogImageFileTest, AMissingOrAlteredImageFileRefusesTheStartNamingIt) {
  Replica& leader = AwaitLeader();
  ProposeLarge(leader, "a-", 10);
  ASSERT_TRUE(RunUntil([&] { return AllApplied(10); }));
  ASSERT_TRUE(SaveAsFile(leader).ok());
  const std::string file = ImageDir(leader) + "/" + ImageFileName(leader.machine.applied);
  const std::string good = ReadWhole(file);
  Crash(leader);

  std::string altered = good;
  altered[altered.size() / 2] ^= 1;
  std::ofstream(file, std::ios::binary | std::ios::trunc) << altered;
  auto opened = Open(leader);
  ASSERT_FALSE(opened.ok());
  EXPECT_EQ(opened.status().code(), StatusCode::kMalformed);
  EXPECT_NE(opened.status().message().find(file), std::string::npos) << opened.status().ToString();
  EXPECT_NE(opened.status().message().find("sha256"), std::string::npos) << opened.status().ToString();

  std::ofstream(file, std::ios::binary | std::ios::trunc) << good.substr(0, good.size() - 1);
  opened = Open(leader);
  ASSERT_FALSE(opened.ok());
  EXPECT_EQ(opened.status().code(), StatusCode::kMalformed);
  EXPECT_NE(opened.status().message().find("shorter"), std::string::npos) << opened.status().ToString();

  std::filesystem::remove(file);
  opened = Open(leader);
  ASSERT_FALSE(opened.ok());
  EXPECT_EQ(opened.status().code(), StatusCode::kIoError);
  EXPECT_NE(opened.status().message().find(file), std::string::npos) << opened.status().ToString();

  // Put back, it starts again.
  std::ofstream(file, std::ios::binary | std::ios::trunc) << good;
  leader.store.reset();
  Start(leader);
  EXPECT_EQ(leader.machine.commands.size(), 10u);
}

TEST_F(RaftLogImageFileTest, AnInlineSnapshotOfAnOlderDataDirStillOpensAndIsReplacedByAFile) {
  Replica& leader = AwaitLeader();
  ProposeAll(leader, "a-", 10);
  ASSERT_TRUE(RunUntil([&] { return AllApplied(10); }));
  // What a coordinator before issue 49 stored: the image inline.
  ASSERT_TRUE(leader.log->SaveSnapshot(leader.machine.applied, leader.machine.Snapshot()).ok());
  Crash(leader);
  Start(leader);
  EXPECT_EQ(leader.machine.commands.size(), 10u);
  Replica& now = AwaitLeader();
  ProposeAll(now, "b-", 2);
  ASSERT_TRUE(RunUntil([&] { return AllApplied(12); }));
  ASSERT_TRUE(SaveAsFile(now).ok());
  EXPECT_TRUE(std::filesystem::exists(ImageDir(now) + "/" + ImageFileName(now.machine.applied)));
}

}  // namespace
}  // namespace gpool::replication::testing
