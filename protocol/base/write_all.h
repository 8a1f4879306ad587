// WriteAll: every byte to a descriptor, through the partial writes and
// EINTRs that write(2) may return (a pipe, a socket, a signal mid-write).
// Eight hand-written copies of this loop had drifted apart (some treated a
// 0-byte write as success, some kept going after an error); this is the one.
//
// Async-signal-safe and allocation-free: a forked child (the snapshot
// encoder, the task launcher) may call it between fork and _exit.
#pragma once

#include <string_view>

namespace gpool {

// True once all of `bytes` is written. False on the first error, with errno
// as write(2) left it (EIO where write wrote nothing and reported no error).
bool WriteAll(int fd, std::string_view bytes);

}  // namespace gpool
