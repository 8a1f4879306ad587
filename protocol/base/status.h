// Status and Result<T>: errors are values, never exceptions across module seams.
//
// A Status is a code plus a human-readable message. The codes are part of the
// public wire contract (docs/protocol.md) so clients in other languages can
// branch on them; never renumber an existing code.
//
// Thread-safety: plain values; safe to copy between threads.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace gpool {

enum class StatusCode : uint8_t {
  kOk = 0,
  kInvalidArgument = 1,   // a request or spec field is wrong; the message names it
  kNotFound = 2,          // the named job, task or node does not exist
  kAlreadyExists = 3,
  kFailedPrecondition = 4,  // valid request, wrong state (e.g. cancel a finished job)
  kResourceExhausted = 5,   // a limit was hit (oversize frame, too many tasks)
  kUnavailable = 6,         // try again later (not ready, timeout, disconnected)
  kNotLeader = 7,           // this replica cannot serve writes; message names the leader
  kStaleEpoch = 8,          // a command from an older leader epoch was refused
  kUnauthenticated = 9,     // missing or wrong token
  kMalformed = 10,          // bytes that do not decode (bad msgpack, wrong types, trailing bytes)
  kUnknownType = 11,        // a message type this side does not know
  kUnsupportedVersion = 12, // protocol version mismatch
  kInternal = 13,           // a bug or an I/O failure on our side
  kIoError = 14,            // storage or filesystem failure
  kDeadlineExceeded = 15,
  kPermissionDenied = 16,   // authenticated, but the caller's roles do not allow it; the message names the permission
};

std::string_view StatusCodeName(StatusCode code);
std::optional<StatusCode> StatusCodeFromName(std::string_view name);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return {}; }
  static Status InvalidArgument(std::string m) { return {StatusCode::kInvalidArgument, std::move(m)}; }
  static Status NotFound(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
  static Status AlreadyExists(std::string m) { return {StatusCode::kAlreadyExists, std::move(m)}; }
  static Status FailedPrecondition(std::string m) { return {StatusCode::kFailedPrecondition, std::move(m)}; }
  static Status ResourceExhausted(std::string m) { return {StatusCode::kResourceExhausted, std::move(m)}; }
  static Status Unavailable(std::string m) { return {StatusCode::kUnavailable, std::move(m)}; }
  static Status NotLeader(std::string m) { return {StatusCode::kNotLeader, std::move(m)}; }
  static Status StaleEpoch(std::string m) { return {StatusCode::kStaleEpoch, std::move(m)}; }
  static Status Unauthenticated(std::string m) { return {StatusCode::kUnauthenticated, std::move(m)}; }
  static Status PermissionDenied(std::string m) { return {StatusCode::kPermissionDenied, std::move(m)}; }
  static Status Malformed(std::string m) { return {StatusCode::kMalformed, std::move(m)}; }
  static Status UnknownType(std::string m) { return {StatusCode::kUnknownType, std::move(m)}; }
  static Status UnsupportedVersion(std::string m) { return {StatusCode::kUnsupportedVersion, std::move(m)}; }
  static Status Internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }
  static Status IoError(std::string m) { return {StatusCode::kIoError, std::move(m)}; }
  static Status DeadlineExceeded(std::string m) { return {StatusCode::kDeadlineExceeded, std::move(m)}; }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "InvalidArgument: tasks[0].resources.gpus: must be >= 0"
  std::string ToString() const;

  // Prefixes the message with context, keeping the code: "loading spec: " + message.
  Status WithContext(std::string_view context) const;

  bool operator==(const Status& other) const = default;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

// Result<T> holds either a value or a non-OK Status.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : data_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status) : data_(std::move(status)) {}  // NOLINT: implicit by design

  bool ok() const { return std::holds_alternative<T>(data_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(data_);
  }
  T& value() & { return std::get<T>(data_); }
  const T& value() const& { return std::get<T>(data_); }
  T&& value() && { return std::get<T>(std::move(data_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> data_;
};

}  // namespace gpool

// Early-return helpers; keep call sites flat.
#define GPOOL_CONCAT_INNER(a, b) a##b
#define GPOOL_CONCAT(a, b) GPOOL_CONCAT_INNER(a, b)

#define GPOOL_RETURN_IF_ERROR(expr)          \
  do {                                       \
    ::gpool::Status _gpool_status = (expr);  \
    if (!_gpool_status.ok()) return _gpool_status; \
  } while (0)

#define GPOOL_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                \
  if (!tmp.ok()) return tmp.status();               \
  lhs = std::move(tmp).value()

#define GPOOL_ASSIGN_OR_RETURN(lhs, expr) \
  GPOOL_ASSIGN_OR_RETURN_IMPL(GPOOL_CONCAT(_gpool_result_, __LINE__), lhs, expr)
