// HealthPolicyConfig: the health policy's settings (policy.h) and the
// webhook sinks (webhook_sink.h), read from the [health] sections of the
// scheduler config file (control/scheduler/config.h has the file format:
// `key = value` lines under `[section]` headers, # comments).
//
// The coordinator reads the file at start and again on SIGHUP; a file whose
// health sections do not parse or validate is refused whole, with the line
// and reason, and the running configuration stays. Every setting has a
// default, so a file without [health] sections gives the default policy.
// The scheduler's own parser skips these sections; this parser skips all the
// others, so both read the same file.
//
//   [health]
//   enabled = true                    # false: conditions are recorded, nothing is fenced or lifted
//   device_action = cordon            # fatal GPU condition: the GPU is marked unhealthy, and the node: cordon | drain | none
//   node_action = cordon              # fatal node-level condition (ib-port-down, fabricmanager-down, gpu-lost, ...)
//   slow_action = none                # a `slow` condition (gpool probe): cordon | drain | none
//   fence_min_severity = fatal        # conditions at least this bad fence: fatal | degraded | warning
//   never_fence = coordinator-unreachable   # kinds recorded but never fenced (comma list, may be empty)
//   drain_grace_ms = 30000            # a drained task's stop grace
//   uncordon_after_clear_rounds = 3   # health-check rounds clear before a health cordon is lifted; 0: never
//   exempt_label = health.gpool.io/exempt=true   # nodes with this admin label are never fenced
//   max_fenced_fraction = 0.10        # circuit breaker: at most this share of nodes fenced per window
//   breaker_window_ms = 600000
//   min_nodes_for_breaker = 10        # smaller clusters have no breaker
//
//   [health.xid]
//   application = 8, 11               # also treated as application errors (never fence)
//   fatal = 57                        # also treated as fatal
//
//   [health.webhook.pager]            # one section per sink; the name is the sink's
//   url = http://alerts.example:9000/gpool
//   timeout_ms = 5000
//   max_attempts = 8                  # then the event is given up (logged, counted)
//   backoff_initial_ms = 500
//   backoff_max_ms = 30000
//   kinds = health-raised, health-cleared, node-cordoned   # empty or absent: every kind
//   min_severity = warning            # events carrying a lower severity are skipped
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "control/health/xid_catalogue.h"
#include "protocol/base/status.h"
#include "protocol/event.h"
#include "protocol/health.h"

namespace gpool::health {

// What a fence does to the node (the GPU itself is marked unhealthy for a
// device condition whatever this says):
//   cordon  no new work is placed on it; running tasks go on
//   drain   cordon, and its running tasks are stopped with drain_grace_ms and requeued
//   none    the node is left in service
enum class FenceAction : uint8_t { kNone, kCordon, kDrain };
std::string_view ToString(FenceAction a);
Result<FenceAction> FenceActionFromName(std::string_view name);

// One webhook receiver. Events go out as JSON POSTs in stream order, each
// retried with exponential backoff until it is acknowledged (2xx) or
// max_attempts have failed.
struct WebhookSinkConfig {
  std::string name;  // from the section header; [a-z0-9_-], at most 64 bytes
  std::string url;   // https://host[:port][/path]; http:// only with insecure
  // Issue 48: plain http:// sends events unencrypted and unsigned-for-all-a-
  // listener-knows; allowed only when the sink says so (warned at start).
  bool insecure = false;
  // PEM file of the CA(s) the receiver's certificate must chain to (a
  // private CA); empty: the system's trust store. Verification is never off.
  std::string ca_file;
  // File holding the sink's HMAC-SHA256 key (surrounding whitespace
  // trimmed): each request then carries X-Gpool-Timestamp and
  // X-Gpool-Signature: sha256=<hex of HMAC(key, timestamp + "." + body)>.
  // In a file, not in this config: the config is often a ConfigMap.
  std::string secret_file;
  int64_t timeout_ms = 5'000;          // connect, send and receive, each
  uint32_t max_attempts = 8;           // >= 1
  int64_t backoff_initial_ms = 500;    // the wait after the first failure; doubled after each
  int64_t backoff_max_ms = 30'000;     // the longest wait
  std::vector<EventKind> kinds;        // empty: every kind
  HealthSeverity min_severity = HealthSeverity::kWarning;  // events with no severity always pass
  bool operator==(const WebhookSinkConfig&) const = default;
};

struct HealthPolicyConfig {
  bool enabled = true;
  FenceAction device_action = FenceAction::kCordon;
  FenceAction node_action = FenceAction::kCordon;
  FenceAction slow_action = FenceAction::kNone;
  HealthSeverity fence_min_severity = HealthSeverity::kFatal;
  std::vector<HealthKind> never_fence = {HealthKind::kCoordinatorUnreachable};
  uint32_t drain_grace_ms = 30'000;
  uint32_t uncordon_after_clear_rounds = 3;
  std::string exempt_label_key = "health.gpool.io/exempt";
  std::string exempt_label_value = "true";
  // The breaker's share, in parts per million (0.10 -> 100000), so the
  // comparison is exact integer arithmetic.
  uint32_t max_fenced_ppm = 100'000;
  int64_t breaker_window_ms = 600'000;
  uint32_t min_nodes_for_breaker = 10;
  XidOverrides xid;
  std::vector<WebhookSinkConfig> webhooks;  // in file order
  bool operator==(const HealthPolicyConfig&) const = default;
};

// Parses the [health], [health.xid] and [health.webhook.<name>] sections of
// a scheduler config file and ignores every other section. Errors name the
// line: "line 12: [health] device_action: 'fence' is not one of cordon,
// drain, none".
Result<HealthPolicyConfig> ParseHealthPolicyConfig(std::string_view text);
// NotFound when there is no file (the caller then uses the defaults).
Result<HealthPolicyConfig> LoadHealthPolicyConfig(const std::string& path);
// The configuration in the file format; parsing it gives the same config.
std::string RenderHealthPolicyConfig(const HealthPolicyConfig& config);

// The parsed parts of a webhook URL.
struct HttpUrl {
  bool tls = false;  // https://
  std::string host;
  int port = 80;     // 443 for https:// without a port
  std::string path = "/";
};
// http:// and https:// URLs (no user info, no fragment); a port in 1..65535.
Result<HttpUrl> ParseHttpUrl(std::string_view url);

}  // namespace gpool::health
