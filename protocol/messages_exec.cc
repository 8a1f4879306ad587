#include "protocol/messages_exec.h"

#include <csignal>

#include "protocol/base/text.h"

namespace gpool {

Status ValidateExecCommand(const std::vector<std::string>& command, uint32_t lease_ms) {
  if (command.empty() || command[0].empty()) return Status::InvalidArgument("command: empty");
  if (command.size() > kMaxExecArgs) {
    return Status::ResourceExhausted("command: more than " + std::to_string(kMaxExecArgs) + " arguments");
  }
  size_t bytes = 0;
  for (const auto& arg : command) {
    if (HasNul(arg)) return Status::InvalidArgument("command: an argument holds a NUL byte");
    bytes += arg.size();
  }
  if (bytes > kMaxExecCommandBytes) {
    return Status::ResourceExhausted("command: longer than " + std::to_string(kMaxExecCommandBytes) + " bytes");
  }
  if (lease_ms < kMinExecLeaseMs || lease_ms > kMaxExecLeaseMs) {
    return Status::InvalidArgument("lease_ms: " + std::to_string(lease_ms) + " is outside [" +
                                   std::to_string(kMinExecLeaseMs) + ", " + std::to_string(kMaxExecLeaseMs) + "]");
  }
  return Status::Ok();
}

Status ValidateExecKey(const std::string& key) {
  if (key.size() > 128) return Status::InvalidArgument("key: longer than 128 bytes");
  return Status::Ok();
}

Status ValidateExecSignal(int32_t signal) {
  if (signal == SIGINT || signal == SIGTERM || signal == SIGKILL || signal == SIGHUP) return Status::Ok();
  return Status::InvalidArgument("signal: " + std::to_string(signal) + " is not SIGINT, SIGTERM, SIGKILL or SIGHUP");
}

}  // namespace gpool
