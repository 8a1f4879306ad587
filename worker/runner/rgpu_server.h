// The worker's part in rGPU sessions (issue 33): a bind with `rgpu` set runs
// gpool-rgpu-server instead of the task's command, on the node's data-plane
// address, with a key pair drawn for it here, admitting only the session
// owner's key (worker/rgpu/README.md: the server).
//
// The port is the server's own choice (issue 47): it binds port 0 ("tcp://
// IP:*") and writes the endpoint it got to its endpoint file (worker/rgpu/
// server/endpoint_file.h), which the TaskManager reads on its loop turns
// until it appears or ready_timeout_ms passes. A port picked here and bound
// by the server later could be taken by another process in between.
//
// The server runs as any task does: as the session owner's uid, in the
// task's cgroup, with the share's interposer on its LD_LIBRARY_PATH, so the
// driver calls it makes for its client are held to the session's share; it
// is adopted across a worker restart and fenced by the leader epoch like
// every bind and preempt.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "protocol/base/status.h"
#include "protocol/messages_worker.h"

namespace gpool::worker {

struct RgpuOptions {
  // gpool-rgpu-server, absolute; empty: this node opens no sessions (a
  // session bound here fails to start, saying so).
  std::string server;
  // The address the session servers listen on and clients reach (an IP).
  std::string address = "127.0.0.1";
  // How long a started server has to report its endpoint; then it is
  // stopped and the session fails, saying why.
  int64_t ready_timeout_ms = 30'000;
};

// Where gpool-rgpu-server is next to a worker binary at `exe`: <dir>/
// gpool-rgpu-server (installed), then <dir>/rgpu/gpool-rgpu-server (the
// build tree). `flag`: --rgpu-server ("" default, "none", or a path).
std::string ChooseRgpuServer(const std::string& flag, const std::string& exe);

// <log_dir>/<job>.<index>.<attempt>.rgpu.key: the attempt's server key.
std::string TaskRgpuKeyPath(const std::string& log_dir, const TaskId& task);

// <dir>/<job>.<index>.<attempt>.rgpu.endpoint: where the attempt's server
// reports its endpoint. `dir` must be one the server can create files in:
// the task's work directory when it runs as another user (isolation), else
// the tasks directory.
std::string TaskRgpuEndpointPath(const std::string& dir, const TaskId& task);

// The endpoint a server reported in `path`: "tcp://<address>:<port>".
// NotFound while there is no file yet; Malformed when the file is not a
// regular file or holds anything else (the directory may be the session
// owner's, so nothing but a port on `address` is taken from it).
Result<std::string> ReadRgpuEndpoint(const std::string& path, const std::string& address);

// The server's command line for `bind` (whose rgpu.server_key this fills
// in; rgpu.endpoint stays empty until the server reports it), binding a
// port of its choice and reporting it to `endpoint_file`, its secret key
// written to `key_file` (0600, replaced if present). `driver`: the driver the server opens by path (--driver), for a
// session whose environment puts no interposer in front of the driver (whole
// GPUs, MIG): the node's real libcuda.so.1, which need not be on the
// default search path. Empty: libcuda.so.1 by name, as a share's server
// must, to load the interposer that holds it to the share.
// FailedPrecondition when this node runs no session server,
// InvalidArgument when options.address is not an IPv4 address.
Result<std::vector<std::string>> PrepareRgpuServer(const RgpuOptions& options, const std::string& key_file,
                                                   const std::string& endpoint_file, const std::string& driver,
                                                   BindTask& bind);

}  // namespace gpool::worker
