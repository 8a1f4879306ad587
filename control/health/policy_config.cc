#include "control/health/policy_config.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <span>
#include <sstream>
#include <utility>

#include "protocol/base/text.h"
#include "protocol/event.h"
#include "protocol/health.h"

namespace gpool::health {
namespace {

// The same bound as the scheduler's parser: the file is re-read on SIGHUP.
constexpr size_t kMaxConfigBytes = size_t{1} << 20;
constexpr size_t kMaxEchoed = 64;
constexpr size_t kMaxSinkName = 64;
constexpr size_t kMaxSinks = 16;
constexpr size_t kMaxUrl = 2048;
constexpr size_t kMaxLabel = 256;
constexpr int64_t kMaxTimeoutMs = 600'000;
constexpr int64_t kMaxBackoffMs = 3'600'000;
constexpr int64_t kMaxAttempts = 1'000;
constexpr int64_t kMaxRounds = 1'000'000;
constexpr int64_t kMaxGraceMs = std::numeric_limits<uint32_t>::max();
constexpr int64_t kMaxWindowMs = int64_t{7} * 24 * 3600 * 1000;
constexpr int64_t kMaxXid = 1'000'000;
constexpr uint32_t kPpm = 1'000'000;

std::string Clip(std::string_view s) {
  return s.size() <= kMaxEchoed ? std::string(s) : std::string(s.substr(0, kMaxEchoed)) + "...";
}

struct Line {
  size_t number = 0;
  std::string_view section;
  std::string_view key;
  std::string_view value;
};

Status Fail(const Line& l, std::string_view why) {
  return Status::InvalidArgument("line " + std::to_string(l.number) + ": [" + std::string(l.section) + "] " +
                                 Clip(l.key) + ": " + std::string(why));
}

Result<int64_t> Int(const Line& l, int64_t min, int64_t max) {
  const char* end = l.value.data() + l.value.size();
  int64_t value = 0;
  const auto [ptr, ec] = std::from_chars(l.value.data(), end, value);
  if (ec == std::errc::invalid_argument || ptr != end) return Fail(l, "'" + Clip(l.value) + "' is not a whole number");
  if (ec == std::errc::result_out_of_range || value < min || value > max) {
    return Fail(l, "'" + Clip(l.value) + "' must be in " + std::to_string(min) + ".." + std::to_string(max));
  }
  return value;
}

template <typename T>
Status SetInt(const Line& l, int64_t min, int64_t max, T* out) {
  GPOOL_ASSIGN_OR_RETURN(int64_t v, Int(l, min, max));
  *out = static_cast<T>(v);
  return Status::Ok();
}

Status SetBool(const Line& l, bool* out) {
  if (l.value != "true" && l.value != "false") return Fail(l, "'" + Clip(l.value) + "' is not true or false");
  *out = l.value == "true";
  return Status::Ok();
}

Status SetAction(const Line& l, FenceAction* out) {
  auto action = FenceActionFromName(l.value);
  if (!action.ok()) return Fail(l, action.status().message());
  *out = *action;
  return Status::Ok();
}

Status SetSeverity(const Line& l, HealthSeverity* out) {
  auto s = HealthSeverityFromString(l.value);
  if (!s) return Fail(l, "'" + Clip(l.value) + "' is not one of warning, degraded, fatal");
  *out = *s;
  return Status::Ok();
}

// "a, b, c" -> items; an empty value is an empty list; empty items are refused.
Result<std::vector<std::string_view>> Items(const Line& l) {
  std::vector<std::string_view> items;
  if (l.value.empty()) return items;
  std::string_view rest = l.value;
  for (size_t index = 1;; ++index) {
    const size_t comma = rest.find(',');
    const std::string_view item = TrimSpace(rest.substr(0, comma));
    if (item.empty()) return Fail(l, "entry " + std::to_string(index) + " is empty");
    items.push_back(item);
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  return items;
}

Status SetKinds(const Line& l, std::vector<HealthKind>* out) {
  GPOOL_ASSIGN_OR_RETURN(auto items, Items(l));
  std::vector<HealthKind> kinds;
  for (std::string_view item : items) {
    auto kind = HealthKindFromString(item);
    if (!kind) return Fail(l, "unknown health condition kind '" + Clip(item) + "'");
    if (std::find(kinds.begin(), kinds.end(), *kind) != kinds.end()) {
      return Fail(l, "'" + std::string(item) + "' is listed twice");
    }
    kinds.push_back(*kind);
  }
  *out = std::move(kinds);
  return Status::Ok();
}

Status SetEventKinds(const Line& l, std::vector<EventKind>* out) {
  GPOOL_ASSIGN_OR_RETURN(auto items, Items(l));
  std::vector<EventKind> kinds;
  for (std::string_view item : items) {
    auto kind = EventKindFromString(item);
    if (!kind) return Fail(l, "unknown event kind '" + Clip(item) + "'");
    if (std::find(kinds.begin(), kinds.end(), *kind) != kinds.end()) {
      return Fail(l, "'" + std::string(item) + "' is listed twice");
    }
    kinds.push_back(*kind);
  }
  *out = std::move(kinds);
  return Status::Ok();
}

Status SetXids(const Line& l, std::vector<int32_t>* out) {
  GPOOL_ASSIGN_OR_RETURN(auto items, Items(l));
  std::vector<int32_t> codes;
  for (std::string_view item : items) {
    Line one = l;
    one.value = item;
    GPOOL_ASSIGN_OR_RETURN(int64_t code, Int(one, 1, kMaxXid));
    if (std::find(codes.begin(), codes.end(), code) != codes.end()) {
      return Fail(l, "XID " + std::to_string(code) + " is listed twice");
    }
    codes.push_back(static_cast<int32_t>(code));
  }
  *out = std::move(codes);
  return Status::Ok();
}

// "0.10", "0.5", "1", "10%": a share of the cluster in 0..1, to ppm exactly
// (at most 6 decimals, or 4 with %).
Status SetFraction(const Line& l, uint32_t* out) {
  std::string_view v = l.value;
  const bool percent = !v.empty() && v.back() == '%';
  if (percent) v = TrimSpace(v.substr(0, v.size() - 1));
  const size_t dot = v.find('.');
  const std::string_view whole = v.substr(0, dot);
  const std::string_view frac = dot == std::string_view::npos ? std::string_view() : v.substr(dot + 1);
  auto digits = [](std::string_view s) {
    return std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  const size_t scale_digits = percent ? 4 : 6;
  if (whole.empty() || whole.size() > 3 || !digits(whole) || !digits(frac) ||
      (dot != std::string_view::npos && frac.empty()) || frac.size() > scale_digits) {
    return Fail(l, "'" + Clip(l.value) + "' is not a fraction like 0.10 or a percentage like 10%");
  }
  uint64_t value = 0;
  for (char c : whole) value = value * 10 + static_cast<uint64_t>(c - '0');
  for (size_t i = 0; i < scale_digits; ++i) value = value * 10 + (i < frac.size() ? static_cast<uint64_t>(frac[i] - '0') : 0);
  // Either way value is now in millionths of the cluster (10% -> 100000).
  if (value > kPpm) return Fail(l, "'" + Clip(l.value) + (percent ? "' must be in 0%..100%" : "' must be in 0..1"));
  *out = static_cast<uint32_t>(value);
  return Status::Ok();
}

Status SetExemptLabel(const Line& l, HealthPolicyConfig* c) {
  const size_t eq = l.value.find('=');
  if (eq == std::string_view::npos) return Fail(l, "'" + Clip(l.value) + "' is not key=value");
  const std::string_view key = TrimSpace(l.value.substr(0, eq));
  const std::string_view value = TrimSpace(l.value.substr(eq + 1));
  if (key.empty() || key.size() > kMaxLabel || value.size() > kMaxLabel) {
    return Fail(l, "the label key must be 1.." + std::to_string(kMaxLabel) + " bytes and the value at most " +
                       std::to_string(kMaxLabel));
  }
  c->exempt_label_key = std::string(key);
  c->exempt_label_value = std::string(value);
  return Status::Ok();
}

Status SetUrl(const Line& l, std::string* out) {
  if (l.value.size() > kMaxUrl) return Fail(l, "URLs are at most " + std::to_string(kMaxUrl) + " bytes");
  auto url = ParseHttpUrl(l.value);
  if (!url.ok()) return Fail(l, url.status().message());
  *out = std::string(l.value);
  return Status::Ok();
}

Status SetPath(const Line& l, std::string* out) {
  if (l.value.empty() || l.value.front() != '/' || l.value.size() > kMaxUrl) {
    return Fail(l, "an absolute path of at most " + std::to_string(kMaxUrl) + " bytes is required");
  }
  *out = std::string(l.value);
  return Status::Ok();
}

using Apply = Status (*)(const Line&, HealthPolicyConfig*, WebhookSinkConfig*);
struct Key {
  std::string_view name;
  Apply apply;
};

constexpr Key kHealthKeys[] = {
    {"enabled", [](const Line& l, HealthPolicyConfig* c, WebhookSinkConfig*) { return SetBool(l, &c->enabled); }},
    {"device_action",
     [](const Line& l, HealthPolicyConfig* c, WebhookSinkConfig*) { return SetAction(l, &c->device_action); }},
    {"node_action",
     [](const Line& l, HealthPolicyConfig* c, WebhookSinkConfig*) { return SetAction(l, &c->node_action); }},
    {"slow_action",
     [](const Line& l, HealthPolicyConfig* c, WebhookSinkConfig*) { return SetAction(l, &c->slow_action); }},
    {"fence_min_severity",
     [](const Line& l, HealthPolicyConfig* c, WebhookSinkConfig*) { return SetSeverity(l, &c->fence_min_severity); }},
    {"never_fence",
     [](const Line& l, HealthPolicyConfig* c, WebhookSinkConfig*) { return SetKinds(l, &c->never_fence); }},
    {"drain_grace_ms",
     [](const Line& l, HealthPolicyConfig* c, WebhookSinkConfig*) {
       return SetInt(l, 0, kMaxGraceMs, &c->drain_grace_ms);
     }},
    {"uncordon_after_clear_rounds",
     [](const Line& l, HealthPolicyConfig* c, WebhookSinkConfig*) {
       return SetInt(l, 0, kMaxRounds, &c->uncordon_after_clear_rounds);
     }},
    {"exempt_label", [](const Line& l, HealthPolicyConfig* c, WebhookSinkConfig*) { return SetExemptLabel(l, c); }},
    {"max_fenced_fraction",
     [](const Line& l, HealthPolicyConfig* c, WebhookSinkConfig*) { return SetFraction(l, &c->max_fenced_ppm); }},
    {"breaker_window_ms",
     [](const Line& l, HealthPolicyConfig* c, WebhookSinkConfig*) {
       return SetInt(l, 1, kMaxWindowMs, &c->breaker_window_ms);
     }},
    {"min_nodes_for_breaker",
     [](const Line& l, HealthPolicyConfig* c, WebhookSinkConfig*) {
       return SetInt(l, 0, kMaxRounds, &c->min_nodes_for_breaker);
     }},
};

constexpr Key kXidKeys[] = {
    {"application",
     [](const Line& l, HealthPolicyConfig* c, WebhookSinkConfig*) { return SetXids(l, &c->xid.application); }},
    {"fatal", [](const Line& l, HealthPolicyConfig* c, WebhookSinkConfig*) { return SetXids(l, &c->xid.fatal); }},
};

constexpr Key kWebhookKeys[] = {
    {"url", [](const Line& l, HealthPolicyConfig*, WebhookSinkConfig* s) { return SetUrl(l, &s->url); }},
    {"timeout_ms",
     [](const Line& l, HealthPolicyConfig*, WebhookSinkConfig* s) { return SetInt(l, 1, kMaxTimeoutMs, &s->timeout_ms); }},
    {"max_attempts",
     [](const Line& l, HealthPolicyConfig*, WebhookSinkConfig* s) { return SetInt(l, 1, kMaxAttempts, &s->max_attempts); }},
    {"backoff_initial_ms",
     [](const Line& l, HealthPolicyConfig*, WebhookSinkConfig* s) {
       return SetInt(l, 0, kMaxBackoffMs, &s->backoff_initial_ms);
     }},
    {"backoff_max_ms",
     [](const Line& l, HealthPolicyConfig*, WebhookSinkConfig* s) {
       return SetInt(l, 0, kMaxBackoffMs, &s->backoff_max_ms);
     }},
    {"kinds", [](const Line& l, HealthPolicyConfig*, WebhookSinkConfig* s) { return SetEventKinds(l, &s->kinds); }},
    {"min_severity",
     [](const Line& l, HealthPolicyConfig*, WebhookSinkConfig* s) { return SetSeverity(l, &s->min_severity); }},
    {"insecure", [](const Line& l, HealthPolicyConfig*, WebhookSinkConfig* s) { return SetBool(l, &s->insecure); }},
    {"ca_file", [](const Line& l, HealthPolicyConfig*, WebhookSinkConfig* s) { return SetPath(l, &s->ca_file); }},
    {"secret_file",
     [](const Line& l, HealthPolicyConfig*, WebhookSinkConfig* s) { return SetPath(l, &s->secret_file); }},
};

constexpr std::string_view kWebhookPrefix = "health.webhook.";

bool ValidSinkName(std::string_view name) {
  if (name.empty() || name.size() > kMaxSinkName) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
  });
}

bool IsHealthSection(std::string_view name) { return name == "health" || name.substr(0, 7) == "health."; }

std::string KnownKeys(std::span<const Key> keys) {
  std::string list;
  for (const Key& key : keys) list += (list.empty() ? "" : ", ") + std::string(key.name);
  return list;
}

class Parser {
 public:
  Status Line(size_t number, std::string_view text);
  Result<HealthPolicyConfig> Finish();

