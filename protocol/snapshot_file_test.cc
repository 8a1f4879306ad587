// Snapshot files (snapshot_file.h) and SHA-256 (base/sha256.h).
#include "protocol/snapshot_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

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
    std::ofstream(path, std::ios::binary) << EncodeSnapshotFilePrefix(header) << state << trailer;
    return path;
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
      {"no sha", [&] { return Write(state, [](auto& h) { h.sha256 = "abc"; }); }, "64 hex digits"},
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
  auto missing = ReadSnapshotFile((dir_ / "nothing-here").string());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound) << missing.status().ToString();
}

}  // namespace
}  // namespace gpool
