#include "control/health/webhook_sink.h"
#include "protocol/event.h"
#include "protocol/health.h"

#include <httplib.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <nlohmann/json.hpp>
#include <utility>

namespace gpool::health {
namespace {

// Names here are unique within the health libraries (unity builds).
std::string Rfc3339Millis(int64_t ms) {
  const std::time_t seconds = static_cast<std::time_t>(ms >= 0 ? ms / 1000 : (ms - 999) / 1000);
  const int64_t millis = ms - static_cast<int64_t>(seconds) * 1000;
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char buffer[64];
  const size_t n = std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%S", &tm);
  char out[80];
  std::snprintf(out, sizeof out, "%.*s.%03dZ", static_cast<int>(n), buffer, static_cast<int>(millis));
  return out;
}

// A 4xx other than 408 (timeout) and 429 (slow down): the receiver refuses
// this event; sending it again will not change its mind.
bool Permanent(int status) { return status >= 400 && status < 500 && status != 408 && status != 429; }

}  // namespace

std::string_view WebhookStatus(std::string_view kind) {
  if (kind == "health-cleared" || kind == "node-ready" || kind == "node-uncordoned" ||
      kind == "health-breaker-closed") {
    return "resolved";
  }
  return "firing";
}

std::string DedupeKeyOf(const ClusterEvent& event) {
  if (!event.dedupe_key.empty()) return event.dedupe_key;
  return "gpool-event-" + std::to_string(event.seq);
}

bool WebhookWants(const WebhookSinkConfig& config, const ClusterEvent& event) {
  if (!config.kinds.empty()) {
    const auto kind = EventKindFromString(event.kind);
    if (!kind || std::find(config.kinds.begin(), config.kinds.end(), *kind) == config.kinds.end()) return false;
  }
  if (!event.severity.empty()) {
    const auto severity = HealthSeverityFromString(event.severity);
    if (severity && *severity < config.min_severity) return false;
  }
  return true;
}

int64_t WebhookBackoffMs(const WebhookSinkConfig& config, uint32_t failures) {
  int64_t wait = config.backoff_initial_ms;
  for (uint32_t i = 1; i < failures && wait < config.backoff_max_ms; ++i) wait *= 2;
  return std::min(wait, config.backoff_max_ms);
}

std::string WebhookPayload(const ClusterEvent& event, std::string_view sink) {
  nlohmann::json body = {
      {"dedupe_key", DedupeKeyOf(event)},
      {"status", WebhookStatus(event.kind)},
      {"kind", event.kind},
      {"node", event.node},
      {"job", nullptr},
      {"task", nullptr},
      {"attempt", nullptr},
      {"severity", event.severity},
      {"reason", event.reason},
      {"actor", event.actor},
      {"message", event.message},
      {"time", Rfc3339Millis(event.time_ms)},
      {"time_ms", event.time_ms},
      {"seq", event.seq},
      {"sink", sink},
  };
  if (event.job != 0) {
    body["job"] = event.job;
    body["task"] = event.task;
    body["attempt"] = event.attempt;
  }
  // Replace invalid UTF-8 (a worker's message) rather than throw.
  return body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

Result<std::unique_ptr<WebhookSink>> WebhookSink::Open(WebhookSinkOptions options) {
  auto url = ParseHttpUrl(options.config.url);
  if (!url.ok()) return url.status().WithContext("webhook " + options.config.name);
  if (options.config.max_attempts == 0) options.config.max_attempts = 1;
  if (options.max_queue == 0) options.max_queue = 1;
  std::unique_ptr<WebhookSink> sink(new WebhookSink(std::move(options), std::move(*url)));
  sink->thread_ = std::thread([s = sink.get()] { s->Run(); });
  return sink;
}

WebhookSink::WebhookSink(WebhookSinkOptions options, HttpUrl url)
    : options_(std::move(options)), url_(std::move(url)) {
  accepted_through_ = options_.start_after;
  stats_.cursor = options_.start_after;
}

WebhookSink::~WebhookSink() { Stop(); }

uint64_t WebhookSink::Offer(const std::vector<ClusterEvent>& events) {
  bool added = false;
  uint64_t through = 0;
  {
    std::lock_guard lock(mu_);
    for (const ClusterEvent& event : events) {
      if (stopping_ || queue_.size() >= options_.max_queue) break;
      if (event.seq <= accepted_through_) continue;
      queue_.push_back(event);
      accepted_through_ = event.seq;
      added = true;
    }
    through = accepted_through_;
  }
  if (added) wake_.notify_all();
  return through;
}

uint64_t WebhookSink::accepted_through() const {
  std::lock_guard lock(mu_);
  return accepted_through_;
}

uint64_t WebhookSink::cursor() const {
  std::lock_guard lock(mu_);
  return stats_.cursor;
}

WebhookSinkStats WebhookSink::stats() const {
  std::lock_guard lock(mu_);
  WebhookSinkStats out = stats_;
  out.queued = queue_.size();
  return out;
}

void WebhookSink::Stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    // Aborts a request in flight: httplib shuts its socket down.
    if (client_ != nullptr) client_->stop();
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

bool WebhookSink::WaitBackoff(int64_t ms) {
  std::unique_lock lock(mu_);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  wake_.wait_until(lock, deadline, [&] { return stopping_; });
  return !stopping_;
}

int WebhookSink::PostOnce(httplib::Client& client, const std::string& body, const std::string& dedupe_key,
                          uint32_t attempt) {
  httplib::Headers headers = {
      {"Idempotency-Key", dedupe_key},
      {"X-Gpool-Sink", options_.config.name},
      {"X-Gpool-Attempt", std::to_string(attempt)},
  };
  auto result = client.Post(url_.path, headers, body, "application/json");
  if (!result) return -1;
  if (result->status >= 200 && result->status < 300) return 0;
  return result->status;
}

void WebhookSink::Run() {
  const WebhookSinkConfig& config = options_.config;
  httplib::Client client(url_.host, url_.port);
  const auto timeout = std::chrono::milliseconds(config.timeout_ms);
  client.set_connection_timeout(timeout);
  client.set_read_timeout(timeout);
  client.set_write_timeout(timeout);
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    client_ = &client;
  }
  for (;;) {
    ClusterEvent event;
    {
      std::unique_lock lock(mu_);
      wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (stopping_) break;
      event = queue_.front();
    }
    enum class Outcome { kDelivered, kSkipped, kGivenUp, kStopped } outcome = Outcome::kSkipped;
    if (WebhookWants(config, event)) {
      const std::string body = WebhookPayload(event, config.name);
      const std::string key = DedupeKeyOf(event);
      for (uint32_t attempt = 1;; ++attempt) {
        const int status = PostOnce(client, body, key, attempt);
        {
          std::lock_guard lock(mu_);
          ++stats_.attempts;
          if (status != 0) ++stats_.failures;
          if (stopping_) {
            outcome = Outcome::kStopped;
            break;
          }
        }
        if (status == 0) {
          outcome = Outcome::kDelivered;
          break;
        }
        if (Permanent(status) || attempt >= config.max_attempts) {
          spdlog::warn("webhook {}: gave up on event seq={} kind={} key={} after {} attempt(s), last status {}",
                       config.name, event.seq, event.kind, key, attempt, status);
          outcome = Outcome::kGivenUp;
          break;
        }
        if (!WaitBackoff(WebhookBackoffMs(config, attempt))) {
          outcome = Outcome::kStopped;
          break;
        }
      }
    }
    if (outcome == Outcome::kStopped) break;
    uint64_t cursor = 0;
    {
      std::lock_guard lock(mu_);
      queue_.pop_front();
      stats_.cursor = std::max(stats_.cursor, event.seq);
      cursor = stats_.cursor;
      if (outcome == Outcome::kDelivered) ++stats_.delivered;
      if (outcome == Outcome::kSkipped) ++stats_.skipped;
      if (outcome == Outcome::kGivenUp) ++stats_.given_up;
      if (stopping_) break;  // Stop promises no callbacks after it returns
    }
    if (options_.on_cursor) options_.on_cursor(cursor);
  }
  std::lock_guard lock(mu_);
  client_ = nullptr;
}

}  // namespace gpool::health
