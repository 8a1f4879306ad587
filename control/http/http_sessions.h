// HttpSessions: the dashboard's sign-in sessions (issue 48). A person signs
// in once with an API token (POST /ui/session); the coordinator keeps a
// server-side session naming the token, and the browser holds only a random
// session id in an HttpOnly, Secure, SameSite=Strict cookie, so the page's
// script never sees a credential and another site cannot send it.
//
// A session speaks for its token: each request re-checks the committed
// token (coordinator_http_wiring.cc), so revoking the token or removing its
// owner ends the session at once, on every replica. Sessions are this
// replica's own (a dashboard talks to one address), bounded in number (the
// oldest go first) and in age (kSessionTtlMs, or the token's expiry).
//
// Thread-safety: every member is safe from any thread (the HTTP threads).
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

namespace gpool::control {

inline constexpr std::string_view kSessionCookie = "gpool_session";
inline constexpr int64_t kSessionTtlMs = 12LL * 3600 * 1000;

struct HttpSession {
  std::string token_id;
  std::string owner;
  int64_t opened_ms = 0;
  int64_t expires_ms = 0;
};

class HttpSessions {
 public:
  explicit HttpSessions(size_t max_sessions = 1024) : max_sessions_(max_sessions) {}
  // A new session for the token; ends with the token (token_expires_ms, 0:
  // never) or after kSessionTtlMs, whichever is first. Returns its id.
  std::string Open(const std::string& token_id, const std::string& owner, int64_t token_expires_ms, int64_t now_ms);
  // The live session `id`, or nullopt (unknown, ended, expired).
  std::optional<HttpSession> Find(const std::string& id, int64_t now_ms);
  // Ends it; false when there was none.
  bool Close(const std::string& id);
  size_t size() const;

 private:
  const size_t max_sessions_;
  mutable std::mutex mu_;
  std::map<std::string, HttpSession> sessions_;  // by id
};

// The gpool_session value of a Cookie header, or "".
std::string SessionIdOfCookie(std::string_view cookie_header);
// The Set-Cookie value that gives a browser session `id` for `max_age_s`
// (0 with an empty id: the cookie is deleted).
std::string SessionSetCookie(const std::string& id, int64_t max_age_s);

}  // namespace gpool::control
