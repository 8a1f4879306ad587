// The snapshot image reference (issue 49): its wire format (an inline image
// from before it still decodes), reading a referenced file (missing, short
// or altered files are refused, naming the file), and the chunked transfer's
// two ends without sockets.
#include "control/log/image_file.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "control/replication/replica_directory.h"
#include "control/replication/snapshot_transfer.h"
#include "protocol/base/sha256.h"
#include "protocol/wire.h"

namespace gpool::replication {
namespace {

// Old images are unlinked on a thread of their own (image_file.h): waited
// for, so remove_all does not race it.
void RemoveTestDir(const std::string& dir) {
  EXPECT_TRUE(WaitForBackgroundUnlinks(std::chrono::seconds(10)));
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  EXPECT_FALSE(std::filesystem::exists(dir)) << dir;
}

// SnapshotImage as it was before issue 49: no `file`.
struct InlineOnlyImage {
  std::vector<ReplicaAddress> replicas;
  std::string state;
  template <typename V>
  void Fields(V& v) {
    v.Required("replicas", replicas);
    v.Required("state", state);
  }
};

class ImageFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/gpool-image-file-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { RemoveTestDir(dir_); }
  ImageFileRef Write(uint64_t index, const std::string& bytes) {
    std::ofstream(dir_ + "/" + ImageFileName(index), std::ios::binary) << bytes;
    return ImageFileRef{ImageFileName(index), bytes.size(), Sha256::Of(bytes)};
  }
  std::string dir_;
};

TEST_F(ImageFileTest, AnInlineImageFromBeforeFileReferencesStillDecodes) {
  InlineOnlyImage old{{ReplicaAddress{1, "tcp://a:1", "tcp://a:2"}}, "the whole state"};
  auto decoded = DecodeSnapshotImage(wire::PackToString(old));
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(decoded->state, "the whole state");
  EXPECT_TRUE(decoded->file.empty());
  ASSERT_EQ(decoded->replicas.size(), 1u);
  EXPECT_EQ(decoded->replicas[0].peer, "tcp://a:1");
}

TEST_F(ImageFileTest, AReferenceRoundTripsAndIsSmall) {
  SnapshotImage image{{ReplicaAddress{2, "tcp://b:1", ""}}, "", ImageFileRef{ImageFileName(42), 1 << 30,
                                                                            std::string(64, 'a')}};
  const std::string bytes = EncodeSnapshotImage(image);
  EXPECT_LT(bytes.size(), 256u);
  auto decoded = DecodeSnapshotImage(bytes);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(decoded->file.name, "snapshot-42.img");
  EXPECT_EQ(decoded->file.bytes, uint64_t{1} << 30);
  EXPECT_EQ(decoded->file.sha256, std::string(64, 'a'));
  EXPECT_TRUE(decoded->state.empty());
}

TEST_F(ImageFileTest, NamesAreRecognisedExactly) {
  EXPECT_TRUE(IsImageFileName("snapshot-7.img"));
  EXPECT_FALSE(IsImageFileName("snapshot-.img"));
  EXPECT_FALSE(IsImageFileName("snapshot-7x.img"));
  EXPECT_FALSE(IsImageFileName("snapshot-123-4.tmp"));  // a child's file
  EXPECT_FALSE(IsImageFileName("snapshot-receiving.part"));
  EXPECT_FALSE(IsImageFileName("LOG"));
}

TEST_F(ImageFileTest, AReferencedFileIsReadWhenItMatches) {
  const ImageFileRef ref = Write(9, "state bytes");
  auto read = ReadImageFile(dir_, ref);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(*read, "state bytes");
}

TEST_F(ImageFileTest, AMissingTamperedOrShortFileIsRefusedNamingIt) {
  const ImageFileRef ref = Write(9, "state bytes");
  const std::string path = dir_ + "/snapshot-9.img";

  std::ofstream(path, std::ios::binary | std::ios::trunc) << "state byteS";
  auto tampered = ReadImageFile(dir_, ref);
  ASSERT_FALSE(tampered.ok());
  EXPECT_EQ(tampered.status().code(), StatusCode::kMalformed);
  EXPECT_NE(tampered.status().message().find(path), std::string::npos);
  EXPECT_NE(tampered.status().message().find("sha256"), std::string::npos);

  std::ofstream(path, std::ios::binary | std::ios::trunc) << "state byte";
  auto short_file = ReadImageFile(dir_, ref);
  ASSERT_FALSE(short_file.ok());
  EXPECT_NE(short_file.status().message().find("shorter"), std::string::npos);

  std::ofstream(path, std::ios::binary | std::ios::trunc) << "state bytes!";
  auto long_file = ReadImageFile(dir_, ref);
  ASSERT_FALSE(long_file.ok());
  EXPECT_NE(long_file.status().message().find("longer"), std::string::npos);

  std::filesystem::remove(path);
  auto missing = ReadImageFile(dir_, ref);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kIoError);
  EXPECT_NE(missing.status().message().find(path), std::string::npos);

  ImageFileRef elsewhere = ref;
  elsewhere.name = "../etc/passwd";
  auto outside = ReadImageFile(dir_, elsewhere);
  ASSERT_FALSE(outside.ok());
  EXPECT_EQ(outside.status().code(), StatusCode::kMalformed);
}