 private:
  Status Header(size_t number, std::string_view name);

  HealthPolicyConfig config_;
  bool in_health_ = false;  // false: a section of the scheduler's, skipped
  std::string section_;
  std::span<const Key> keys_;
  WebhookSinkConfig* sink_ = nullptr;
  std::map<std::string, size_t, std::less<>> seen_sections_;
  std::map<std::string, size_t, std::less<>> seen_keys_;
  std::map<std::string, size_t, std::less<>> sink_lines_;  // sink name -> its header's line
};

Status Parser::Line(size_t number, std::string_view text) {
  text = TrimSpace(text.substr(0, text.find('#')));
  if (text.empty()) return Status::Ok();
  if (text.front() == '[') {
    // Malformed headers are the scheduler parser's to report.
    if (text.back() != ']') return Status::Ok();
    return Header(number, TrimSpace(text.substr(1, text.size() - 2)));
  }
  if (!in_health_) return Status::Ok();
  const size_t eq = text.find('=');
  if (eq == std::string_view::npos) {
    return Status::InvalidArgument("line " + std::to_string(number) + ": [" + section_ + "] '" + Clip(text) +
                                   "': expected key = value");
  }
  gpool::health::Line l{number, section_, TrimSpace(text.substr(0, eq)), TrimSpace(text.substr(eq + 1))};
  const Key* key = nullptr;
  for (const Key& k : keys_) {
    if (k.name == l.key) key = &k;
  }
  if (key == nullptr) return Fail(l, "unknown key (known: " + KnownKeys(keys_) + ")");
  const auto [it, fresh] = seen_keys_.emplace(section_ + "." + std::string(l.key), number);
  if (!fresh) return Fail(l, "set twice (first on line " + std::to_string(it->second) + ")");
  // Lists may be empty ("never_fence =" fences every kind); scalars may not.
  const bool list = l.key == "never_fence" || l.key == "kinds" || l.key == "application" || l.key == "fatal";
  if (l.value.empty() && !list) return Fail(l, "missing value");
  return key->apply(l, &config_, sink_);
}

Status Parser::Header(size_t number, std::string_view name) {
  in_health_ = IsHealthSection(name);
  if (!in_health_) return Status::Ok();
  const auto [it, fresh] = seen_sections_.emplace(std::string(name), number);
  if (!fresh) {
    return Status::InvalidArgument("line " + std::to_string(number) + ": [" + Clip(name) +
                                   "]: section appears twice (first on line " + std::to_string(it->second) + ")");
  }
  section_ = std::string(name);
  sink_ = nullptr;
  if (name == "health") {
    keys_ = kHealthKeys;
  } else if (name == "health.xid") {
    keys_ = kXidKeys;
  } else if (name.substr(0, kWebhookPrefix.size()) == kWebhookPrefix) {
    const std::string_view sink = name.substr(kWebhookPrefix.size());
    if (!ValidSinkName(sink)) {
      return Status::InvalidArgument("line " + std::to_string(number) + ": [" + Clip(name) +
                                     "]: a webhook name is 1..64 of a-z, 0-9, - and _");
    }
    if (config_.webhooks.size() >= kMaxSinks) {
      return Status::InvalidArgument("line " + std::to_string(number) + ": [" + Clip(name) + "]: at most " +
                                     std::to_string(kMaxSinks) + " webhook sinks");
    }
    config_.webhooks.push_back(WebhookSinkConfig{.name = std::string(sink)});
    sink_lines_[std::string(sink)] = number;
    sink_ = &config_.webhooks.back();
    keys_ = kWebhookKeys;
  } else {
    return Status::InvalidArgument("line " + std::to_string(number) + ": [" + Clip(name) +
                                   "]: unknown section (known: health, health.xid, health.webhook.<name>)");
  }
  return Status::Ok();
}

// Checks across keys, once every line is read.
Result<HealthPolicyConfig> Parser::Finish() {
  for (int32_t code : config_.xid.application) {
    if (std::find(config_.xid.fatal.begin(), config_.xid.fatal.end(), code) != config_.xid.fatal.end()) {
      return Status::InvalidArgument("[health.xid]: XID " + std::to_string(code) +
                                     " is listed both as application and as fatal");
    }
  }
  for (const WebhookSinkConfig& sink : config_.webhooks) {
    const std::string where = "line " + std::to_string(sink_lines_[sink.name]) + ": [health.webhook." + sink.name + "]";
    if (sink.url.empty()) return Status::InvalidArgument(where + ": url is required");
    if (sink.backoff_max_ms < sink.backoff_initial_ms) {
      return Status::InvalidArgument(where + ": backoff_max_ms (" + std::to_string(sink.backoff_max_ms) +
                                     ") is less than backoff_initial_ms (" + std::to_string(sink.backoff_initial_ms) +
                                     ")");
    }
    // Issue 48: events name nodes, jobs and users; in clear text only when
    // someone said so.
    const bool tls = sink.url.rfind("https://", 0) == 0;
    if (!tls && !sink.insecure) {
      return Status::InvalidArgument(where + ": " + sink.url +
                                     " is plain http (unencrypted, anyone on the path reads and forges events); "
                                     "use https://, or set insecure = true to accept that");
    }
    if (tls && sink.insecure) {
      return Status::InvalidArgument(where + ": insecure = true is for http:// URLs only; an https:// receiver's "
                                     "certificate is always verified (ca_file for a private CA)");
    }
    if (!tls && !sink.ca_file.empty()) {
      return Status::InvalidArgument(where + ": ca_file is for https:// URLs only");
    }
  }
  return std::move(config_);
}

template <typename T, typename F>
std::string Join(const std::vector<T>& items, F name) {
  std::string out;
  for (const T& item : items) out += (out.empty() ? "" : ", ") + std::string(name(item));
  return out;
}

}  // namespace

std::string_view ToString(FenceAction a) {
  switch (a) {
    case FenceAction::kNone: return "none";
    case FenceAction::kCordon: return "cordon";
    case FenceAction::kDrain: return "drain";
  }
  return "none";
}

Result<FenceAction> FenceActionFromName(std::string_view name) {
  if (name == "none") return FenceAction::kNone;
  if (name == "cordon") return FenceAction::kCordon;
  if (name == "drain") return FenceAction::kDrain;
  return Status::InvalidArgument("'" + Clip(name) + "' is not one of cordon, drain, none");
}

Result<HttpUrl> ParseHttpUrl(std::string_view url) {
  HttpUrl out;
  std::string_view rest;
  if (url.substr(0, 8) == "https://") {
    out.tls = true;
    out.port = 443;
    rest = url.substr(8);
  } else if (url.substr(0, 7) == "http://") {
    rest = url.substr(7);
  } else {
    return Status::InvalidArgument("'" + Clip(url) + "' is not an https:// (or http://) URL");
  }
  if (rest.find_first_of("# \t") != std::string_view::npos) {
    return Status::InvalidArgument("'" + Clip(url) + "': a webhook URL has no spaces or #fragment");
  }
  const size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  out.path = slash == std::string_view::npos ? "/" : std::string(rest.substr(slash));
  if (authority.find('@') != std::string_view::npos) {
    return Status::InvalidArgument("'" + Clip(url) + "': user info in a webhook URL is not supported");
  }
  std::string_view port;
  if (!authority.empty() && authority.front() == '[') {  // [v6 address]:port
    const size_t close = authority.find(']');
    if (close == std::string_view::npos) return Status::InvalidArgument("'" + Clip(url) + "': unclosed [ in the host");
    out.host = std::string(authority.substr(1, close - 1));
    std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') return Status::InvalidArgument("'" + Clip(url) + "': junk after the host");
      port = after.substr(1);
      if (port.empty()) return Status::InvalidArgument("'" + Clip(url) + "': empty port");
    }
  } else {
    const size_t colon = authority.find(':');
    out.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) {
      port = authority.substr(colon + 1);
      if (port.empty()) return Status::InvalidArgument("'" + Clip(url) + "': empty port");
    }
  }
  if (out.host.empty()) return Status::InvalidArgument("'" + Clip(url) + "' has no host");
  if (!port.empty()) {
    int value = 0;
    const auto [ptr, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
    if (ec != std::errc() || ptr != port.data() + port.size() || value < 1 || value > 65535) {
      return Status::InvalidArgument("'" + Clip(url) + "': the port must be in 1..65535");
    }
    out.port = value;
  }
  return out;
}

