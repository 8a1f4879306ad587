// The wire format's reader and writer, and the client library's key file
// reader: pure, in one process.
#include <sys/stat.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "protocol/security/keys.h"
#include "worker/rgpu/client/key_file.h"
#include "worker/rgpu/wire.h"

namespace gpool::rgpu {
namespace {

TEST(RgpuWire, WhatIsWrittenReadsBack) {
  Writer w;
  w.U8(7);
  w.U16(0xBEEF);
  w.U32(123456);
  w.I32(-5);
  w.U64(std::uint64_t{1} << 60);
  w.Bytes("vector_add");
  Reader r(w.bytes().data(), w.bytes().size());
  EXPECT_EQ(r.U8(), 7);
  EXPECT_EQ(r.U16(), 0xBEEF);
  EXPECT_EQ(r.U32(), 123456u);
  EXPECT_EQ(r.I32(), -5);
  EXPECT_EQ(r.U64(), std::uint64_t{1} << 60);
  EXPECT_EQ(r.Bytes(), "vector_add");
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.left(), 0u);
}

TEST(RgpuWire, AShortFrameReadsAsZerosAndNotOk) {
  Writer w;
  w.U32(1000);  // a length with no bytes after it
  Reader r(w.bytes().data(), w.bytes().size());
  EXPECT_TRUE(r.Bytes().empty());
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.U64(), 0u);
  const char one = 1;
  Reader tiny(&one, 1);
  EXPECT_EQ(tiny.U64(), 0u);
  EXPECT_FALSE(tiny.ok());
}

class RgpuKeyFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir_template[] = "/tmp/gpool-rgpu-keys-XXXXXX";
    dir_ = mkdtemp(dir_template);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_;
};

TEST_F(RgpuKeyFileTest, ReadsWhatGpoolWrote) {
  auto pair = security::GenerateKeyPair();
  ASSERT_TRUE(pair.ok());
  ASSERT_TRUE(security::WriteSecretKeyFile(dir_ + "/me.key", pair.value()).ok());
  ClientKeys keys;
  std::string error;
  ASSERT_TRUE(ReadClientKeyFile(dir_ + "/me.key", &keys, &error)) << error;
  EXPECT_EQ(keys.public_key, pair.value().public_key);
  EXPECT_EQ(keys.secret_key, pair.value().secret_key);
}

TEST_F(RgpuKeyFileTest, RefusesAMissingFileAReadableFileAndAMissingKey) {
  ClientKeys keys;
  std::string error;
  EXPECT_FALSE(ReadClientKeyFile(dir_ + "/absent.key", &keys, &error));
  EXPECT_NE(error.find("cannot open"), std::string::npos);

  const std::string open_file = dir_ + "/open.key";
  std::ofstream(open_file) << "public-key = \"" << std::string(40, 'a') << "\"\nsecret-key = \"" << std::string(40, 'b')
                           << "\"\n";
  chmod(open_file.c_str(), 0644);
  EXPECT_FALSE(ReadClientKeyFile(open_file, &keys, &error));
  EXPECT_NE(error.find("chmod 600"), std::string::npos);

  const std::string half = dir_ + "/half.key";
  std::ofstream(half) << "# only the public half\npublic-key = \"" << std::string(40, 'a') << "\"\n";
  chmod(half.c_str(), 0600);
  EXPECT_FALSE(ReadClientKeyFile(half, &keys, &error));
  EXPECT_NE(error.find("lacks"), std::string::npos);
}

}  // namespace
}  // namespace gpool::rgpu
