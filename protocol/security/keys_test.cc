#include "protocol/security/keys.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

namespace gpool::security {
namespace {

class KeysTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("gpool-keys-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Path(const std::string& name) const { return (dir_ / name).string(); }
  void Write(const std::string& name, const std::string& content, mode_t mode) {
    std::ofstream(Path(name)) << content;
    ASSERT_EQ(chmod(Path(name).c_str(), mode), 0);
  }
  std::filesystem::path dir_;
};

TEST_F(KeysTest, CurveIsAvailable) { EXPECT_TRUE(CurveAvailable()); }

TEST_F(KeysTest, GeneratedPairsAreZ85AndDistinct) {
  auto a = GenerateKeyPair();
  auto b = GenerateKeyPair();
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_TRUE(IsZ85Key(a->public_key));
  EXPECT_TRUE(IsZ85Key(a->secret_key));
  EXPECT_NE(a->public_key, b->public_key);
  EXPECT_NE(a->public_key, a->secret_key);
}

// The secret travels as an HTTP bearer credential, which cpp-httplib 0.11
// percent-decodes (keys.h); 1000 draws with a '%' allowed would hold one in
// all but (84/85)^40000 of runs.
TEST_F(KeysTest, NoGeneratedSecretHoldsAPercentSign) {
  for (int i = 0; i < 1000; ++i) {
    auto pair = GenerateKeyPair();
    ASSERT_TRUE(pair.ok());
    ASSERT_EQ(pair->secret_key.find('%'), std::string::npos) << pair->secret_key;
  }
}

TEST_F(KeysTest, APairIsRederivedFromItsSecretAlone) {
  auto pair = GenerateKeyPair();
  ASSERT_TRUE(pair.ok());
  auto derived = KeyPairOfSecret(pair->secret_key);
  ASSERT_TRUE(derived.ok()) << derived.status().ToString();
  EXPECT_EQ(*derived, *pair);
  EXPECT_EQ(KeyPairOfSecret("not a key").status().code(), StatusCode::kInvalidArgument);
}

TEST_F(KeysTest, IsZ85KeyRefusesWrongLengthAndAlphabet) {
  EXPECT_FALSE(IsZ85Key(""));
  EXPECT_FALSE(IsZ85Key(std::string(39, 'a')));
  EXPECT_FALSE(IsZ85Key(std::string(41, 'a')));
  EXPECT_FALSE(IsZ85Key(std::string(39, 'a') + "\""));  // '"' is not Z85
  EXPECT_TRUE(IsZ85Key(std::string(40, 'a')));
}

TEST_F(KeysTest, SecretFileRoundTripsWithMode0600) {
  auto pair = GenerateKeyPair();
  ASSERT_TRUE(pair.ok());
  ASSERT_TRUE(WriteSecretKeyFile(Path("a.key"), *pair).ok());
  ASSERT_TRUE(WritePublicKeyFile(Path("a.pub"), pair->public_key).ok());
  struct stat st {};
  ASSERT_EQ(stat(Path("a.key").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  auto read = ReadSecretKeyFile(Path("a.key"));
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(*read, *pair);
  auto pub = ReadPublicKeyFile(Path("a.pub"));
  ASSERT_TRUE(pub.ok()) << pub.status().ToString();
  EXPECT_EQ(*pub, pair->public_key);
  // The secret file names its public key too.
  auto from_secret = ReadPublicKeyFile(Path("a.key"));
  ASSERT_TRUE(from_secret.ok());
  EXPECT_EQ(*from_secret, pair->public_key);
}

TEST_F(KeysTest, WritingNeverOverwritesAnIdentity) {
  auto pair = GenerateKeyPair();
  ASSERT_TRUE(pair.ok());
  ASSERT_TRUE(WriteSecretKeyFile(Path("a.key"), *pair).ok());
  auto other = GenerateKeyPair();
  EXPECT_EQ(WriteSecretKeyFile(Path("a.key"), *other).code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(*ReadSecretKeyFile(Path("a.key")), *pair);
}

TEST_F(KeysTest, GroupOrWorldReadableSecretIsRefused) {
  auto pair = GenerateKeyPair();
  ASSERT_TRUE(WriteSecretKeyFile(Path("a.key"), *pair).ok());
  for (mode_t mode : {0640, 0604, 0660, 0644}) {
    ASSERT_EQ(chmod(Path("a.key").c_str(), mode), 0);
    auto read = ReadSecretKeyFile(Path("a.key"));
    ASSERT_FALSE(read.ok());
    EXPECT_EQ(read.status().code(), StatusCode::kFailedPrecondition);
    EXPECT_NE(read.status().message().find("chmod 600"), std::string::npos) << read.status().message();
  }
  ASSERT_EQ(chmod(Path("a.key").c_str(), 0400), 0);
  EXPECT_TRUE(ReadSecretKeyFile(Path("a.key")).ok());
}

TEST_F(KeysTest, NotARegularFileIsRefused) {
  std::filesystem::create_directories(dir_ / "d.key");
  ASSERT_EQ(chmod(Path("d.key").c_str(), 0700), 0);
  auto read = ReadSecretKeyFile(Path("d.key"));
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(ReadSecretKeyFile(Path("missing.key")).status().code(), StatusCode::kNotFound);
}

TEST_F(KeysTest, MalformedSecretFilesAreInvalidArgument) {
  auto a = GenerateKeyPair();
  auto b = GenerateKeyPair();
  const std::string pub = "public-key = \"" + a->public_key + "\"\n";
  const std::string sec = "secret-key = \"" + a->secret_key + "\"\n";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"empty", ""},
      {"only-public", pub},
      {"only-secret", sec},
      {"garbage", "hello world\n"},
      {"short", "public-key = \"abc\"\n" + sec},
      {"twice", pub + pub + sec},
      // Someone else's public key beside this secret key.
      {"mismatch", "public-key = \"" + b->public_key + "\"\n" + sec},
  };
  for (const auto& [name, content] : cases) {
    Write(name, content, 0600);
    auto read = ReadSecretKeyFile(Path(name));
    ASSERT_FALSE(read.ok()) << name;
    EXPECT_EQ(read.status().code(), StatusCode::kInvalidArgument) << name << ": " << read.status().ToString();
  }
  Write("big", std::string(10000, '#'), 0600);
  EXPECT_EQ(ReadSecretKeyFile(Path("big")).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(KeysTest, PublicFileMayBeABareKey) {
  auto a = GenerateKeyPair();
  Write("bare.pub", a->public_key + "\n", 0644);
  auto read = ReadPublicKeyFile(Path("bare.pub"));
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(*read, a->public_key);
  Write("bad.pub", "public-key = \"nope\"\n", 0644);
  EXPECT_EQ(ReadPublicKeyFile(Path("bad.pub")).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace gpool::security
