// Snapshot files (snapshot_file.h) and SHA-256 (base/sha256.h).
#include "protocol/snapshot_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "protocol/base/sha256.h"

namespace gpool {
namespace {

TEST(Sha256Test, MatchesKnownDigestsInOneOrManyUpdates) {
  EXPECT_EQ(Sha256::Of(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Sha256::Of("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  Sha256 pieces;
  pieces.Update("a");
  pieces.Update("");
  pieces.Update("bc");
  EXPECT_EQ(pieces.HexDigest(), Sha256::Of("abc"));
}

class SnapshotFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("gpool-snapfile-" + std::to_string(getpid()) + "-" +
                                                     ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // A file holding `state` with a header that describes it (then `tweak`ed).
  std::string Write(const std::string& state, std::function<void(SnapshotFileHeader&)> tweak = {},
                    const std::string& trailer = "") {
    SnapshotFileHeader header;
    header.index = 42;
    header.term = 7;
    header.taken_ms = 1'700'000'000'000;
    header.state_bytes = state.size();
    header.sha256 = Sha256::Of(state);
    header.source = "replica 1 at tcp://127.0.0.1:7400";
    if (tweak) tweak(header);
    const std::string path = (dir_ / "s.gpoolsnap").string();
    std::ofstream(path, std::ios::binary) << EncodeSnapshotFile(header, state) << trailer;
    return path;
  }
  std::string WriteBytes(const std::string& name, const std::string& bytes) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  }
  static SnapshotFileHeader HeaderOf(const std::string& state) {
    SnapshotFileHeader header;
    header.index = 42;
    header.term = 7;
    header.taken_ms = 1'700'000'000'000;
    header.state_bytes = state.size();
    header.sha256 = Sha256::Of(state);
    return header;
  }
  // A format 1 file, as gpool wrote before issue 48: no file digest.
  static std::string V1File(const SnapshotFileHeader& header, const std::string& state) {
    std::string prefix = EncodeSnapshotFilePrefix(header);
    prefix.replace(0, kSnapshotFileMagicV1.size(), kSnapshotFileMagicV1);
    return prefix + state;
  }

  std::filesystem::path dir_;
};

TEST_F(SnapshotFileTest, RoundTripsHeaderAndState) {
  std::string state(3 * 1024 * 1024 + 17, '\0');
  for (size_t i = 0; i < state.size(); ++i) state[i] = static_cast<char>(i * 131 % 251);
  const std::string path = Write(state);
  auto file = ReadSnapshotFile(path);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  EXPECT_EQ(file->header.index, 42u);
  EXPECT_EQ(file->header.term, 7u);
  EXPECT_EQ(file->header.source, "replica 1 at tcp://127.0.0.1:7400");
  EXPECT_EQ(file->state, state);
  auto verified = VerifySnapshotFile(path);
  ASSERT_TRUE(verified.ok()) << verified.status().ToString();
  EXPECT_EQ(verified->state_bytes, state.size());
}

TEST_F(SnapshotFileTest, RefusesDamagedTruncatedAndForeignFiles) {
  const std::string state = "the state image";
  struct Case {
    std::string name;
    std::function<std::string()> make;
    std::string says;
  };
  const std::vector<Case> cases = {
      {"flipped byte", [&] { return Write("the state imagE", [&](auto& h) { h.sha256 = Sha256::Of(state); }); },
       "damaged: the state's sha256"},
      {"truncated", [&] { return Write(state, [](auto& h) { h.state_bytes += 5; }); }, "truncated"},
      {"trailing bytes", [&] { return Write(state, {}, "xx"); }, "bytes after the state's end"},
      {"foreign", [&] {
         const std::string path = (dir_ / "foreign").string();
         std::ofstream(path) << "{\"not\": \"a snapshot\"}";
         return path;
       }, "not a gpool snapshot file"},
      {"huge header", [&] {
         const std::string path = (dir_ / "huge").string();
         std::ofstream(path, std::ios::binary) << kSnapshotFileMagic << std::string("\xff\xff\xff\xff", 4);
         return path;
       }, "damaged"},
      {"empty", [&] {
         const std::string path = (dir_ / "empty").string();
         std::ofstream(path).flush();
         return path;
       }, "not a gpool snapshot file"},
  };
  for (const auto& c : cases) {
    const std::string path = c.make();
    auto file = ReadSnapshotFile(path);
    ASSERT_FALSE(file.ok()) << c.name;
    EXPECT_EQ(file.status().code(), StatusCode::kMalformed) << c.name << ": " << file.status().ToString();
    EXPECT_NE(file.status().message().find(c.says), std::string::npos) << c.name << ": " << file.status().ToString();
    EXPECT_FALSE(VerifySnapshotFile(path).ok()) << c.name;
  }
  auto future = ReadSnapshotFile(WriteBytes("future", "GPOOLSNAP9\n" + std::string(80, 'x')));
  EXPECT_EQ(future.status().code(), StatusCode::kMalformed);
  EXPECT_NE(future.status().message().find("unknown format (GPOOLSNAP9"), std::string::npos)
      << future.status().ToString();
  auto missing = ReadSnapshotFile((dir_ / "nothing-here").string());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound) << missing.status().ToString();
}

// Issue 48, finding 7: the header was outside the checksum, so an edited
// term restored "fine". Format 2's digest covers header and image: any
// flipped byte of the file is refused.
TEST_F(SnapshotFileTest, AnyFlippedByteOfAFormat2FileIsRefused) {
  const std::string state = "the state image, long enough to matter";
  const std::string good = EncodeSnapshotFile(HeaderOf(state), state);
  ASSERT_TRUE(ReadSnapshotFile(WriteBytes("good", good)).ok());
  for (size_t i = 0; i < good.size(); ++i) {
    std::string bad = good;
    bad[i] = static_cast<char>(bad[i] ^ 0x01);
    auto file = ReadSnapshotFile(WriteBytes("bad", bad));
    ASSERT_FALSE(file.ok()) << "byte " << i << " flipped was accepted";
    EXPECT_TRUE(file.status().code() == StatusCode::kMalformed || file.status().code() == StatusCode::kInvalidArgument)
        << "byte " << i << ": " << file.status().ToString();
  }
  // A header byte changed with the image untouched is caught by the file
  // digest alone (format 1 accepted it).
  SnapshotFileHeader edited = HeaderOf(state);
  edited.term = 8;
  std::string spliced = EncodeSnapshotFilePrefix(edited) + state + good.substr(good.size() - kSnapshotFileDigestChars);
  auto file = ReadSnapshotFile(WriteBytes("spliced", spliced));
  EXPECT_EQ(file.status().code(), StatusCode::kMalformed) << file.status().ToString();
  EXPECT_NE(file.status().message().find("damaged or edited"), std::string::npos) << file.status().ToString();
}

TEST_F(SnapshotFileTest, HeaderFieldsOutOfRangeAreRefusedEvenWithAValidDigest) {
  const std::string state = "image";
  struct Case {
    const char* name;
    std::function<void(SnapshotFileHeader&)> tweak;
    const char* says;
  };
  const std::vector<Case> cases = {
      {"term 2^64-1", [](auto& h) { h.term = UINT64_MAX; }, "term 18446744073709551615 is outside"},
      {"term 2^62+1", [](auto& h) { h.term = (uint64_t{1} << 62) + 1; }, "term 4611686018427387905 is outside"},
      {"term 0", [](auto& h) { h.term = 0; }, "term 0 is outside"},
      {"index 0", [](auto& h) { h.index = 0; }, "index 0 is outside"},
      {"index 2^64-1", [](auto& h) { h.index = UINT64_MAX; }, "index"},
      {"taken_ms negative", [](auto& h) { h.taken_ms = -5; }, "taken_ms"},
      {"no sha", [](auto& h) { h.sha256 = "abc"; }, "64 lowercase hex digits"},
      {"upper-case sha", [](auto& h) { for (auto& c : h.sha256) c = static_cast<char>(std::toupper(c)); }, "64 lowercase"},
      {"huge source", [](auto& h) { h.source = std::string(5000, 's'); }, "source length 5000"},
  };
  for (const auto& c : cases) {
    SnapshotFileHeader header = HeaderOf(state);
    c.tweak(header);
    for (const std::string& bytes : {EncodeSnapshotFile(header, state), V1File(header, state)}) {
      auto file = ReadSnapshotFile(WriteBytes("range", bytes));
      ASSERT_FALSE(file.ok()) << c.name;
      EXPECT_EQ(file.status().code(), StatusCode::kInvalidArgument) << c.name << ": " << file.status().ToString();
      EXPECT_NE(file.status().message().find(c.says), std::string::npos) << c.name << ": " << file.status().ToString();
    }
  }
}

TEST_F(SnapshotFileTest, Format1FilesAreStillReadAndSaySo) {
  const std::string state = "an old backup";
  auto file = ReadSnapshotFile(WriteBytes("old", V1File(HeaderOf(state), state)));
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  EXPECT_EQ(file->header.version, 1u);
  EXPECT_EQ(file->state, state);
  auto now = ReadSnapshotFile(WriteBytes("new", EncodeSnapshotFile(HeaderOf(state), state)));
  ASSERT_TRUE(now.ok()) << now.status().ToString();
  EXPECT_EQ(now->header.version, 2u);
}

}  // namespace
}  // namespace gpool
