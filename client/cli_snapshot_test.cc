// `gpool admin snapshot save|restore|info` (cli_snapshot.cc) against the fake
// cluster: the file holds the exported image and checks out; a lost export is
// started again; a bad copy never replaces the file; restore runs the
// coordinator with the flags it needs.
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "client/cli_test_fixture.h"
#include "protocol/messages_snapshot.h"
#include "protocol/snapshot_file.h"
#include "protocol/snapshot_signing.h"

namespace gpool::client::testing {
namespace {

class CliSnapshotTest : public CliTest {
 protected:
  CliSnapshotTest() {
    dir_ = std::filesystem::temp_directory_path() / ("gpool-cli-snap-" + std::to_string(getpid()) + "-" +
                                                     ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
    // Several chunks of the largest size.
    cluster_->snapshot_image.resize(2 * kMaxSnapshotChunkBytes + 12345);
    for (size_t i = 0; i < cluster_->snapshot_image.size(); ++i) {
      cluster_->snapshot_image[i] = static_cast<char>(i * 7 % 253);
    }
  }
  ~CliSnapshotTest() override { std::filesystem::remove_all(dir_); }
  std::string Path(const std::string& name) const { return (dir_ / name).string(); }
  size_t FilesInDir() const {
    return static_cast<size_t>(std::distance(std::filesystem::directory_iterator(dir_), {}));
  }

  std::filesystem::path dir_;
};

TEST_F(CliSnapshotTest, SaveWritesACheckedFileOfTheImage) {
  const mode_t umask_before = umask(022);  // a usual login umask: the file must be 0600 all the same
  const int saved = Run({"admin", "snapshot", "save", Path("b.snap")});
  umask(umask_before);
  ASSERT_EQ(saved, kExitOk) << err_.str();
  EXPECT_NE(out_.str().find("saved " + Path("b.snap") + ": the state at log index 42 (term 3)"), std::string::npos)
      << out_.str();
  auto file = ReadSnapshotFile(Path("b.snap"));
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  EXPECT_EQ(file->state, cluster_->snapshot_image);
  EXPECT_EQ(file->header.index, 42u);
  EXPECT_EQ(file->header.source.rfind("replica 1 via ", 0), 0u) << file->header.source;
  EXPECT_EQ(FilesInDir(), 1u);  // no partial file left
  // Issue 48: every job's environment is in it; 0600 even under umask 022.
  struct stat st {};
  ASSERT_EQ(stat(Path("b.snap").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);

  ASSERT_EQ(Run({"admin", "snapshot", "info", Path("b.snap"), "--json"}), kExitOk) << err_.str();
  EXPECT_NE(out_.str().find("\"index\":42"), std::string::npos) << out_.str();
}

TEST_F(CliSnapshotTest, AnExportLostMidwayIsStartedAgain) {
  cluster_->snapshot_forget_reads = 1;
  ASSERT_EQ(Run({"admin", "snapshot", "save", Path("b.snap")}), kExitOk) << err_.str();
  EXPECT_EQ(cluster_->snapshot_starts, 2);
  EXPECT_NE(err_.str().find("starting again"), std::string::npos) << err_.str();
  EXPECT_EQ(ReadSnapshotFile(Path("b.snap"))->state, cluster_->snapshot_image);
}

TEST_F(CliSnapshotTest, ABadCopyNeverReplacesTheFile) {
  std::ofstream(Path("b.snap")) << "the old backup";
  cluster_->snapshot_bad_sha = true;
  EXPECT_EQ(Run({"admin", "snapshot", "save", Path("b.snap")}), ExitCodeFor(Status::Malformed("")));
  EXPECT_NE(err_.str().find("sha256"), std::string::npos) << err_.str();
  std::ifstream in(Path("b.snap"));
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "the old backup");
  EXPECT_EQ(FilesInDir(), 1u);

  cluster_->snapshot_bad_sha = false;
  cluster_->snapshot_forget_reads = 10;  // lost every time: gives up
  EXPECT_NE(Run({"admin", "snapshot", "save", Path("b.snap")}), kExitOk);
  EXPECT_EQ(cluster_->snapshot_starts, 4);  // the bad one, then three
  EXPECT_EQ(FilesInDir(), 1u);

  EXPECT_NE(Run({"admin", "snapshot", "info", Path("b.snap")}), kExitOk);
  EXPECT_NE(err_.str().find("not a gpool snapshot file"), std::string::npos) << err_.str();
}

TEST_F(CliSnapshotTest, RestoreRunsTheCoordinatorWithTheDataDirAndPeers) {
  std::vector<std::string> ran;
  env_.run_program = [&](const std::vector<std::string>& argv) -> Result<int> {
    ran = argv;
    return 3;
  };
  EXPECT_EQ(Run({"admin", "snapshot", "restore", "b.snap", "--data-dir", "/var/lib/gpool", "--peers",
                 "1=tcp://a:7402,2=tcp://b:7402"}),
            3);
  ASSERT_EQ(ran.size(), 7u);
  EXPECT_NE(ran[0].find("gpool-coordinator"), std::string::npos);
  EXPECT_EQ(std::vector<std::string>(ran.begin() + 1, ran.end()),
            (std::vector<std::string>{"--restore-snapshot", "b.snap", "--data-dir", "/var/lib/gpool", "--peers",
                                      "1=tcp://a:7402,2=tcp://b:7402"}));
  EXPECT_EQ(clients_made_, 0);  // no coordinator is asked anything

  // Issue 48: --verify-key reaches the coordinator as --snapshot-verify-key.
  EXPECT_EQ(Run({"admin", "snapshot", "restore", "b.snap", "--data-dir", "/d", "--verify-key", "k.pub"}), 3);
  EXPECT_EQ(std::vector<std::string>(ran.begin() + 1, ran.end()),
            (std::vector<std::string>{"--restore-snapshot", "b.snap", "--data-dir", "/d", "--snapshot-verify-key",
                                      "k.pub"}));
}

// Issue 48: keygen writes a pair; save --sign-key writes a format 3 file
// that key verifies; info checks it against --verify-key and refuses it
// against another key.
TEST_F(CliSnapshotTest, KeygenSaveSignedAndInfoVerified) {
  ASSERT_EQ(Run({"admin", "snapshot", "keygen", "--out", Path("snap-sign")}), kExitOk) << err_.str();
  auto key = SnapshotKey::ReadPrivate(Path("snap-sign.key"));
  ASSERT_TRUE(key.ok()) << key.status().ToString();
  EXPECT_NE(out_.str().find("wrote snapshot signing key " + key->key_id()), std::string::npos) << out_.str();
  struct stat st {};
  ASSERT_EQ(stat(Path("snap-sign.key").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  EXPECT_NE(Run({"admin", "snapshot", "keygen", "--out", Path("snap-sign")}), kExitOk) << "a key was overwritten";
  EXPECT_NE(err_.str().find("exists"), std::string::npos) << err_.str();

  ASSERT_EQ(Run({"admin", "snapshot", "save", Path("b.snap"), "--sign-key", Path("snap-sign.key")}), kExitOk)
      << err_.str();
  auto file = ReadSnapshotFile(Path("b.snap"));
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  EXPECT_EQ(file->header.version, 3u);
  EXPECT_EQ(file->header.key_id, key->key_id());
  EXPECT_EQ(file->state, cluster_->snapshot_image);
  auto verify = SnapshotKey::ReadPublic(Path("snap-sign.pub"));
  ASSERT_TRUE(verify.ok());
  EXPECT_TRUE(CheckSnapshotSignature(file->header, &*verify, Path("b.snap")).ok());

  out_.str("");
  ASSERT_EQ(Run({"admin", "snapshot", "info", Path("b.snap"), "--verify-key", Path("snap-sign.pub")}), kExitOk)
      << err_.str();
  EXPECT_NE(out_.str().find("signed by snapshot key " + key->key_id() + " (signature verified)"), std::string::npos)
      << out_.str();
  out_.str("");
  ASSERT_EQ(Run({"admin", "snapshot", "info", Path("b.snap")}), kExitOk) << err_.str();
  EXPECT_NE(out_.str().find("signature not verified"), std::string::npos) << out_.str();

  ASSERT_EQ(Run({"admin", "snapshot", "keygen", "--out", Path("other")}), kExitOk) << err_.str();
  EXPECT_EQ(Run({"admin", "snapshot", "info", Path("b.snap"), "--verify-key", Path("other.pub")}),
            ExitCodeFor(Status::Unauthenticated("")));
  EXPECT_NE(err_.str().find("not by the verify key"), std::string::npos) << err_.str();

  // A signing key that cannot sign: refused before the leader is asked.
  const int starts = cluster_->snapshot_starts;
  EXPECT_NE(Run({"admin", "snapshot", "save", Path("c.snap"), "--sign-key", Path("snap-sign.pub")}), kExitOk);
  EXPECT_EQ(cluster_->snapshot_starts, starts);
  EXPECT_FALSE(std::filesystem::exists(Path("c.snap")));
}

TEST_F(CliSnapshotTest, UsageErrors) {
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"admin", "snapshot"},
           {"admin", "snapshot", "copy", "f"},
           {"admin", "snapshot", "save"},
           {"admin", "snapshot", "restore", "f"},
           {"admin", "snapshot", "save", "f", "--data-dir", "d"},
           {"admin", "snapshot", "save", "f", "--verify-key", "k.pub"},
           {"admin", "snapshot", "info", "f", "--sign-key", "k.key"},
           {"admin", "snapshot", "keygen"},
           {"admin", "snapshot", "keygen", "f", "--out", "p"},
       }) {
    EXPECT_EQ(Run(args), kExitUsage) << ::testing::PrintToString(args);
  }
  EXPECT_EQ(cluster_->snapshot_starts, 0);
}

}  // namespace
}  // namespace gpool::client::testing
