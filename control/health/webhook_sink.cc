#include "control/health/webhook_sink.h"
#include "protocol/event.h"
#include "protocol/health.h"

#include <httplib.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <fstream>
#include <sstream>
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

// The sink's HMAC key: the file's content without surrounding whitespace
// (an editor's newline is not part of the key).
Result<std::string> ReadWebhookSecret(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::IoError("cannot read secret_file " + path);
  std::ostringstream text;
  text << in.rdbuf();
  std::string secret = text.str();
  const size_t first = secret.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return Status::InvalidArgument("secret_file " + path + " is empty");
  secret = secret.substr(first, secret.find_last_not_of(" \t\r\n") - first + 1);
  if (secret.size() < 16) {
    return Status::InvalidArgument("secret_file " + path + " holds fewer than 16 bytes: too short a key to sign with");
  }
  struct stat st {};
  if (stat(path.c_str(), &st) == 0 && (st.st_mode & 077) != 0) {
    spdlog::warn("a webhook secret file is readable by others: make it 0600 path={} mode={:o}", path,
                 st.st_mode & 07777);
  }
  return secret;
}

// The URL as httplib::Client's scheme-host-port constructor takes it.
std::string SchemeHostPort(const HttpUrl& url) {
  const std::string host = url.host.find(':') != std::string::npos ? "[" + url.host + "]" : url.host;
  return std::string(url.tls ? "https://" : "http://") + host + ":" + std::to_string(url.port);
}

}  // namespace

std::string WebhookSignature(std::string_view secret, std::string_view timestamp, std::string_view body) {
  std::string signed_text;
  signed_text.reserve(timestamp.size() + 1 + body.size());
  signed_text.append(timestamp).append(".").append(body);
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
       reinterpret_cast<const unsigned char*>(signed_text.data()), signed_text.size(), mac, &length);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "sha256=";
  for (unsigned int i = 0; i < length; ++i) {
    out += kHex[mac[i] >> 4];
    out += kHex[mac[i] & 0xf];
  }
  return out;
}

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
  const std::string where = "webhook " + options.config.name;
  auto url = ParseHttpUrl(options.config.url);
  if (!url.ok()) return url.status().WithContext(where);
  if (!url->tls && !options.config.insecure) {
    return Status::InvalidArgument(where + ": " + options.config.url +
                                   " is plain http; use https://, or set insecure = true to accept that");
  }
  if (!url->tls) {
    spdlog::warn("webhook sink is plain http: events travel unencrypted sink={} url={}", options.config.name,
                 options.config.url);
  }
  if (!options.config.ca_file.empty() && access(options.config.ca_file.c_str(), R_OK) != 0) {
    return Status::IoError(where + ": cannot read ca_file " + options.config.ca_file);
  }
  std::string secret;
  if (!options.config.secret_file.empty()) {
    auto read = ReadWebhookSecret(options.config.secret_file);
    if (!read.ok()) return read.status().WithContext(where);
    secret = std::move(*read);
  }
  if (options.config.max_attempts == 0) options.config.max_attempts = 1;
  if (options.max_queue == 0) options.max_queue = 1;
  std::unique_ptr<WebhookSink> sink(new WebhookSink(std::move(options), std::move(*url), std::move(secret)));
  sink->thread_ = std::thread([s = sink.get()] { s->Run(); });
  return sink;
}

WebhookSink::WebhookSink(WebhookSinkOptions options, HttpUrl url, std::string secret)
    : options_(std::move(options)), url_(std::move(url)), secret_(std::move(secret)) {
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
  if (!secret_.empty()) {
    // Each attempt's own time: a receiver refusing old timestamps refuses a
    // replayed request, and a retry is not one.
    const std::string timestamp = std::to_string(std::time(nullptr));
    headers.emplace("X-Gpool-Timestamp", timestamp);
    headers.emplace("X-Gpool-Signature", WebhookSignature(secret_, timestamp, body));
  }
  auto result = client.Post(url_.path, headers, body, "application/json");
  if (!result) {
    // A refused certificate is an answer worth a line: it will not mend itself.
    if (result.error() == httplib::Error::SSLServerVerification || result.error() == httplib::Error::SSLConnection) {
      spdlog::warn("webhook TLS failed sink={} url={} error=\"{}\"", options_.config.name, options_.config.url,
                   httplib::to_string(result.error()));
    }
    return -1;
  }
  if (result->status >= 200 && result->status < 300) return 0;
  return result->status;
}

void WebhookSink::Run() {
  const WebhookSinkConfig& config = options_.config;
  httplib::Client client(SchemeHostPort(url_));
  if (url_.tls) {
    // Never unverified: a private CA is named with ca_file instead.
    client.enable_server_certificate_verification(true);
    if (!config.ca_file.empty()) client.set_ca_cert_path(config.ca_file);
  }
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
