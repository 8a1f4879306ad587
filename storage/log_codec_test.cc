#include "storage/log_codec.h"

#include <gtest/gtest.h>

namespace gpool::storage::log_codec {
namespace {

TEST(LogCodecTest, LogKeysSortByIndex) {
  EXPECT_LT(LogKey(9), LogKey(10));
  EXPECT_LT(LogKey(255), LogKey(256));
  EXPECT_TRUE(LogKey(1).starts_with(kLogPrefix));
  EXPECT_EQ(ParseLogKey(LogKey(12345)).value(), 12345u);
}

TEST(LogCodecTest, ParseLogKeyRejectsOtherKeys) {
  EXPECT_EQ(ParseLogKey("raft/hard_state").status().code(), StatusCode::kMalformed);
  EXPECT_EQ(ParseLogKey(LogKey(1) + "x").status().code(), StatusCode::kMalformed);
  EXPECT_EQ(ParseLogKey("raft/log/abc").status().code(), StatusCode::kMalformed);
}

TEST(LogCodecTest, EntryRoundTrip) {
  LogEntry entry{7, 3, std::string("cmd\0bytes", 9)};
  auto decoded = DecodeEntry(7, EncodeEntry(entry));
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(*decoded, entry);
  EXPECT_EQ(EncodeEntry(entry).size(), 1u + 8u + 9u);
}

TEST(LogCodecTest, EmptyEntryDataRoundTrips) {
  LogEntry entry{1, 1, ""};
  EXPECT_EQ(DecodeEntry(1, EncodeEntry(entry)).value(), entry);
}

TEST(LogCodecTest, HardStateAndPositionRoundTrip) {
  HardState hs{5, 2, 40};
  EXPECT_EQ(DecodeHardState(EncodeHardState(hs)).value(), hs);
  SnapshotMeta meta{100, 4};
  EXPECT_EQ(DecodePosition(EncodePosition(meta), "meta").value(), meta);
}

TEST(LogCodecTest, CorruptValuesAreMalformed) {
  std::string entry = EncodeEntry(LogEntry{3, 2, "x"});
  EXPECT_EQ(DecodeEntry(3, entry.substr(0, 8)).status().code(), StatusCode::kMalformed);
  EXPECT_EQ(DecodeEntry(3, "").status().code(), StatusCode::kMalformed);
  std::string wrong_format = entry;
  wrong_format[0] = 9;
  Status s = DecodeEntry(3, wrong_format).status();
  EXPECT_EQ(s.code(), StatusCode::kMalformed);
  EXPECT_NE(s.message().find("raft log entry 3"), std::string::npos) << s.ToString();

  std::string hs = EncodeHardState(HardState{1, 1, 1});
  EXPECT_EQ(DecodeHardState(hs + "x").status().code(), StatusCode::kMalformed);
  EXPECT_EQ(DecodeHardState(hs.substr(0, 24)).status().code(), StatusCode::kMalformed);
  EXPECT_EQ(DecodePosition("garbage", "meta").status().code(), StatusCode::kMalformed);
}

}  // namespace
}  // namespace gpool::storage::log_codec
