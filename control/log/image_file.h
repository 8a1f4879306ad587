// ImageFile: a Raft snapshot whose state-machine image lives in a file of the
// data dir rather than inline in LevelDB (issue 49).
//
// Saving a snapshot used to write the whole image into LevelDB, fsynced, on
// the loop thread (1.3 s at 93 MB: followers elected another leader). Now the
// forked child writes and fsyncs the image; the loop only hard-links it as
// "snapshot-<index>.img", fsyncs the directory and stores this small
// reference (SnapshotImage::file) in LevelDB. A follower that is sent the
// snapshot receives the file in chunks (snapshot_transfer.h) and stores the
// same kind of reference to its own copy.
//
// The reference names the file relative to the data dir (a moved data dir
// still opens) and carries its length and SHA-256, which are checked every
// time the image is read back: a missing, short or altered file is a typed
// error that names it, never a state restored from the wrong bytes.
//
// Thread-safety: pure functions over the filesystem.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "protocol/base/status.h"

namespace gpool::replication {

struct ImageFileRef {
  std::string name;    // "snapshot-<index>.img", in the snapshot dir; empty: the image is inline
  uint64_t bytes = 0;
  std::string sha256;  // 64 hex digits

  bool empty() const { return name.empty(); }
  template <typename V>
  void Fields(V& v) {
    v.Required("name", name);
    v.Required("bytes", bytes);
    v.Required("sha256", sha256);
  }
};

std::string ImageFileName(uint64_t index);
// Whether `name` is one ImageFileName made (what cleanup may remove).
bool IsImageFileName(std::string_view name);

// The whole image, checked against the reference. IoError (missing,
// unreadable) or Malformed (wrong length, wrong digest), each naming the file
// and what to do.
Result<std::string> ReadImageFile(const std::string& dir, const ImageFileRef& ref);

// Makes `path` (an fsynced file) durable as dir/ImageFileName(index): a hard
// link, so whoever still reads `path` is undisturbed, then an fsync of the
// directory. Replaces a file of that name. Costs no I/O proportional to the
// image.
Status LinkImageFile(const std::string& path, const std::string& dir, uint64_t index);

// fsync of a directory, so a link or rename in it survives a crash.
Status SyncDirectory(const std::string& dir);

// Removes every image file in `dir` but `keep` (a stale one from before the
// last snapshot, or one received but never installed). Returns how many.
// Each is renamed away at once ("<name>.removing") and unlinked by
// UnlinkInBackground; leftovers of a process that stopped meanwhile go too.
size_t RemoveImageFilesExcept(const std::string& dir, std::string_view keep);

// unlink(path) on a short-lived thread of its own. Freeing a large file's
// blocks is work proportional to its size (96 ms for 93 MB on ext4, measured
// under load), which the loop must not do. Inline if no thread can start.
void UnlinkInBackground(std::string path);
// Renames `path` to "<path>.removing" at once (gone for whoever looks next)
// and unlinks that with UnlinkInBackground. False: there was no such file.
bool RemoveInBackground(const std::string& path);
// Waits until every UnlinkInBackground has finished, or `timeout` passed
// (false). For tests that remove the directory afterwards, and for orderly
// shutdowns.
bool WaitForBackgroundUnlinks(std::chrono::milliseconds timeout);
inline constexpr std::string_view kRemovingSuffix = ".removing";

}  // namespace gpool::replication
