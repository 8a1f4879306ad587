#include "control/health/webhook_sink.h"
#include "protocol/event.h"
#include "protocol/health.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

namespace gpool::health {
namespace {

using ::testing::ElementsAre;

// Deadlines are generous ceilings for a loaded, sanitized build; every wait
// returns as soon as its condition holds.
constexpr auto kDeadline = std::chrono::seconds(30);

ClusterEvent Event(uint64_t seq, std::string kind = "health-raised", std::string severity = "fatal") {
  ClusterEvent e;
  e.seq = seq;
  e.time_ms = 1'793'000'000'000 + static_cast<int64_t>(seq);
  e.kind = std::move(kind);
  e.node = "node-" + std::to_string(seq % 3);
  e.severity = std::move(severity);
  e.reason = "xid@gpu/0";
  e.actor = "worker";
  e.message = "event " + std::to_string(seq);
  e.dedupe_key = "key-" + std::to_string(seq);
  return e;
}

// A webhook receiver on 127.0.0.1: fails the first `fail_first` requests for
// each seq with `fail_status`, records every request it sees.
class Receiver {
 public:
  Receiver() {
    server_.Post("/hook", [this](const httplib::Request& req, httplib::Response& res) {
      const auto body = nlohmann::json::parse(req.body);
      std::lock_guard lock(mu_);
      const uint64_t seq = body["seq"].get<uint64_t>();
      const int seen = ++attempts_[seq];
      requests_.push_back(body);
      idempotency_keys_.push_back(req.get_header_value("Idempotency-Key"));
      if (seen <= fail_first_) {
        res.status = fail_status_;
      } else {
        res.status = 200;
        if (acked_.empty() || acked_.back() != seq) acked_.push_back(seq);
      }
      changed_.notify_all();
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~Receiver() {
    server_.stop();
    thread_.join();
  }

  void FailFirst(int n, int status = 503) {
    std::lock_guard lock(mu_);
    fail_first_ = n;
    fail_status_ = status;
  }
  std::string Url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/hook"; }

  // Waits until pred() holds (under the lock); false at the deadline.
  template <typename Pred>
  bool WaitFor(Pred pred) {
    std::unique_lock lock(mu_);
    return changed_.wait_for(lock, kDeadline, [&] { return pred(); });
  }

  std::mutex mu_;
  std::condition_variable changed_;
  std::map<uint64_t, int> attempts_;          // seq -> requests seen
  std::vector<uint64_t> acked_;               // seqs answered 200, in order (a repeat in a row counted once)
  std::vector<nlohmann::json> requests_;
  std::vector<std::string> idempotency_keys_;

 private:
  httplib::Server server_;
  int port_ = 0;
  int fail_first_ = 0;
  int fail_status_ = 503;
  std::thread thread_;
};

// The cursor as on_cursor reports it, with a wait.
struct CursorLog {
  std::mutex mu;
  std::condition_variable changed;
  std::vector<uint64_t> values;
  std::function<void(uint64_t)> Callback() {
    return [this](uint64_t c) {
      std::lock_guard lock(mu);
      values.push_back(c);
      changed.notify_all();
    };
  }
  bool WaitFor(uint64_t cursor) {
    std::unique_lock lock(mu);
    return changed.wait_for(lock, kDeadline, [&] { return !values.empty() && values.back() >= cursor; });
  }
};

WebhookSinkConfig Config(const Receiver& receiver) {
  WebhookSinkConfig c;
  c.name = "test";
  c.url = receiver.Url();
  c.timeout_ms = 5000;
  c.max_attempts = 5;
  c.backoff_initial_ms = 1;
  c.backoff_max_ms = 4;
  c.insecure = true;  // the test receiver is plain http
  return c;
}

TEST(WebhookPayloadTest, CarriesTheEventWithAStatusAndTheDedupeKey) {
  ClusterEvent e = Event(7);
  e.job = 42;
  e.task = 3;
  e.attempt = 2;
  e.time_ms = 1'700'000'000'123;
  const auto body = nlohmann::json::parse(WebhookPayload(e, "pager"));
  EXPECT_EQ(body["dedupe_key"], "key-7");
  EXPECT_EQ(body["status"], "firing");
  EXPECT_EQ(body["kind"], "health-raised");
  EXPECT_EQ(body["node"], "node-1");
  EXPECT_EQ(body["job"], 42);
  EXPECT_EQ(body["task"], 3);
  EXPECT_EQ(body["attempt"], 2);
  EXPECT_EQ(body["severity"], "fatal");
  EXPECT_EQ(body["reason"], "xid@gpu/0");
  EXPECT_EQ(body["message"], "event 7");
  EXPECT_EQ(body["time"], "2023-11-14T22:13:20.123Z");
  EXPECT_EQ(body["seq"], 7);
  EXPECT_EQ(body["sink"], "pager");
  e.job = 0;
  e.kind = "health-cleared";
  e.dedupe_key.clear();
  const auto cleared = nlohmann::json::parse(WebhookPayload(e, "pager"));
  EXPECT_EQ(cleared["status"], "resolved");
  EXPECT_TRUE(cleared["job"].is_null());
  EXPECT_EQ(cleared["dedupe_key"], "gpool-event-7");
  for (std::string_view kind : {"node-ready", "node-uncordoned", "health-breaker-closed"}) {
    EXPECT_EQ(WebhookStatus(kind), "resolved") << kind;
  }
  for (std::string_view kind : {"node-lost", "node-cordoned", "task-lost", "health-breaker-open"}) {
    EXPECT_EQ(WebhookStatus(kind), "firing") << kind;
  }
}

TEST(WebhookPayloadTest, FilterAndBackoff) {
  WebhookSinkConfig c;
  c.kinds = {EventKind::kHealthRaised};
  c.min_severity = HealthSeverity::kDegraded;
  EXPECT_TRUE(WebhookWants(c, Event(1, "health-raised", "fatal")));
  EXPECT_FALSE(WebhookWants(c, Event(1, "health-raised", "warning")));
  EXPECT_FALSE(WebhookWants(c, Event(1, "node-lost", "")));
  c.kinds.clear();
  EXPECT_TRUE(WebhookWants(c, Event(1, "node-lost", "")));  // no severity: always passes
  c.backoff_initial_ms = 100;
  c.backoff_max_ms = 1000;
  EXPECT_EQ(WebhookBackoffMs(c, 1), 100);
  EXPECT_EQ(WebhookBackoffMs(c, 2), 200);
  EXPECT_EQ(WebhookBackoffMs(c, 4), 800);
  EXPECT_EQ(WebhookBackoffMs(c, 5), 1000);
  EXPECT_EQ(WebhookBackoffMs(c, 500), 1000);
}

TEST(WebhookSinkTest, DeliversInOrderAndAdvancesTheCursor) {
  Receiver receiver;
  CursorLog cursor;
  auto sink = WebhookSink::Open({.config = Config(receiver), .on_cursor = cursor.Callback()});
  ASSERT_TRUE(sink.ok()) << sink.status().ToString();
  std::vector<ClusterEvent> events;
  for (uint64_t seq = 1; seq <= 5; ++seq) events.push_back(Event(seq));
  EXPECT_EQ((*sink)->Offer(events), 5u);
  EXPECT_EQ((*sink)->Offer(events), 5u);  // offered again: ignored
  ASSERT_TRUE(cursor.WaitFor(5));
  EXPECT_EQ((*sink)->cursor(), 5u);
  std::lock_guard lock(receiver.mu_);
  EXPECT_THAT(receiver.acked_, ElementsAre(1, 2, 3, 4, 5));
  EXPECT_EQ(receiver.requests_.size(), 5u);
  EXPECT_EQ(receiver.idempotency_keys_[0], "key-1");
  const auto stats = (*sink)->stats();
  EXPECT_EQ(stats.delivered, 5u);
  EXPECT_EQ(stats.failures, 0u);
}

TEST(WebhookSinkTest, RetriesUntilTheReceiverAcceptsWithTheSameDedupeKey) {
  Receiver receiver;
  receiver.FailFirst(2);  // every event: two 503s, then 200
  CursorLog cursor;
  auto sink = WebhookSink::Open({.config = Config(receiver), .on_cursor = cursor.Callback()});
  ASSERT_TRUE(sink.ok());
  (*sink)->Offer({Event(1), Event(2), Event(3)});
  ASSERT_TRUE(cursor.WaitFor(3));
  std::lock_guard lock(receiver.mu_);
  EXPECT_THAT(receiver.acked_, ElementsAre(1, 2, 3));
  ASSERT_EQ(receiver.requests_.size(), 9u);
  for (size_t i = 0; i < receiver.requests_.size(); ++i) {
    // In order: all of event 1's attempts before event 2's.
    const uint64_t seq = receiver.requests_[i]["seq"].get<uint64_t>();
    EXPECT_EQ(seq, i / 3 + 1);
    EXPECT_EQ(receiver.requests_[i]["dedupe_key"], "key-" + std::to_string(seq));
    EXPECT_EQ(receiver.idempotency_keys_[i], "key-" + std::to_string(seq));
  }
  const auto stats = (*sink)->stats();
  EXPECT_EQ(stats.delivered, 3u);
  EXPECT_EQ(stats.failures, 6u);
  EXPECT_EQ(stats.given_up, 0u);
}

TEST(WebhookSinkTest, GivesUpAfterMaxAttemptsAndMovesOn) {
  Receiver receiver;
  receiver.FailFirst(3);
  WebhookSinkConfig config = Config(receiver);
  config.max_attempts = 2;  // event 1 fails twice: given up; so does 2 ...
  CursorLog cursor;
  auto sink = WebhookSink::Open({.config = config, .on_cursor = cursor.Callback()});
  ASSERT_TRUE(sink.ok());
  (*sink)->Offer({Event(1), Event(2)});
  ASSERT_TRUE(cursor.WaitFor(2));
  const auto stats = (*sink)->stats();
  EXPECT_EQ(stats.given_up, 2u);
  EXPECT_EQ(stats.attempts, 4u);
  EXPECT_EQ(stats.cursor, 2u);
}

TEST(WebhookSinkTest, ARefusalIsGivenUpAtOnce) {
  Receiver receiver;
  receiver.FailFirst(100, 400);
  CursorLog cursor;
  auto sink = WebhookSink::Open({.config = Config(receiver), .on_cursor = cursor.Callback()});
  ASSERT_TRUE(sink.ok());
  (*sink)->Offer({Event(1)});
  ASSERT_TRUE(cursor.WaitFor(1));
  EXPECT_EQ((*sink)->stats().attempts, 1u);
  EXPECT_EQ((*sink)->stats().given_up, 1u);
}

TEST(WebhookSinkTest, FilteredEventsMoveTheCursorWithoutARequest) {
  Receiver receiver;
  WebhookSinkConfig config = Config(receiver);
  config.kinds = {EventKind::kHealthCleared};
  CursorLog cursor;
  auto sink = WebhookSink::Open({.config = config, .on_cursor = cursor.Callback()});
  ASSERT_TRUE(sink.ok());
  (*sink)->Offer({Event(1), Event(2, "health-cleared"), Event(3)});
  ASSERT_TRUE(cursor.WaitFor(3));
  std::lock_guard lock(receiver.mu_);
  EXPECT_THAT(receiver.acked_, ElementsAre(2));
  EXPECT_EQ((*sink)->stats().skipped, 2u);
}

TEST(WebhookSinkTest, ANewLeaderResumesFromTheCommittedCursorAndRepeatsKeepTheirKeys) {
  Receiver receiver;
  std::vector<ClusterEvent> stream;
  for (uint64_t seq = 1; seq <= 6; ++seq) stream.push_back(Event(seq, seq % 2 ? "health-raised" : "health-cleared"));
  uint64_t committed = 0;
  {
    // The old leader delivers 1..4 but commits its cursor only at 2.
    CursorLog cursor;
    auto sink = WebhookSink::Open({.config = Config(receiver), .on_cursor = cursor.Callback()});
    ASSERT_TRUE(sink.ok());
    (*sink)->Offer({stream.begin(), stream.begin() + 4});
    ASSERT_TRUE(cursor.WaitFor(4));
    committed = 2;
    (*sink)->Stop();
  }
  // The new leader resumes after the committed cursor with the whole stream.
  CursorLog cursor;
  auto sink = WebhookSink::Open({.config = Config(receiver), .start_after = committed, .on_cursor = cursor.Callback()});
  ASSERT_TRUE(sink.ok());
  EXPECT_EQ((*sink)->accepted_through(), committed);
  (*sink)->Offer(stream);
  ASSERT_TRUE(cursor.WaitFor(6));
  std::lock_guard lock(receiver.mu_);
  // Every event arrived at least once; 3 and 4 twice, with the same key each time.
  for (uint64_t seq = 1; seq <= 6; ++seq) EXPECT_GE(receiver.attempts_[seq], 1) << seq;
  EXPECT_EQ(receiver.attempts_[1], 1);
  EXPECT_EQ(receiver.attempts_[3], 2);
  EXPECT_EQ(receiver.attempts_[4], 2);
  std::map<uint64_t, std::string> key_of;
  for (const auto& body : receiver.requests_) {
    const uint64_t seq = body["seq"].get<uint64_t>();
    auto [it, fresh] = key_of.emplace(seq, body["dedupe_key"].get<std::string>());
    EXPECT_EQ(it->second, body["dedupe_key"].get<std::string>()) << seq;
  }
}

TEST(WebhookSinkTest, StopEndsARetryingSinkWithoutMovingTheCursor) {
  Receiver receiver;
  receiver.FailFirst(1'000'000);
  WebhookSinkConfig config = Config(receiver);
  config.max_attempts = 1000;
  config.backoff_initial_ms = 3'600'000;  // the sink would wait an hour before its second attempt
  config.backoff_max_ms = 3'600'000;
  std::atomic<int> callbacks{0};
  auto sink = WebhookSink::Open({.config = config, .on_cursor = [&](uint64_t) { ++callbacks; }});
  ASSERT_TRUE(sink.ok());
  (*sink)->Offer({Event(1), Event(2)});
  ASSERT_TRUE(receiver.WaitFor([&] { return receiver.attempts_[1] >= 1; }));
  (*sink)->Stop();  // returns: the backoff wait is cut short and the thread joined
  (*sink)->Stop();  // idempotent
  EXPECT_EQ((*sink)->cursor(), 0u);
  EXPECT_EQ(callbacks.load(), 0);
  EXPECT_EQ((*sink)->stats().given_up, 0u);
  EXPECT_EQ((*sink)->Offer({Event(3)}), 2u);  // a stopped sink takes nothing more
}

TEST(WebhookSinkTest, OpenRefusesABadUrl) {
  WebhookSinkConfig config;
  config.name = "bad";
  config.url = "ftp://alerts.example/x";
  EXPECT_FALSE(WebhookSink::Open({.config = config}).ok());
  // Issue 48: plain http only when marked insecure.
  config.url = "http://alerts.example/x";
  auto plain = WebhookSink::Open({.config = config});
  EXPECT_EQ(plain.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(plain.status().message().find("set insecure = true"), std::string::npos) << plain.status().message();
  config.url = "https://alerts.example/x";
  config.secret_file = "/nonexistent/gpool-secret";
  EXPECT_EQ(WebhookSink::Open({.config = config}).status().code(), StatusCode::kIoError);
}

// A known answer (Python: hmac.new(b"Jefe", b'1700000000.{"a":1}', sha256)).
TEST(WebhookPayloadTest, TheSignatureIsHmacSha256OfTimestampDotBody) {
  EXPECT_EQ(WebhookSignature("Jefe", "1700000000", R"({"a":1})"),
            "sha256=fa5f6481efc59da48b19c9dc10196c9953e5651f8304b3a318b6b87d70272e0a");
}

}  // namespace
}  // namespace gpool::health
