#include "protocol/security/task_exec_key.h"

#include <array>
#include <charconv>

#include <sodium.h>
#include <zmq.h>

namespace gpool::security {
namespace {

constexpr std::string_view kTaskExecLabel = "gpool task exec v1";

void AppendBigEndian(std::string& out, uint64_t value, int bytes) {
  for (int shift = (bytes - 1) * 8; shift >= 0; shift -= 8) out.push_back(static_cast<char>((value >> shift) & 0xff));
}

// A decimal number that is the whole of `text`, no sign, no leading '+'.
template <typename T>
std::optional<T> TaskExecNumber(std::string_view text) {
  T value = 0;
  if (text.empty()) return std::nullopt;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

}  // namespace

Result<std::string> TaskExecSecret(std::string_view job_secret, const TaskId& task) {
  if (job_secret.empty()) {
    return Status::InvalidArgument("job " + std::to_string(task.job.value()) + " has no exec secret");
  }
  // Idempotent and thread-safe; libsodium asks for it before any call.
  static const int initialised = sodium_init();
  (void)initialised;
  std::string message(kTaskExecLabel);
  message.push_back('\0');
  AppendBigEndian(message, task.job.value(), 8);
  AppendBigEndian(message, task.index, 4);
  AppendBigEndian(message, task.attempt, 4);
  std::array<unsigned char, crypto_auth_hmacsha256_BYTES> mac{};
  crypto_auth_hmacsha256_state state;
  crypto_auth_hmacsha256_init(&state, reinterpret_cast<const unsigned char*>(job_secret.data()), job_secret.size());
  crypto_auth_hmacsha256_update(&state, reinterpret_cast<const unsigned char*>(message.data()), message.size());
  crypto_auth_hmacsha256_final(&state, mac.data());
  sodium_memzero(&state, sizeof(state));
  // Clamped as X25519 does it anyway, so the key written down is the scalar used.
  mac[0] &= 248;
  mac[31] &= 127;
  mac[31] |= 64;
  std::array<char, 41> z85{};
  const bool encoded = zmq_z85_encode(z85.data(), mac.data(), mac.size()) != nullptr;
  sodium_memzero(mac.data(), mac.size());
  if (!encoded) return Status::Internal("Z85 encoding of a task's exec key failed");
  return std::string(z85.data(), 40);
}

std::string TaskExecName(const TaskId& task) { return task.ToString(); }

std::optional<TaskId> ParseTaskExecName(std::string_view name) {
  const size_t dot = name.find('.');
  if (dot == std::string_view::npos) return std::nullopt;
  const size_t hash = name.find('#', dot + 1);
  auto job = TaskExecNumber<uint64_t>(name.substr(0, dot));
  auto index = TaskExecNumber<uint32_t>(name.substr(dot + 1, hash == std::string_view::npos ? hash : hash - dot - 1));
  auto attempt = hash == std::string_view::npos ? std::optional<uint32_t>(0)
                                                 : TaskExecNumber<uint32_t>(name.substr(hash + 1));
  if (!job || !index || !attempt) return std::nullopt;
  // "17.0#0" is not how a task is named: one spelling per task.
  if (hash != std::string_view::npos && *attempt == 0) return std::nullopt;
  return TaskId{JobId(*job), *index, *attempt};
}

}  // namespace gpool::security
