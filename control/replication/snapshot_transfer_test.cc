// The chunked snapshot transfer's two ends without sockets (issue 49): the
// image reassembles into the follower's own file, the sender keeps at most a
// window of chunks unacknowledged (a follower that stops reading costs the
// leader the window, not the image again and again), and gaps, restarts,
// refusals and a lossy network end with the exact image installed.
#include "control/replication/snapshot_transfer.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <deque>
#include <filesystem>
#include <fstream>
#include <random>

#include "control/log/image_file.h"
#include "protocol/base/sha256.h"

namespace gpool::replication {
namespace {

constexpr size_t kChunk = 1000;

class SnapshotTransferTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/gpool-snapshot-transfer-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
    std::filesystem::create_directories(dir_ + "/follower");
    for (int i = 0; i < 5000; ++i) image_ += std::to_string(i) + ",";
    std::ofstream(dir_ + "/" + ImageFileName(17), std::ios::binary) << image_;
    ref_ = ImageFileRef{ImageFileName(17), image_.size(), Sha256::Of(image_)};
    snapshot_ = raft::Message{.type = raft::MessageType::kSnapshot, .from = 1, .to = 2, .term = 3};
    snapshot_.snapshot = raft::Snapshot{17, 2, {}, EncodeSnapshotImage(SnapshotImage{{}, "", ref_})};
  }
  void TearDown() override {
    EXPECT_TRUE(WaitForBackgroundUnlinks(std::chrono::seconds(10)));
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  size_t Chunks() const { return (image_.size() + kChunk - 1) / kChunk; }

  // One turn of the sender: the frames it hands the transport, decoded.
  std::vector<raft::Message> Pump(SnapshotSender& sender, int64_t now, int64_t heard = -1, bool accept = true) {
    std::vector<raft::Message> out;
    sender.Pump(
        [&](uint64_t to, std::string frame) {
          EXPECT_EQ(to, 2u);
          if (!accept) return false;
          auto chunk = raft::DecodeMessage(frame);
          EXPECT_TRUE(chunk.ok()) << chunk.status().ToString();
          EXPECT_EQ(chunk->type, raft::MessageType::kSnapshotChunk);
          EXPECT_LE(chunk->context.size(), kChunk);
          out.push_back(std::move(chunk).value());
          return true;
        },
        now, [heard](uint64_t) { return heard; });
    EXPECT_LE(out.size(), SnapshotSender::kChunksPerTurn);
    return out;
  }

  // The follower's side of one chunk: Take, then the ack RaftLog sends back
  // (through the wire encoding, as the network would carry it).
  raft::Message Deliver(SnapshotReceiver& receiver, const raft::Message& chunk) {
    auto taken = receiver.Take(chunk);
    if (taken.ok() && taken->has_value()) installed_ = std::move(**taken);
    auto ack = raft::DecodeMessage(raft::EncodeMessage(receiver.AckFor(chunk, !taken.ok())));
    EXPECT_TRUE(ack.ok());
    EXPECT_EQ(ack->type, raft::MessageType::kSnapshotChunkAck);
    return std::move(ack).value();
  }

  void ExpectInstalled() {
    ASSERT_TRUE(installed_.has_value());
    EXPECT_EQ(installed_->type, raft::MessageType::kSnapshot);
    EXPECT_EQ(installed_->snapshot.index, 17u);
    auto image_ref = DecodeSnapshotImage(installed_->snapshot.data);
    ASSERT_TRUE(image_ref.ok());
    EXPECT_EQ(image_ref->file.name, ImageFileName(17));
    auto read = ReadImageFile(dir_ + "/follower", image_ref->file);
    ASSERT_TRUE(read.ok()) << read.status().ToString();
    EXPECT_EQ(*read, image_);
  }

  std::string dir_;
  std::string image_;
  ImageFileRef ref_;
  raft::Message snapshot_;
  std::optional<raft::Message> installed_;
};

TEST_F(SnapshotTransferTest, ChunksWithTheirAcksReassembleIntoTheReceiversOwnFile) {
  SnapshotSender sender(dir_, kChunk, /*window_chunks=*/8);
  ASSERT_TRUE(sender.Start(snapshot_, ref_, 0).ok());
  ASSERT_TRUE(sender.Start(snapshot_, ref_, 0).ok()) << "asked again while under way: ignored";
  SnapshotReceiver receiver(dir_ + "/follower");
  size_t turns = 0;
  while (sender.busy() && turns < 1000) {
    ++turns;
    for (const raft::Message& chunk : Pump(sender, turns)) sender.Acked(Deliver(receiver, chunk), turns);
  }
  EXPECT_FALSE(sender.busy()) << "the last ack ends the transfer";
  EXPECT_EQ(sender.stats().chunks, Chunks());
  EXPECT_EQ(sender.stats().acks, Chunks());
  EXPECT_EQ(sender.stats().resends, 0u);
  EXPECT_EQ(sender.stats().transfers_finished, 1u);
  EXPECT_EQ(turns, (Chunks() + SnapshotSender::kChunksPerTurn - 1) / SnapshotSender::kChunksPerTurn);
  ExpectInstalled();
  EXPECT_FALSE(std::filesystem::exists(receiver.part_path()));
}

// The leak this bound closes: with no answers the sender stops at the
// window, and a silent follower is never sent more however long it stays so.
TEST_F(SnapshotTransferTest, AFollowerThatNeverAnswersCostsAtMostTheWindow) {
  SnapshotSender sender(dir_, kChunk, /*window_chunks=*/4, /*stall_ms=*/200);
  ASSERT_TRUE(sender.Start(snapshot_, ref_, 0).ok());
  size_t sent = 0;
  for (int64_t now = 0; now < 60'000; now += 10) {
    sent += Pump(sender, now, /*heard=*/-1).size();
    ASSERT_TRUE(sender.Start(snapshot_, ref_, now).ok());  // the core's re-sends change nothing
    ASSERT_LE(sender.outstanding_bytes(), 4 * kChunk);
  }
  EXPECT_EQ(sent, 4u);
  EXPECT_FALSE(sender.ready()) << "a full window does not keep the loop spinning";
  EXPECT_TRUE(sender.busy());

  // Heard from again (it was paused, or lost the chunks): the window goes
  // again from the acknowledged offset, once per stall.
  auto again = Pump(sender, 60'000, /*heard=*/5);
  ASSERT_EQ(again.size(), 4u);
  EXPECT_EQ(again.front().index, 0u);
  EXPECT_EQ(again.front().log_term, 2u) << "a new attempt";
  EXPECT_EQ(sender.stats().resends, 1u);
  EXPECT_TRUE(Pump(sender, 60'100, /*heard=*/5).empty()) << "not before the next stall";

  // Its answers then move the window to the end.
  SnapshotReceiver receiver(dir_ + "/follower");
  int64_t now = 60'100;
  std::deque<raft::Message> in_flight(again.begin(), again.end());
  while (!in_flight.empty() && now < 120'000) {
    sender.Acked(Deliver(receiver, in_flight.front()), now);
    in_flight.pop_front();
    for (auto& chunk : Pump(sender, ++now, 0)) in_flight.push_back(std::move(chunk));
    ASSERT_LE(sender.outstanding_bytes(), 4 * kChunk);
  }
  EXPECT_FALSE(sender.busy());
  ExpectInstalled();
}

TEST_F(SnapshotTransferTest, AGapGoesBackOnceAndAcksOfTheOldAttemptAreIgnored) {
  SnapshotSender sender(dir_, kChunk, /*window_chunks=*/8);
  ASSERT_TRUE(sender.Start(snapshot_, ref_, 0).ok());
  SnapshotReceiver receiver(dir_ + "/follower");
  auto first = Pump(sender, 1);
  ASSERT_EQ(first.size(), 4u);
  // Chunk 1 is lost; 2 and 3 arrive out of continuity.
  sender.Acked(Deliver(receiver, first[0]), 1);
  const raft::Message gap = Deliver(receiver, first[2]);
  EXPECT_EQ(gap.index, kChunk) << "the receiver names what it still needs";
  EXPECT_FALSE(gap.reject);
  sender.Acked(gap, 1);
  EXPECT_EQ(sender.stats().resends, 1u);
  sender.Acked(Deliver(receiver, first[3]), 1);
  EXPECT_EQ(sender.stats().resends, 1u) << "the same gap, seen by a chunk of the old attempt";

  size_t turns = 0;
  while (sender.busy() && turns++ < 1000) {
    for (const raft::Message& chunk : Pump(sender, 2)) {
      EXPECT_EQ(chunk.log_term, 2u);
      sender.Acked(Deliver(receiver, chunk), 2);
    }
  }
  EXPECT_FALSE(sender.busy());
  EXPECT_EQ(receiver.stats().chunks_dropped, 2u);
  ExpectInstalled();
}

TEST_F(SnapshotTransferTest, ARestartedFollowerIsSentTheImageFromTheStart) {
  SnapshotSender sender(dir_, kChunk, /*window_chunks=*/8);
  ASSERT_TRUE(sender.Start(snapshot_, ref_, 0).ok());
  {
    SnapshotReceiver before(dir_ + "/follower");
    for (const raft::Message& chunk : Pump(sender, 1)) sender.Acked(Deliver(before, chunk), 1);
  }
  SnapshotReceiver after(dir_ + "/follower");  // the process restarted: its .part is gone
  auto next = Pump(sender, 2);
  ASSERT_FALSE(next.empty());
  EXPECT_EQ(next.front().index, 4 * kChunk);
  const raft::Message restart = Deliver(after, next.front());
  EXPECT_EQ(restart.index, 0u);
  sender.Acked(restart, 2);
  size_t turns = 0;
  while (sender.busy() && turns++ < 1000) {
    for (const raft::Message& chunk : Pump(sender, 3)) sender.Acked(Deliver(after, chunk), 3);
  }
  EXPECT_FALSE(sender.busy());
  EXPECT_EQ(after.stats().transfers_finished, 1u);
  ExpectInstalled();
}

TEST_F(SnapshotTransferTest, ARejectEndsTheTransferAndARefusedSendIsNotCounted) {
  SnapshotSender sender(dir_, kChunk, /*window_chunks=*/8);
  ASSERT_TRUE(sender.Start(snapshot_, ref_, 0).ok());
  EXPECT_TRUE(Pump(sender, 1, -1, /*accept=*/false).empty());
  EXPECT_EQ(sender.stats().chunks, 0u);
  EXPECT_EQ(sender.stats().refused, 1u);
  auto chunks = Pump(sender, 2);
  ASSERT_FALSE(chunks.empty());
  EXPECT_EQ(chunks.front().index, 0u) << "the refused offset goes first";

  // An ack for another snapshot, or another term, is not this transfer's.
  SnapshotReceiver receiver(dir_ + "/follower");
  raft::Message other = receiver.AckFor(chunks.front(), true);
  other.snapshot.index = 16;
  sender.Acked(other, 3);
  EXPECT_TRUE(sender.busy());
  other = receiver.AckFor(chunks.front(), true);
  other.term = 2;
  sender.Acked(other, 3);
  EXPECT_TRUE(sender.busy());

  sender.Acked(receiver.AckFor(chunks.front(), /*rejected=*/true), 3);
  EXPECT_FALSE(sender.busy());
  EXPECT_EQ(sender.outstanding_bytes(), 0u);
}

// Property: chunks and acks lost at random, a follower that pauses now and
// then; the window is never exceeded and the exact image is installed.
TEST_F(SnapshotTransferTest, ALossyNetworkNeverExceedsTheWindowAndInstallsTheExactImage) {
  for (uint32_t seed = 1; seed <= 30; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937 rng(seed);
    std::bernoulli_distribution lost(0.15);
    std::bernoulli_distribution pause(0.02);
    SnapshotSender sender(dir_, kChunk, /*window_chunks=*/5, /*stall_ms=*/50);
    ASSERT_TRUE(sender.Start(snapshot_, ref_, 0).ok());
    SnapshotReceiver receiver(dir_ + "/follower");
    installed_.reset();
    std::deque<raft::Message> to_follower;
    std::deque<raft::Message> to_leader;
    int64_t now = 0;
    int64_t heard_at = -1;
    int64_t paused_until = 0;
    while (sender.busy() && now < 200'000) {
      now += 1;
      for (auto& chunk : Pump(sender, now, heard_at < 0 ? -1 : now - heard_at)) {
        if (!lost(rng)) to_follower.push_back(std::move(chunk));
      }
      ASSERT_LE(sender.outstanding_bytes(), 5 * kChunk);
      if (now >= paused_until && pause(rng)) paused_until = now + 200;
      if (now < paused_until) continue;
      heard_at = now;  // it answers heartbeats whenever it runs
      while (!to_follower.empty()) {
        raft::Message ack = Deliver(receiver, to_follower.front());
        to_follower.pop_front();
        if (!lost(rng)) to_leader.push_back(std::move(ack));
      }
      while (!to_leader.empty()) {
        sender.Acked(to_leader.front(), now);
        to_leader.pop_front();
      }
    }
    ASSERT_FALSE(sender.busy()) << "the transfer did not finish";
    ExpectInstalled();
    EXPECT_TRUE(WaitForBackgroundUnlinks(std::chrono::seconds(10)));
    std::filesystem::remove(dir_ + "/follower/" + ImageFileName(17));
  }
}

}  // namespace
}  // namespace gpool::replication
