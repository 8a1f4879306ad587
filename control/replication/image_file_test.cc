// The snapshot image reference (issue 49): its wire format (an inline image
// from before it still decodes), reading a referenced file (missing, short
// or altered files are refused, naming the file). The chunked transfer's
// two ends are tested in snapshot_transfer_test.cc.
#include "control/log/image_file.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "control/replication/replica_directory.h"
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

}  // namespace
}  // namespace gpool::replication