TEST_F(ImageFileTest, LinkingKeepsTheSourceAndCleanupKeepsOnlyTheReferencedImage) {
  const std::string source = dir_ + "/snapshot-99-1.tmp";
  std::ofstream(source, std::ios::binary) << "image";
  ASSERT_TRUE(LinkImageFile(source, dir_, 5).ok());
  EXPECT_TRUE(std::filesystem::exists(source)) << "an export may still be reading it";
  Write(3, "older");
  EXPECT_EQ(RemoveImageFilesExcept(dir_, ImageFileName(5)), 1u);
  EXPECT_TRUE(std::filesystem::exists(dir_ + "/snapshot-5.img"));
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/snapshot-3.img"));
  EXPECT_TRUE(std::filesystem::exists(source)) << "cleanup touches image files only";
}

// The sender's chunks fed to the receiver, as the network would.
TEST_F(ImageFileTest, ChunksAreBoundedAndReassembleIntoTheReceiversOwnFile) {
  std::string image;
  for (int i = 0; i < 5000; ++i) image += std::to_string(i) + ",";
  const ImageFileRef ref = Write(17, image);
  std::filesystem::create_directories(dir_ + "/follower");
  raft::Message snapshot{.type = raft::MessageType::kSnapshot, .from = 1, .to = 2, .term = 3};
  snapshot.snapshot = raft::Snapshot{17, 2, {}, EncodeSnapshotImage(SnapshotImage{{}, "", ref})};

  SnapshotSender sender(dir_, 1000);
  ASSERT_TRUE(sender.Start(snapshot, ref).ok());
  ASSERT_TRUE(sender.Start(snapshot, ref).ok()) << "asked again while under way: ignored";
  SnapshotReceiver receiver(dir_ + "/follower");
  std::optional<raft::Message> installed;
  size_t turns = 0;
  while (sender.busy()) {
    std::vector<std::string> frames;
    sender.Pump([&](uint64_t to, std::string frame) {
      EXPECT_EQ(to, 2u);
      frames.push_back(std::move(frame));
    });
    ++turns;
    EXPECT_LE(frames.size(), SnapshotSender::kChunksPerTurn);
    for (const std::string& frame : frames) {
      auto chunk = raft::DecodeMessage(frame);
      ASSERT_TRUE(chunk.ok()) << chunk.status().ToString();
      EXPECT_EQ(chunk->type, raft::MessageType::kSnapshotChunk);
      EXPECT_LE(chunk->context.size(), 1000u);
      auto taken = receiver.Take(*chunk);
      ASSERT_TRUE(taken.ok()) << taken.status().ToString();
      if (taken->has_value()) installed = std::move(*taken);
    }
  }
  const size_t chunks = (image.size() + 999) / 1000;
  EXPECT_EQ(sender.stats().chunks, chunks);
  EXPECT_EQ(turns, (chunks + SnapshotSender::kChunksPerTurn - 1) / SnapshotSender::kChunksPerTurn);
  ASSERT_TRUE(installed.has_value());
  EXPECT_EQ(installed->type, raft::MessageType::kSnapshot);
  EXPECT_EQ(installed->snapshot.index, 17u);
  auto image_ref = DecodeSnapshotImage(installed->snapshot.data);
  ASSERT_TRUE(image_ref.ok());
  EXPECT_EQ(image_ref->file.name, ImageFileName(17));
  auto read = ReadImageFile(dir_ + "/follower", image_ref->file);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(*read, image);
  EXPECT_FALSE(std::filesystem::exists(receiver.part_path()));
}

TEST_F(ImageFileTest, TheReceiverDropsAGapAndRefusesAWrongDigest) {
  const std::string image(3000, 'q');
  ImageFileRef ref{ImageFileName(8), image.size(), Sha256::Of(image)};
  raft::Message chunk{.type = raft::MessageType::kSnapshotChunk, .from = 1, .to = 2, .term = 3};
  chunk.snapshot = raft::Snapshot{8, 2, {}, EncodeSnapshotImage(SnapshotImage{{}, "", ref})};
  SnapshotReceiver receiver(dir_);

  chunk.index = 1000;  // no transfer under way
  chunk.context = image.substr(1000, 1000);
  auto gap = receiver.Take(chunk);
  ASSERT_TRUE(gap.ok());
  EXPECT_FALSE(gap->has_value());
  EXPECT_EQ(receiver.stats().chunks_dropped, 1u);

  chunk.index = 0;
  chunk.context = image.substr(0, 1000);
  ASSERT_TRUE(receiver.Take(chunk).ok());
  chunk.index = 2000;  // skips 1000..2000
  chunk.context = image.substr(2000);
  auto skipped = receiver.Take(chunk);
  ASSERT_TRUE(skipped.ok());
  EXPECT_FALSE(skipped->has_value());
  EXPECT_EQ(receiver.stats().chunks_dropped, 2u);

  // Every byte arrives but one is altered: refused, nothing installed.
  std::string altered = image;
  altered[2500] = 'z';
  for (uint64_t offset = 0; offset < altered.size(); offset += 1000) {
    chunk.index = offset;
    chunk.context = altered.substr(offset, 1000);
    auto taken = receiver.Take(chunk);
    if (offset + 1000 < altered.size()) {
      ASSERT_TRUE(taken.ok());
    } else {
      ASSERT_FALSE(taken.ok());
      EXPECT_EQ(taken.status().code(), StatusCode::kMalformed);
      EXPECT_NE(taken.status().message().find("sha256"), std::string::npos);
    }
  }
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/" + ImageFileName(8)));
  EXPECT_FALSE(std::filesystem::exists(receiver.part_path()));

  // A chunk without a file reference is refused.
  chunk.index = 0;
  chunk.snapshot.data = EncodeSnapshotImage(SnapshotImage{{}, "inline", {}});
  EXPECT_FALSE(receiver.Take(chunk).ok());
}

}  // namespace
}  // namespace gpool::replication
