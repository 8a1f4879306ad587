// Logging conventions for the worker: spdlog with key=value fields, e.g.
//   spdlog::info("task exited task={} pid={} exit_code={}", ...)
// Values that may hold spaces or quotes go through Q() so a line stays
// machine-parsable: message="exec failed: No such file".
//
// Components take a logger in their Options (nullptr: spdlog's default
// logger), so tests can capture what was logged.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include <spdlog/spdlog.h>

namespace gpool::worker {

// Quotes `value` when it is empty or holds spaces, quotes, '=' or control
// characters; long values are clipped to `max_length` bytes.
std::string Q(std::string_view value, size_t max_length = 256);

// `logger` or, when null, spdlog's default logger.
inline std::shared_ptr<spdlog::logger> OrDefault(std::shared_ptr<spdlog::logger> logger) {
  return logger ? std::move(logger) : spdlog::default_logger();
}

}  // namespace gpool::worker
