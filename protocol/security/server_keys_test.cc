// ServerKeys: one key per coordinator endpoint, and (issue 48) an entry that
// accepts several keys for a replica in a key rotation, tried in turn.
#include "protocol/security/server_keys.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

namespace gpool::security {
namespace {

const std::string kKeyA(40, 'A');
const std::string kKeyB(40, '+');  // '+' is a Z85 character: the parts are found by position
const std::string kKeyC(40, 'c');

TEST(ServerKeys, OneKeyPerEndpointOrOneForAll) {
  auto per = ServerKeys::Match({"tcp://a:1", "tcp://b:1"}, {kKeyA, kKeyC});
  ASSERT_TRUE(per.ok()) << per.status().ToString();
  EXPECT_EQ(per->For("tcp://a:1"), kKeyA);
  EXPECT_EQ(per->For("tcp://b:1"), kKeyC);
  EXPECT_EQ(per->For("tcp://x:1"), "");
  EXPECT_EQ(per->Count("tcp://a:1"), 1u);
  auto all = ServerKeys::Match({"tcp://a:1", "tcp://b:1"}, {kKeyA});
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->For("tcp://b:1"), kKeyA);
  EXPECT_FALSE(ServerKeys::Match({"tcp://a:1", "tcp://b:1", "tcp://c:1"}, {kKeyA, kKeyC}).ok());
}

TEST(ServerKeys, AnEntryMayAcceptSeveralKeysTriedInTurn) {
  auto keys = ServerKeys::Match({"tcp://a:1", "tcp://b:1"}, {kKeyA + "+" + kKeyB, kKeyC});
  ASSERT_TRUE(keys.ok()) << keys.status().ToString();
  EXPECT_EQ(keys->Count("tcp://a:1"), 2u);
  EXPECT_EQ(keys->For("tcp://a:1"), kKeyA);  // the first is preferred
  EXPECT_EQ(keys->For("tcp://a:1", 1), kKeyB);
  EXPECT_EQ(keys->For("tcp://a:1", 2), kKeyA);  // and it cycles
  EXPECT_EQ(keys->For("tcp://b:1", 5), kKeyC);
}

TEST(ServerKeys, MalformedEntriesAreRefused) {
  for (const std::string& bad : {std::string(), kKeyA + "+", kKeyA + "-" + kKeyC, kKeyA + "+" + kKeyC.substr(1),
                                 kKeyA + kKeyC, std::string(39, 'a')}) {
    auto split = SplitServerKeyEntry(bad);
    EXPECT_EQ(split.status().code(), StatusCode::kInvalidArgument) << bad;
  }
}

TEST(ServerKeys, ReadsAnEntryOfSeveralFilesJoinedByPlus) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("gpool-server-keys-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "new.pub") << "public-key = \"" << kKeyA << "\"\n";
  std::ofstream(dir / "old.pub") << kKeyC << "\n";
  auto entry = ReadServerKeyEntry((dir / "new.pub").string() + "+" + (dir / "old.pub").string());
  ASSERT_TRUE(entry.ok()) << entry.status().ToString();
  EXPECT_EQ(*entry, kKeyA + "+" + kKeyC);
  auto loaded = ServerKeys::Load({"tcp://a:1"}, {(dir / "new.pub").string() + "+" + (dir / "old.pub").string()});
  ASSERT_TRUE(loaded.ok());
  EXPECT_EQ(loaded->For("tcp://a:1", 1), kKeyC);
  EXPECT_FALSE(ReadServerKeyEntry((dir / "new.pub").string() + "+").ok());
  EXPECT_FALSE(ReadServerKeyEntry((dir / "missing.pub").string()).ok());
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace gpool::security
