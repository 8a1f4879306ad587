// The worker's part in rGPU sessions (issue 33): a bind with `rgpu` set runs
// gpool-rgpu-server instead of the task's command, on a port of the node's
// data-plane address, with a key pair drawn for it here, admitting only the
// session owner's key (worker/rgpu/README.md: the server).
//
// The server runs as any task does: as the session owner's uid, in the
// task's cgroup, with the share's interposer on its LD_LIBRARY_PATH, so the
// driver calls it makes for its client are held to the session's share; it
// is adopted across a worker restart and fenced by the leader epoch like
// every bind and preempt.
#pragma once

#include <string>
#include <vector>

#include "protocol/base/status.h"
#include "protocol/messages.h"

namespace gpool::worker {

struct RgpuOptions {
  // gpool-rgpu-server, absolute; empty: this node opens no sessions (a
  // session bound here fails to start, saying so).
  std::string server;
  // The address the session servers listen on and clients reach (an IP).
  std::string address = "127.0.0.1";
};

// Where gpool-rgpu-server is next to a worker binary at `exe`: <dir>/
// gpool-rgpu-server (installed), then <dir>/rgpu/gpool-rgpu-server (the
// build tree). `flag`: --rgpu-server ("" default, "none", or a path).
std::string ChooseRgpuServer(const std::string& flag, const std::string& exe);

// <log_dir>/<job>.<index>.<attempt>.rgpu.key: the attempt's server key.
std::string TaskRgpuKeyPath(const std::string& log_dir, const TaskId& task);

// A free TCP port on `address` right now (bound to port 0 and closed): the
// server binds it a moment later. Unavailable when none can be had.
Result<int> PickFreePort(const std::string& address);

// The server's command line for `bind` (whose rgpu.endpoint and server_key
// this fills in), its secret key written to `key_file` (0600, replaced if
// present). `driver`: the driver the server opens by path (--driver), for a
// session whose environment puts no interposer in front of the driver (whole
// GPUs, MIG): the node's real libcuda.so.1, which need not be on the
// default search path. Empty: libcuda.so.1 by name, as a share's server
// must, to load the interposer that holds it to the share.
// FailedPrecondition when this node runs no session server.
Result<std::vector<std::string>> PrepareRgpuServer(const RgpuOptions& options, const std::string& key_file,
                                                   const std::string& driver, BindTask& bind);

}  // namespace gpool::worker
