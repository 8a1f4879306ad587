// The coordinator's data dir (issue 48, finding 3): made 0700 whatever the
// umask; one group or others can reach is refused with the command that
// fixes it, and left as it was.
#include "control/private_data_dir.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

namespace gpool::control {
namespace {

class PrivateDataDirTest : public ::testing::Test {
 protected:
  PrivateDataDirTest() {
    char pattern[] = "/tmp/gpool-datadir-XXXXXX";
    root_ = mkdtemp(pattern);
  }
  ~PrivateDataDirTest() override { std::filesystem::remove_all(root_); }
  mode_t ModeOf(const std::string& path) {
    struct stat st {};
    EXPECT_EQ(stat(path.c_str(), &st), 0) << path;
    return st.st_mode & 07777;
  }
  std::string root_;
};

TEST_F(PrivateDataDirTest, AMissingDirIsMadePrivateWhateverTheUmask) {
  const mode_t before = umask(022);
  const Status made = PreparePrivateDataDir(root_ + "/a/data");
  umask(before);
  ASSERT_TRUE(made.ok()) << made.ToString();
  EXPECT_EQ(ModeOf(root_ + "/a/data"), 0700u);
  EXPECT_TRUE(PreparePrivateDataDir(root_ + "/a/data").ok()) << "a private dir is taken as it is";
}

TEST_F(PrivateDataDirTest, ADirOthersCanReachIsRefusedWithTheFix) {
  for (mode_t mode : {0755, 0750, 0701, 0702, 0720}) {
    const std::string dir = root_ + "/d" + std::to_string(mode);
    ASSERT_EQ(mkdir(dir.c_str(), 0700), 0);
    ASSERT_EQ(chmod(dir.c_str(), mode), 0);
    const Status refused = PreparePrivateDataDir(dir);
    EXPECT_EQ(refused.code(), StatusCode::kFailedPrecondition) << std::oct << mode;
    EXPECT_NE(refused.message().find("chmod -R go-rwx " + dir), std::string::npos) << refused.message();
    EXPECT_EQ(ModeOf(dir), mode) << "refused, not changed: the operator decides";
  }
  const std::string file = root_ + "/file";
  ASSERT_EQ(close(creat(file.c_str(), 0600)), 0);
  EXPECT_EQ(PreparePrivateDataDir(file).code(), StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace gpool::control
