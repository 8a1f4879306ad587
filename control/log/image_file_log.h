// ImageFileLog: what a commit log offers when it can keep a snapshot's image
// as a file rather than inline (issue 49).
//
// A separate interface rather than more of CommitLog: the coordinator's
// components all include commit_log.h, and only SnapshotTaker needs this.
// It finds it with a dynamic_cast of its CommitLog; LocalLog and RaftLog
// implement both.
//
// Thread-safety: as the CommitLog it belongs to.
#pragma once

#include <cstdint>
#include <string>

#include "protocol/base/status.h"

namespace gpool::log {

class ImageFileLog {
 public:
  virtual ~ImageFileLog() = default;
  // Whether SaveSnapshotFile may be used (the log was given a directory for
  // image files).
  virtual bool KeepsImageFiles() const = 0;
  // CommitLog::SaveSnapshot with the image already in the file `path`
  // (fsynced, `bytes` long, SHA-256 `sha256`): the log keeps (hard-links)
  // the file and stores a small reference to it, never reading it, so the
  // caller's cost does not grow with the image.
  virtual Status SaveSnapshotFile(uint64_t index, const std::string& path, uint64_t bytes,
                                  const std::string& sha256) = 0;
};

}  // namespace gpool::log
