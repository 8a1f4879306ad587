// The interposer's log. It runs inside foreign processes, so it owns no
// logger library and no threads: one fprintf-style line per event,
// "gpool-cuda: level=<l> pid=<pid> event=<name> key=value ...".
// GPOOL_CUDA_LOG names the sink: "stderr" or a file path (appended). Unset:
// only errors are written, to stderr. Safe from any thread.
#pragma once

namespace gpool::cuda {

// Reads GPOOL_CUDA_LOG; called once at load.
void InitLog();
// `format` starts with the event name, then key=value pairs.
void LogError(const char* format, ...) __attribute__((format(printf, 1, 2)));
void LogInfo(const char* format, ...) __attribute__((format(printf, 1, 2)));

}  // namespace gpool::cuda
