#include "control/log/image_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <system_error>
#include <thread>

#include <spdlog/spdlog.h>

#include "protocol/base/sha256.h"

namespace gpool::replication {

// A named namespace: the unity build puts this file beside others.
namespace image_file_detail {

constexpr std::string_view kImagePrefix = "snapshot-";
constexpr std::string_view kImageSuffix = ".img";

// Why the replica cannot use its snapshot, and the way out, for every failure
// of ReadImageFile.
std::string ImageFileFix() {
  return "; the replica cannot restore its state without it: restore the file from a backup, or move the data "
         "dir aside and restart this replica (same id) with an empty one while the others are healthy: the "
         "leader sends it a snapshot";
}

}  // namespace image_file_detail

std::string ImageFileName(uint64_t index) {
  namespace d = image_file_detail;
  return std::string(d::kImagePrefix) + std::to_string(index) + std::string(d::kImageSuffix);
}

bool IsImageFileName(std::string_view name) {
  namespace d = image_file_detail;
  if (!name.starts_with(d::kImagePrefix) || !name.ends_with(d::kImageSuffix)) return false;
  const std::string_view digits =
      name.substr(d::kImagePrefix.size(), name.size() - d::kImagePrefix.size() - d::kImageSuffix.size());
  if (digits.empty()) return false;
  uint64_t index = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
  return ec == std::errc() && end == digits.data() + digits.size();
}

Result<std::string> ReadImageFile(const std::string& dir, const ImageFileRef& ref) {
  using image_file_detail::ImageFileFix;
  const std::string path = (std::filesystem::path(dir) / ref.name).string();
  if (!IsImageFileName(ref.name)) {
    return Status::Malformed("snapshot image reference names '" + ref.name + "', not a snapshot image file");
  }
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::IoError("snapshot image " + path + " cannot be opened: " + std::strerror(errno) +
                                     ImageFileFix());
  std::string image(static_cast<size_t>(ref.bytes), '\0');
  size_t done = 0;
  while (done < image.size()) {
    const ssize_t n = read(fd, image.data() + done, image.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const std::string why = std::strerror(errno);
      close(fd);
      return Status::IoError("snapshot image " + path + " cannot be read: " + why + ImageFileFix());
    }
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  char extra = 0;
  const bool longer = done == image.size() && read(fd, &extra, 1) == 1;
  close(fd);
  if (done != image.size() || longer) {
    return Status::Malformed("snapshot image " + path + " is " + (longer ? "longer" : "shorter") + " than the " +
                             std::to_string(ref.bytes) + " bytes its snapshot record says" + ImageFileFix());
  }
  const std::string digest = Sha256::Of(image);
  if (digest != ref.sha256) {
    return Status::Malformed("snapshot image " + path + " does not match its snapshot record (sha256 " + digest +
                             ", expected " + ref.sha256 + ")" + ImageFileFix());
  }
  return image;
}

Status SyncDirectory(const std::string& dir) {
  const int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Status::IoError("opening directory " + dir + " to sync it: " + std::strerror(errno));
  const int rc = fsync(fd);
  const int err = errno;
  close(fd);
  if (rc != 0) return Status::IoError("syncing directory " + dir + ": " + std::strerror(err));
  return Status::Ok();
}

Status LinkImageFile(const std::string& path, const std::string& dir, uint64_t index) {
  const std::string target = (std::filesystem::path(dir) / ImageFileName(index)).string();
  if (unlink(target.c_str()) != 0 && errno != ENOENT) {
    return Status::IoError("replacing snapshot image " + target + ": " + std::strerror(errno));
  }
  if (link(path.c_str(), target.c_str()) != 0) {
    return Status::IoError("linking snapshot image " + path + " as " + target + ": " + std::strerror(errno));
  }
  return SyncDirectory(dir);
}

namespace image_file_detail {
std::atomic<int> pending_unlinks{0};
}  // namespace image_file_detail

void UnlinkInBackground(std::string path) {
  ++image_file_detail::pending_unlinks;
  try {
    std::thread([path] {
      (void)unlink(path.c_str());
      --image_file_detail::pending_unlinks;
    }).detach();
  } catch (const std::system_error&) {
    (void)unlink(path.c_str());
    --image_file_detail::pending_unlinks;
  }
}

bool WaitForBackgroundUnlinks(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (image_file_detail::pending_unlinks.load() > 0) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

bool RemoveInBackground(const std::string& path) {
  const std::string doomed = path + std::string(kRemovingSuffix);
  if (rename(path.c_str(), doomed.c_str()) != 0) return false;
  UnlinkInBackground(doomed);
  return true;
}

size_t RemoveImageFilesExcept(const std::string& dir, std::string_view keep) {
  constexpr std::string_view kRemoving = kRemovingSuffix;
  size_t removed = 0;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    const std::string path = entry.path().string();
    if (name.ends_with(kRemoving) && IsImageFileName(name.substr(0, name.size() - kRemoving.size()))) {
      UnlinkInBackground(path);  // renamed by a process that stopped before unlinking it
      continue;
    }
    if (name == keep || !IsImageFileName(name)) continue;
    // The rename makes it gone at once for whoever looks (a restart, a
    // test); the blocks are freed off the loop.
    if (!RemoveInBackground(path)) continue;
    ++removed;
    spdlog::info("unreferenced snapshot image removed file={}", path);
  }
  return removed;
}

}  // namespace gpool::replication
