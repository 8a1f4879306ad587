#include "control/http/http_sessions.h"

#include <algorithm>

#include <sodium.h>

namespace gpool::control {

std::string HttpSessions::Open(const std::string& token_id, const std::string& owner, int64_t token_expires_ms,
                               int64_t now_ms) {
  unsigned char raw[32];
  randombytes_buf(raw, sizeof(raw));
  char hex[2 * sizeof(raw) + 1];
  sodium_bin2hex(hex, sizeof(hex), raw, sizeof(raw));
  HttpSession session{token_id, owner, now_ms, now_ms + kSessionTtlMs};
  if (token_expires_ms != 0) session.expires_ms = std::min(session.expires_ms, token_expires_ms);
  std::lock_guard lock(mu_);
  // Expired ones first, then the oldest: a flood of sign-ins cannot grow
  // the table, only end older sessions.
  std::erase_if(sessions_, [&](const auto& entry) { return entry.second.expires_ms <= now_ms; });
  while (!sessions_.empty() && sessions_.size() >= max_sessions_) {
    auto oldest = std::min_element(sessions_.begin(), sessions_.end(), [](const auto& a, const auto& b) {
      return a.second.opened_ms < b.second.opened_ms;
    });
    sessions_.erase(oldest);
  }
  sessions_[hex] = std::move(session);
  return hex;
}

std::optional<HttpSession> HttpSessions::Find(const std::string& id, int64_t now_ms) {
  std::lock_guard lock(mu_);
  auto it = sessions_.find(id);
  if (it == sessions_.end()) return std::nullopt;
  if (it->second.expires_ms <= now_ms) {
    sessions_.erase(it);
    return std::nullopt;
  }
  return it->second;
}

bool HttpSessions::Close(const std::string& id) {
  std::lock_guard lock(mu_);
  return sessions_.erase(id) > 0;
}

size_t HttpSessions::size() const {
  std::lock_guard lock(mu_);
  return sessions_.size();
}

std::string SessionIdOfCookie(std::string_view cookie_header) {
  const std::string wanted = std::string(kSessionCookie) + "=";
  size_t at = 0;
  while (at < cookie_header.size()) {
    while (at < cookie_header.size() && (cookie_header[at] == ' ' || cookie_header[at] == ';')) ++at;
    size_t end = cookie_header.find(';', at);
    if (end == std::string_view::npos) end = cookie_header.size();
    const std::string_view pair = cookie_header.substr(at, end - at);
    if (pair.substr(0, wanted.size()) == wanted) return std::string(pair.substr(wanted.size()));
    at = end;
  }
  return "";
}

std::string SessionSetCookie(const std::string& id, int64_t max_age_s) {
  return std::string(kSessionCookie) + "=" + id + "; Path=/; Max-Age=" + std::to_string(std::max<int64_t>(0, max_age_s)) +
         "; HttpOnly; Secure; SameSite=Strict";
}

}  // namespace gpool::control
