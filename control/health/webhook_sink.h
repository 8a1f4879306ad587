// WebhookSink: delivers the committed cluster event stream (protocol/event.h)
// to one HTTP receiver, at least once, in order.
//
// Only the leader runs sinks. It opens one per configured receiver
// (policy_config.h, [health.webhook.<name>]) with start_after = the sink's
// committed cursor (SinkCursorCmd in the state), and every loop turn offers
// what the stream holds past accepted_through():
//
//     sink->Offer(state.EventsAfter(sink->accepted_through(), 256));
//
// The sink POSTs each event as JSON (WebhookPayload) on its own thread, one
// event at a time in seq order: an event is retried with exponential backoff
// (backoff_initial_ms doubling up to backoff_max_ms) until the receiver
// answers 2xx, or given up after max_attempts (or at once on a 4xx other than
// 408 and 429: the receiver refuses it); a given-up event is logged and
// counted, and the sink moves on. Events the sink's filter (kinds,
// min_severity) does not want are passed over without a request. Each time
// the cursor (the highest seq done, in order) advances, on_cursor is called on
// the sink's thread; the leader proposes it as the sink's committed cursor
// (it may coalesce: committing any value up to cursor() is safe). A new
// leader resumes after the committed cursor, so an event may be sent twice
// but never skipped while the stream still holds it; a repeat carries the
// same dedupe key (DedupeKeyOf), so receivers drop it.
//
// Issue 48: https:// receivers are verified against the system's CAs or the
// sink's ca_file (never unverified); http:// needs insecure = true and is
// warned about. With a secret_file, each request is signed (WebhookSignature):
// X-Gpool-Timestamp (unix seconds of the attempt) and X-Gpool-Signature
// (sha256=<hex>) over timestamp "." body, so a receiver checks who sent it
// and, by the timestamp, refuses a replay.
//
// Stop() (or destruction) ends delivery: it aborts a request in flight and a
// backoff wait, joins the thread, and calls on_cursor no more. Call it when
// leadership is lost. The event being delivered stays undone: the next leader
// sends it again.
//
// Thread rules: Offer, accepted_through, cursor, stats and Stop may be called
// from any one thread (the coordinator's loop); on_cursor runs on the sink's
// thread and must not call Stop or destroy the sink.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "control/health/policy_config.h"
#include "protocol/base/status.h"
#include "protocol/event.h"

namespace httplib {
class Client;
}

namespace gpool::health {

struct WebhookSinkOptions {
  WebhookSinkConfig config;
  // The committed cursor: events with seq at or below it are never sent.
  uint64_t start_after = 0;
  // Called on the sink's thread with the new cursor whenever it advances.
  std::function<void(uint64_t cursor)> on_cursor;
  // Events held at most; Offer takes no more until some are done.
  size_t max_queue = 4096;
};

struct WebhookSinkStats {
  uint64_t delivered = 0;  // acknowledged with 2xx
  uint64_t skipped = 0;    // not wanted by the filter
  uint64_t given_up = 0;   // failed max_attempts times, or refused with a 4xx
  uint64_t attempts = 0;   // requests sent
  uint64_t failures = 0;   // requests that failed (no answer, or not 2xx)
  uint64_t cursor = 0;
  size_t queued = 0;
};

class WebhookSink {
 public:
  // Starts the sink's thread. InvalidArgument for a URL ParseHttpUrl refuses
  // or an http:// one not marked insecure; IoError or InvalidArgument for a
  // secret_file or ca_file that cannot be read.
  static Result<std::unique_ptr<WebhookSink>> Open(WebhookSinkOptions options);
  ~WebhookSink();
  WebhookSink(const WebhookSink&) = delete;
  WebhookSink& operator=(const WebhookSink&) = delete;

  // Queues the events (in seq order) whose seq is above accepted_through(),
  // while there is room; the rest are ignored, to be offered again. Never
  // waits for the network. Returns accepted_through() after.
  uint64_t Offer(const std::vector<ClusterEvent>& events);
  // The highest seq queued or done (start_after at first).
  uint64_t accepted_through() const;
  // The highest seq done in order (delivered, skipped or given up).
  uint64_t cursor() const;
  WebhookSinkStats stats() const;
  const std::string& name() const { return options_.config.name; }

  // Ends delivery and joins the thread; idempotent.
  void Stop();

 private:
  WebhookSink(WebhookSinkOptions options, HttpUrl url, std::string secret);
  void Run();
  // One POST; 0 when acknowledged, the HTTP status otherwise (-1: no answer).
  int PostOnce(httplib::Client& client, const std::string& body, const std::string& dedupe_key, uint32_t attempt);
  // Waits until the deadline or Stop; false when stopped.
  bool WaitBackoff(int64_t ms);

  const WebhookSinkOptions options_;
  const HttpUrl url_;
  const std::string secret_;  // the HMAC key; empty: requests are not signed
  mutable std::mutex mu_;
  std::condition_variable wake_;
  std::deque<ClusterEvent> queue_;  // guarded by mu_
  uint64_t accepted_through_ = 0;   // guarded by mu_
  WebhookSinkStats stats_;          // guarded by mu_
  bool stopping_ = false;           // guarded by mu_
  httplib::Client* client_ = nullptr;  // guarded by mu_; the thread's client, for Stop to abort
  std::thread thread_;
};

// --- The payload (pure; tested without sockets) -----------------------------

// "resolved" for notices that something is over (health-cleared, node-ready,
// node-uncordoned, health-breaker-closed); "firing" for everything else.
std::string_view WebhookStatus(std::string_view event_kind);
// The event's dedupe_key, or "gpool-event-<seq>" for an event without one.
std::string DedupeKeyOf(const ClusterEvent& event);
// Whether the sink's filter wants the event.
bool WebhookWants(const WebhookSinkConfig& config, const ClusterEvent& event);
// "sha256=" and the lowercase hex HMAC-SHA256 under `secret` of
// timestamp + "." + body: what X-Gpool-Signature carries.
std::string WebhookSignature(std::string_view secret, std::string_view timestamp, std::string_view body);
// The wait after the `failures`-th failed attempt (1-based).
int64_t WebhookBackoffMs(const WebhookSinkConfig& config, uint32_t failures);
// The JSON body: {"dedupe_key", "status", "kind", "node", "job", "task",
// "attempt", "severity", "reason", "actor", "message", "time", "time_ms",
// "seq", "sink"}; job/task/attempt are null when the event is not about a
// job, time is RFC 3339 UTC with milliseconds.
std::string WebhookPayload(const ClusterEvent& event, std::string_view sink);

}  // namespace gpool::health
