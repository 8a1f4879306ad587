#include "protocol/base/status.h"

#include <array>

namespace gpool {
namespace {

constexpr std::array<std::string_view, 17> kNames = {
    "Ok",          "InvalidArgument",   "NotFound",          "AlreadyExists",
    "FailedPrecondition", "ResourceExhausted", "Unavailable", "NotLeader",
    "StaleEpoch",  "Unauthenticated",   "Malformed",         "UnknownType",
    "UnsupportedVersion", "Internal",   "IoError",           "DeadlineExceeded",
    "PermissionDenied",
};

}  // namespace

std::string_view StatusCodeName(StatusCode code) {
  auto index = static_cast<size_t>(code);
  return index < kNames.size() ? kNames[index] : std::string_view("Unknown");
}

std::optional<StatusCode> StatusCodeFromName(std::string_view name) {
  for (size_t i = 0; i < kNames.size(); ++i) {
    if (kNames[i] == name) return static_cast<StatusCode>(i);
  }
  return std::nullopt;
}

std::string Status::ToString() const {
  if (ok()) return "Ok";
  std::string out(StatusCodeName(code_));
  out += ": ";
  out += message_;
  return out;
}

Status Status::WithContext(std::string_view context) const {
  if (ok()) return *this;
  std::string message(context);
  message += ": ";
  message += message_;
  return Status(code_, std::move(message));
}

}  // namespace gpool
