#include "control/private_data_dir.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

namespace gpool::control {

Status PreparePrivateDataDir(const std::string& dir) {
  struct stat st {};
  if (stat(dir.c_str(), &st) != 0) {
    if (errno != ENOENT) return Status::IoError("cannot stat data dir " + dir + ": " + std::strerror(errno));
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) return Status::IoError("cannot create data dir " + dir + ": " + ec.message());
    // mkdir's mode passed through the umask (a test's, or a caller's
    // without main's 077); the dir is made private explicitly.
    if (chmod(dir.c_str(), 0700) != 0) {
      return Status::IoError("cannot make data dir " + dir + " 0700: " + std::strerror(errno));
    }
    return Status::Ok();
  }
  if (!S_ISDIR(st.st_mode)) return Status::FailedPrecondition("data dir " + dir + " is not a directory");
  if ((st.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof(mode), "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return Status::FailedPrecondition("data dir " + dir + " is mode " + mode +
                                      ": group or others can reach every job's environment in it; make it "
                                      "private first: chmod -R go-rwx " + dir);
  }
  return Status::Ok();
}

}  // namespace gpool::control
