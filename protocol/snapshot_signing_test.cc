// Signed snapshot files (snapshot_signing.h, format 3 of snapshot_file.h):
// a signed file reads and verifies, and every change after signing, every
// other key and every unsigned file is refused once a verify key is given.
#include "protocol/snapshot_signing.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <tuple>

#include "protocol/base/sha256.h"
#include "protocol/snapshot_file.h"

namespace gpool {
namespace {

namespace fs = std::filesystem;

class SnapshotSigningTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("gpool-snapsign-" + std::to_string(getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    state_ = std::string(70'000, '\0');
    for (size_t i = 0; i < state_.size(); ++i) state_[i] = static_cast<char>(i * 37 % 253);
    header_.index = 42;
    header_.term = 7;
    header_.taken_ms = 1'700'000'000'000;
    header_.state_bytes = state_.size();
    header_.sha256 = Sha256::Of(state_);
    header_.source = "replica 1 via tcp://127.0.0.1:7400";
    auto key = SnapshotKey::Generate();
    ASSERT_TRUE(key.ok()) << key.status().ToString();
    key_ = std::make_unique<SnapshotKey>(*key);
    ASSERT_TRUE(WriteSnapshotKeyFiles(*key_, Path("snap-sign")).ok());
    auto verify = SnapshotKey::ReadPublic(Path("snap-sign.pub"));
    ASSERT_TRUE(verify.ok()) << verify.status().ToString();
    verify_ = std::make_unique<SnapshotKey>(*verify);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Path(const std::string& name) const { return (dir_ / name).string(); }
  std::string WriteBytes(const std::string& name, const std::string& bytes) const {
    std::ofstream(Path(name), std::ios::binary) << bytes;
    return Path(name);
  }
  std::string Signed() const { return EncodeSignedSnapshotFile(header_, state_, *key_).value(); }
  // The file as read, with its signature checked against the verify key.
  Status ReadAndCheck(const std::string& name, const std::string& bytes) const {
    const std::string path = WriteBytes(name, bytes);
    auto file = ReadSnapshotFile(path);
    if (!file.ok()) return file.status();
    return CheckSnapshotSignature(file->header, verify_.get(), path);
  }
  // A format 3 file rebuilt from `prefix` and `image` with a fresh digest
  // and the signature trailer `trailer`: a forger's edit after signing.
  static std::string Redigested(const std::string& prefix, const std::string& image, const std::string& trailer) {
    const std::string body = prefix + image;
    return body + Sha256::Of(body) + trailer;
  }

  fs::path dir_;
  std::string state_;
  SnapshotFileHeader header_;
  std::unique_ptr<SnapshotKey> key_;
  std::unique_ptr<SnapshotKey> verify_;
};

constexpr size_t kTrailerChars = kSnapshotKeyIdChars + kSnapshotSignatureChars;

TEST_F(SnapshotSigningTest, KeyFilesArePrivateAndReadBackAsTheSameKey) {
  struct stat st {};
  ASSERT_EQ(::stat(Path("snap-sign.key").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(::stat(Path("snap-sign.pub").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);
  auto signer = SnapshotKey::ReadPrivate(Path("snap-sign.key"));
  ASSERT_TRUE(signer.ok()) << signer.status().ToString();
  EXPECT_TRUE(signer->can_sign());
  EXPECT_FALSE(verify_->can_sign());
  EXPECT_EQ(signer->key_id().size(), kSnapshotKeyIdChars);
  EXPECT_EQ(signer->key_id(), key_->key_id());
  EXPECT_EQ(verify_->key_id(), key_->key_id());
  EXPECT_EQ(verify_->Sign("x").status().code(), StatusCode::kFailedPrecondition);
  // Two keys are two ids.
  EXPECT_NE(SnapshotKey::Generate()->key_id(), key_->key_id());
}

// RFC 8032 section 7.1, test 1: the keys are plain Ed25519 as any other
// implementation (openssl pkeyutl) makes and checks them, PEM-wrapped.
TEST_F(SnapshotSigningTest, SignsAsRfc8032Ed25519) {
  const std::string secret = WriteBytes("rfc.key",
                                        "-----BEGIN PRIVATE KEY-----\n"
                                        "MC4CAQAwBQYDK2VwBCIEIJ1hsZ3v/VpguoRK9JLsLMREScVpezJpGXA7rAMcrn9g\n"
                                        "-----END PRIVATE KEY-----\n");
  ASSERT_EQ(::chmod(secret.c_str(), 0600), 0);
  const std::string pub = WriteBytes("rfc.pub",
                                     "-----BEGIN PUBLIC KEY-----\n"
                                     "MCowBQYDK2VwAyEA11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo=\n"
                                     "-----END PUBLIC KEY-----\n");
  auto signer = SnapshotKey::ReadPrivate(secret);
  ASSERT_TRUE(signer.ok()) << signer.status().ToString();
  auto verifier = SnapshotKey::ReadPublic(pub);
  ASSERT_TRUE(verifier.ok()) << verifier.status().ToString();
  const std::string expected =
      "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe2465"
      "5141438e7a100b";
  EXPECT_EQ(signer->Sign("").value(), expected);
  EXPECT_TRUE(verifier->Verify("", expected));
  EXPECT_FALSE(verifier->Verify("x", expected));
  // The id: SHA-256 of the raw public key d75a9801..., first 16 digits.
  EXPECT_EQ(signer->key_id(), "21fe31dfa154a261");
  EXPECT_EQ(verifier->key_id(), signer->key_id());
  EXPECT_EQ(verifier->PublicPem(), signer->PublicPem());
}

TEST_F(SnapshotSigningTest, BadKeyFilesAreRefusedTypedAndNothingIsOverwritten) {
  const std::string before = [&] {
    std::ifstream in(Path("snap-sign.key"));
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }();
  EXPECT_EQ(WriteSnapshotKeyFiles(*SnapshotKey::Generate(), Path("snap-sign")).code(), StatusCode::kAlreadyExists);
  std::ifstream in(Path("snap-sign.key"));
  std::stringstream after;
  after << in.rdbuf();
  EXPECT_EQ(after.str(), before) << "a key was overwritten";
  // The private key must be the owner's alone.
  ASSERT_EQ(::chmod(Path("snap-sign.key").c_str(), 0644), 0);
  auto open = SnapshotKey::ReadPrivate(Path("snap-sign.key"));
  EXPECT_EQ(open.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(open.status().message().find("chmod 600"), std::string::npos) << open.status().message();
  ASSERT_EQ(::chmod(Path("snap-sign.key").c_str(), 0600), 0);
  // A verify key is the public half, never the signing key itself.
  auto secret_as_public = SnapshotKey::ReadPublic(Path("snap-sign.key"));
  EXPECT_EQ(secret_as_public.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(secret_as_public.status().message().find("holds a private key"), std::string::npos);
  EXPECT_EQ(SnapshotKey::ReadPublic(Path("none.pub")).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(SnapshotKey::ReadPrivate(Path("none")).status().code(), StatusCode::kNotFound);
  const std::string junk = WriteBytes("junk", "not a key\n");
  ::chmod(junk.c_str(), 0600);
  EXPECT_EQ(SnapshotKey::ReadPrivate(junk).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(SnapshotKey::ReadPublic(junk).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(SnapshotSigningTest, ASignedFileRoundTripsAndVerifies) {
  const std::string bytes = Signed();
  EXPECT_TRUE(bytes.starts_with(kSnapshotFileMagicV3));
  const std::string path = WriteBytes("signed", bytes);
  auto file = ReadSnapshotFile(path);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  EXPECT_EQ(file->header.version, 3u);
  EXPECT_EQ(file->state, state_);
  EXPECT_EQ(file->header.key_id, key_->key_id());
  EXPECT_EQ(file->header.signature.size(), kSnapshotSignatureChars);
  EXPECT_EQ(file->header.file_sha256, Sha256::Of(bytes.substr(0, bytes.size() - kTrailerChars - 64)));
  EXPECT_TRUE(CheckSnapshotSignature(file->header, verify_.get(), path).ok());
  EXPECT_TRUE(CheckSnapshotSignature(file->header, nullptr, path).ok()) << "no verify key: nothing required";
  auto verified = VerifySnapshotFile(path);
  ASSERT_TRUE(verified.ok()) << verified.status().ToString();
  EXPECT_EQ(verified->signature, file->header.signature);
  // The signature is over the digest, with its context: not over anything else.
  EXPECT_TRUE(verify_->Verify(SnapshotSignedMessage(file->header.file_sha256), file->header.signature));
  EXPECT_FALSE(verify_->Verify(file->header.file_sha256, file->header.signature));
}

TEST_F(SnapshotSigningTest, EveryChangeAfterSigningIsRefused) {
  const std::string good = Signed();
  ASSERT_TRUE(ReadAndCheck("good", good).ok());
  const std::string prefix = EncodeSnapshotFilePrefix(header_, 3);
  const std::string trailer = good.substr(good.size() - kTrailerChars);
  ASSERT_EQ(good, Redigested(prefix, state_, trailer));

  // A header byte: in place the digest catches it; re-digested, the signature.
  SnapshotFileHeader edited = header_;
  edited.term = header_.term + 1;
  const std::string edited_prefix = EncodeSnapshotFilePrefix(edited, 3);
  Status in_place = ReadAndCheck("header-in-place", edited_prefix + good.substr(prefix.size()));
  EXPECT_EQ(in_place.code(), StatusCode::kMalformed) << in_place.ToString();
  Status header = ReadAndCheck("header", Redigested(edited_prefix, state_, trailer));
  EXPECT_EQ(header.code(), StatusCode::kUnauthenticated) << header.ToString();
  EXPECT_NE(header.message().find("does not verify"), std::string::npos) << header.message();

  // An image byte, with the header's image sha256 made to match it.
  std::string image = state_;
  image[image.size() / 2] ^= 0x01;
  SnapshotFileHeader reimaged = header_;
  reimaged.sha256 = Sha256::Of(image);
  Status image_edit = ReadAndCheck("image", Redigested(EncodeSnapshotFilePrefix(reimaged, 3), image, trailer));
  EXPECT_EQ(image_edit.code(), StatusCode::kUnauthenticated) << image_edit.ToString();
  std::string flipped = good;
  flipped[prefix.size() + 5] ^= 0x01;
  EXPECT_EQ(ReadAndCheck("image-in-place", flipped).code(), StatusCode::kMalformed);

  // A signature digit.
  std::string bad_signature = good;
  char& digit = bad_signature[bad_signature.size() - 10];
  digit = digit == '0' ? '1' : '0';
  Status signature = ReadAndCheck("signature", bad_signature);
  EXPECT_EQ(signature.code(), StatusCode::kUnauthenticated) << signature.ToString();
  EXPECT_NE(signature.message().find("does not verify"), std::string::npos);

  // A signature that is not hex, and a truncated or overlong trailer.
  std::string not_hex = good;
  not_hex[not_hex.size() - 1] = 'x';
  EXPECT_EQ(ReadAndCheck("not-hex", not_hex).code(), StatusCode::kMalformed);
  for (size_t cut : {size_t{1}, size_t{64}, kTrailerChars}) {
    Status truncated = ReadAndCheck("truncated", good.substr(0, good.size() - cut));
    EXPECT_EQ(truncated.code(), StatusCode::kMalformed) << cut;
    EXPECT_NE(truncated.message().find("truncated"), std::string::npos) << truncated.message();
  }
  EXPECT_EQ(ReadAndCheck("overlong", good + "0").code(), StatusCode::kMalformed);

  // The key id edited to another's: named as another key's signature.
  std::string other_id = good;
  char& id_digit = other_id[other_id.size() - kTrailerChars];
  id_digit = id_digit == 'a' ? 'b' : 'a';
  Status id = ReadAndCheck("key-id", other_id);
  EXPECT_EQ(id.code(), StatusCode::kUnauthenticated);
  EXPECT_NE(id.message().find("not by the verify key " + verify_->key_id()), std::string::npos) << id.message();
}

TEST_F(SnapshotSigningTest, AnotherKeysSignatureIsRefused) {
  auto other = SnapshotKey::Generate();
  ASSERT_TRUE(other.ok());
  const std::string path = WriteBytes("other", EncodeSignedSnapshotFile(header_, state_, *other).value());
  auto file = ReadSnapshotFile(path);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  Status checked = CheckSnapshotSignature(file->header, verify_.get(), path);
  EXPECT_EQ(checked.code(), StatusCode::kUnauthenticated);
  EXPECT_NE(checked.message().find("signed by key " + other->key_id() + ", not by the verify key " +
                                   verify_->key_id()),
            std::string::npos)
      << checked.message();
  // The other key's signature under this key's id: it does not verify.
  std::string forged = EncodeSignedSnapshotFile(header_, state_, *other).value();
  forged.replace(forged.size() - kTrailerChars, kSnapshotKeyIdChars, key_->key_id());
  Status relabelled = ReadAndCheck("relabelled", forged);
  EXPECT_EQ(relabelled.code(), StatusCode::kUnauthenticated);
  EXPECT_NE(relabelled.message().find("does not verify"), std::string::npos) << relabelled.message();
}

TEST_F(SnapshotSigningTest, UnsignedFilesReadButAreRefusedWhenAVerifyKeyIsGiven) {
  const std::string v2 = EncodeSnapshotFile(header_, state_);
  std::string v1 = EncodeSnapshotFilePrefix(header_) + state_;
  v1.replace(0, kSnapshotFileMagicV1.size(), kSnapshotFileMagicV1);
  for (const auto& [name, bytes, version] : {std::tuple{"v2", v2, 2u}, std::tuple{"v1", v1, 1u}}) {
    const std::string path = WriteBytes(name, bytes);
    auto file = ReadSnapshotFile(path);
    ASSERT_TRUE(file.ok()) << name << ": " << file.status().ToString();
    EXPECT_EQ(file->header.version, version);
    EXPECT_TRUE(file->header.signature.empty());
    EXPECT_TRUE(CheckSnapshotSignature(file->header, nullptr, path).ok());
    Status refused = CheckSnapshotSignature(file->header, verify_.get(), path);
    EXPECT_EQ(refused.code(), StatusCode::kUnauthenticated) << name;
    EXPECT_NE(refused.message().find("is not signed"), std::string::npos) << refused.message();
  }
  // A signed file's magic changed to format 2's, trailer dropped and
  // re-digested: an unsigned file, refused as such.
  std::string downgraded = EncodeSnapshotFilePrefix(header_, 2) + state_;
  downgraded += Sha256::Of(downgraded);
  EXPECT_EQ(ReadAndCheck("downgraded", downgraded).code(), StatusCode::kUnauthenticated);
  // Left as format 2 with the trailer still on: bytes after the digest.
  std::string relabelled = Signed();
  relabelled.replace(0, kSnapshotFileMagic.size(), kSnapshotFileMagic);
  EXPECT_EQ(ReadAndCheck("relabelled", relabelled).code(), StatusCode::kMalformed);
}

}  // namespace
}  // namespace gpool