Result<HealthPolicyConfig> ParseHealthPolicyConfig(std::string_view text) {
  if (text.size() > kMaxConfigBytes) {
    return Status::InvalidArgument("config is larger than " + std::to_string(kMaxConfigBytes) + " bytes");
  }
  Parser parser;
  size_t number = 1;
  for (size_t start = 0; start <= text.size(); ++number) {
    const size_t newline = std::min(text.find('\n', start), text.size());
    GPOOL_RETURN_IF_ERROR(parser.Line(number, text.substr(start, newline - start)));
    start = newline + 1;
  }
  return parser.Finish();
}

Result<HealthPolicyConfig> LoadHealthPolicyConfig(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int err = errno;
    if (err == ENOENT) return Status::NotFound("no scheduler config at " + path);
    return Status::IoError("open " + path + ": " + std::strerror(err));
  }
  std::string text(kMaxConfigBytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (in.bad()) return Status::IoError("read " + path);
  text.resize(static_cast<size_t>(in.gcount()));
  auto config = ParseHealthPolicyConfig(text);
  if (!config.ok()) return config.status().WithContext(path);
  return config;
}

std::string RenderHealthPolicyConfig(const HealthPolicyConfig& c) {
  auto ints = [](const std::vector<int32_t>& codes) { return Join(codes, [](int32_t x) { return std::to_string(x); }); };
  std::ostringstream out;
  // max_fenced_ppm as a 6-decimal fraction, exactly.
  std::string fraction = std::to_string(c.max_fenced_ppm / kPpm) + ".";
  std::string millionths = std::to_string(c.max_fenced_ppm % kPpm);
  fraction += std::string(6 - millionths.size(), '0') + millionths;
  out << "[health]\n"
      << "enabled = " << (c.enabled ? "true" : "false") << "\n"
      << "device_action = " << ToString(c.device_action) << "\n"
      << "node_action = " << ToString(c.node_action) << "\n"
      << "slow_action = " << ToString(c.slow_action) << "\n"
      << "fence_min_severity = " << ToString(c.fence_min_severity) << "\n"
      << "never_fence = " << Join(c.never_fence, [](HealthKind k) { return ToString(k); }) << "\n"
      << "drain_grace_ms = " << c.drain_grace_ms << "\n"
      << "uncordon_after_clear_rounds = " << c.uncordon_after_clear_rounds << "\n"
      << "exempt_label = " << c.exempt_label_key << "=" << c.exempt_label_value << "\n"
      << "max_fenced_fraction = " << fraction << "\n"
      << "breaker_window_ms = " << c.breaker_window_ms << "\n"
      << "min_nodes_for_breaker = " << c.min_nodes_for_breaker << "\n"
      << "\n[health.xid]\n"
      << "application = " << ints(c.xid.application) << "\n"
      << "fatal = " << ints(c.xid.fatal) << "\n";
  for (const WebhookSinkConfig& s : c.webhooks) {
    out << "\n[health.webhook." << s.name << "]\n"
        << "url = " << s.url << "\n"
        << "timeout_ms = " << s.timeout_ms << "\n"
        << "max_attempts = " << s.max_attempts << "\n"
        << "backoff_initial_ms = " << s.backoff_initial_ms << "\n"
        << "backoff_max_ms = " << s.backoff_max_ms << "\n"
        << "kinds = " << Join(s.kinds, [](EventKind k) { return ToString(k); }) << "\n"
        << "min_severity = " << ToString(s.min_severity) << "\n";
    if (s.insecure) out << "insecure = true\n";
    if (!s.ca_file.empty()) out << "ca_file = " << s.ca_file << "\n";
    if (!s.secret_file.empty()) out << "secret_file = " << s.secret_file << "\n";
  }
  return out.str();
}

}  // namespace gpool::health
