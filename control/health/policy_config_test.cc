#include "control/health/policy_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "control/scheduler/config.h"
#include "protocol/event.h"
#include "protocol/health.h"

namespace gpool::health {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr std::string_view kFullFile = R"(# a scheduler config with health sections
actions = enqueue, allocate

[nodeorder]
strategy = spread

[health]
enabled = true
device_action = drain
node_action = cordon
slow_action = cordon
fence_min_severity = degraded
never_fence = coordinator-unreachable, disk-low
drain_grace_ms = 5000
uncordon_after_clear_rounds = 5
exempt_label = team/canary = yes
max_fenced_fraction = 0.25
breaker_window_ms = 60000
min_nodes_for_breaker = 4

[health.xid]
application = 8, 11
fatal = 57

[reservation]
enabled = false

[health.webhook.pager]
url = http://127.0.0.1:9000/hooks/gpool
insecure = true
timeout_ms = 2000
max_attempts = 3
backoff_initial_ms = 100
backoff_max_ms = 1000
kinds = health-raised, health-cleared
min_severity = fatal

[health.webhook.chat]
url = https://chat.example
ca_file = /etc/gpool/chat-ca.pem
secret_file = /etc/gpool/chat.secret
)";

Result<HealthPolicyConfig> Parse(std::string_view text) { return ParseHealthPolicyConfig(text); }

std::string ErrorOf(std::string_view text) {
  auto config = Parse(text);
  EXPECT_FALSE(config.ok()) << text;
  return config.ok() ? "" : config.status().message();
}

TEST(HealthPolicyConfigTest, NoHealthSectionsGiveTheDocumentedDefaults) {
  for (std::string_view text : {std::string_view(""), std::string_view("actions = allocate\n[fairness]\ndrf = false\n")}) {
    auto config = Parse(text);
    ASSERT_TRUE(config.ok()) << config.status().ToString();
    const HealthPolicyConfig& c = *config;
    EXPECT_EQ(c, HealthPolicyConfig{});
    EXPECT_TRUE(c.enabled);
    EXPECT_EQ(c.device_action, FenceAction::kCordon);
    EXPECT_EQ(c.node_action, FenceAction::kCordon);
    EXPECT_EQ(c.slow_action, FenceAction::kNone);
    EXPECT_EQ(c.fence_min_severity, HealthSeverity::kFatal);
    EXPECT_THAT(c.never_fence, ElementsAre(HealthKind::kCoordinatorUnreachable));
    EXPECT_EQ(c.uncordon_after_clear_rounds, 3u);
    EXPECT_EQ(c.exempt_label_key, "health.gpool.io/exempt");
    EXPECT_EQ(c.exempt_label_value, "true");
    EXPECT_EQ(c.max_fenced_ppm, 100'000u);
    EXPECT_EQ(c.breaker_window_ms, 600'000);
    EXPECT_EQ(c.min_nodes_for_breaker, 10u);
    EXPECT_TRUE(c.webhooks.empty());
  }
}

TEST(HealthPolicyConfigTest, ReadsEverySettingAndSkipsTheSchedulersSections) {
  auto config = Parse(kFullFile);
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  const HealthPolicyConfig& c = *config;
  EXPECT_EQ(c.device_action, FenceAction::kDrain);
  EXPECT_EQ(c.node_action, FenceAction::kCordon);
  EXPECT_EQ(c.slow_action, FenceAction::kCordon);
  EXPECT_EQ(c.fence_min_severity, HealthSeverity::kDegraded);
  EXPECT_THAT(c.never_fence, ElementsAre(HealthKind::kCoordinatorUnreachable, HealthKind::kDiskLow));
  EXPECT_EQ(c.drain_grace_ms, 5000u);
  EXPECT_EQ(c.uncordon_after_clear_rounds, 5u);
  EXPECT_EQ(c.exempt_label_key, "team/canary");
  EXPECT_EQ(c.exempt_label_value, "yes");
  EXPECT_EQ(c.max_fenced_ppm, 250'000u);
  EXPECT_EQ(c.breaker_window_ms, 60'000);
  EXPECT_EQ(c.min_nodes_for_breaker, 4u);
  EXPECT_THAT(c.xid.application, ElementsAre(8, 11));
  EXPECT_THAT(c.xid.fatal, ElementsAre(57));
  ASSERT_EQ(c.webhooks.size(), 2u);
  const WebhookSinkConfig& pager = c.webhooks[0];
  EXPECT_EQ(pager.name, "pager");
  EXPECT_EQ(pager.url, "http://127.0.0.1:9000/hooks/gpool");
  EXPECT_EQ(pager.timeout_ms, 2000);
  EXPECT_EQ(pager.max_attempts, 3u);
  EXPECT_EQ(pager.backoff_initial_ms, 100);
  EXPECT_EQ(pager.backoff_max_ms, 1000);
  EXPECT_THAT(pager.kinds, ElementsAre(EventKind::kHealthRaised, EventKind::kHealthCleared));
  EXPECT_EQ(pager.min_severity, HealthSeverity::kFatal);
  EXPECT_TRUE(pager.insecure);
  EXPECT_EQ(c.webhooks[1].name, "chat");
  EXPECT_FALSE(c.webhooks[1].insecure);
  EXPECT_EQ(c.webhooks[1].ca_file, "/etc/gpool/chat-ca.pem");
  EXPECT_EQ(c.webhooks[1].secret_file, "/etc/gpool/chat.secret");
  EXPECT_EQ(c.webhooks[1].timeout_ms, WebhookSinkConfig{}.timeout_ms);
}

TEST(HealthPolicyConfigTest, TheSchedulerReadsTheSameFile) {
  auto scheduler = scheduler::ParseSchedulerConfig(kFullFile);
  ASSERT_TRUE(scheduler.ok()) << scheduler.status().ToString();
  EXPECT_EQ(scheduler->node_order.strategy, scheduler::Strategy::kSpread);
  EXPECT_FALSE(scheduler->reservation.enabled);  // a section after the health ones still counts
}

TEST(HealthPolicyConfigTest, RenderThenParseGivesTheSameConfig) {
  auto config = Parse(kFullFile);
  ASSERT_TRUE(config.ok());
  for (const HealthPolicyConfig& c : {HealthPolicyConfig{}, *config}) {
    const std::string text = RenderHealthPolicyConfig(c);
    auto again = Parse(text);
    ASSERT_TRUE(again.ok()) << again.status().ToString() << "\n" << text;
    EXPECT_EQ(*again, c) << text;
  }
}

TEST(HealthPolicyConfigTest, FractionsAndPercentagesAreExact) {
  struct Case {
    std::string_view value;
    uint32_t ppm;
  };
  for (const Case& c : {Case{"0.10", 100'000}, Case{"0.1", 100'000}, Case{"1", 1'000'000}, Case{"0", 0},
                        Case{"10%", 100'000}, Case{"2.5%", 25'000}, Case{"0.000001", 1}, Case{"100%", 1'000'000}}) {
    auto config = Parse("[health]\nmax_fenced_fraction = " + std::string(c.value) + "\n");
    ASSERT_TRUE(config.ok()) << c.value << ": " << config.status().ToString();
    EXPECT_EQ(config->max_fenced_ppm, c.ppm) << c.value;
  }
  for (std::string_view bad : {"1.5", "110%", "-0.1", ".5", "0.", "ten", "0.1234567", "1e-1"}) {
    EXPECT_THAT(ErrorOf("[health]\nmax_fenced_fraction = " + std::string(bad) + "\n"), HasSubstr("max_fenced_fraction"))
        << bad;
  }
}

TEST(HealthPolicyConfigTest, BadInputIsRefusedWithTheLineAndReason) {
  EXPECT_EQ(ErrorOf("[health]\ndevice_action = fence\n"),
            "line 2: [health] device_action: 'fence' is not one of cordon, drain, none");
  EXPECT_THAT(ErrorOf("\n[health]\nfrobnicate = 1\n"), HasSubstr("line 3: [health] frobnicate: unknown key (known: "));
  EXPECT_THAT(ErrorOf("[health]\nenabled = yes\n"), HasSubstr("is not true or false"));
  EXPECT_THAT(ErrorOf("[health]\nuncordon_after_clear_rounds = -1\n"), HasSubstr("must be in 0..1000000"));
  EXPECT_THAT(ErrorOf("[health]\nbreaker_window_ms = 0\n"), HasSubstr("line 2: [health] breaker_window_ms"));
  EXPECT_THAT(ErrorOf("[health]\nenabled = true\nenabled = false\n"), HasSubstr("line 3: [health] enabled: set twice (first on line 2)"));
  EXPECT_THAT(ErrorOf("[health]\n[health]\n"), HasSubstr("line 2: [health]: section appears twice (first on line 1)"));
  EXPECT_THAT(ErrorOf("[health.policy]\n"), HasSubstr("unknown section"));
  EXPECT_THAT(ErrorOf("[health]\nnever_fence = xid, bogus\n"), HasSubstr("unknown health condition kind 'bogus'"));
  EXPECT_THAT(ErrorOf("[health]\nnever_fence = xid, xid\n"), HasSubstr("listed twice"));
  EXPECT_THAT(ErrorOf("[health]\nfence_min_severity = critical\n"), HasSubstr("not one of warning, degraded, fatal"));
  EXPECT_THAT(ErrorOf("[health]\nexempt_label = novalue\n"), HasSubstr("is not key=value"));
  EXPECT_THAT(ErrorOf("[health]\ndrain_grace_ms =\n"), HasSubstr("missing value"));
  EXPECT_THAT(ErrorOf("[health]\nenabled\n"), HasSubstr("expected key = value"));
  EXPECT_THAT(ErrorOf("[health.xid]\napplication = 13, x\n"), HasSubstr("'x' is not a whole number"));
  EXPECT_THAT(ErrorOf("[health.xid]\napplication = 13,,31\n"), HasSubstr("entry 2 is empty"));
  EXPECT_EQ(ErrorOf("[health.xid]\napplication = 48\nfatal = 48\n"),
            "[health.xid]: XID 48 is listed both as application and as fatal");
  EXPECT_THAT(ErrorOf("[health.webhook.Pager]\nurl = http://x\n"), HasSubstr("a webhook name is 1..64 of a-z"));
  EXPECT_EQ(ErrorOf("[health.webhook.pager]\ntimeout_ms = 10\n"), "line 1: [health.webhook.pager]: url is required");
  // Issue 48: plain http only when marked insecure; insecure and ca_file only where they mean something.
  EXPECT_THAT(ErrorOf("[health.webhook.pager]\nurl = http://alerts.example/x\n"),
              HasSubstr("is plain http (unencrypted, anyone on the path reads and forges events); use https://, or "
                        "set insecure = true"));
  EXPECT_THAT(ErrorOf("[health.webhook.pager]\nurl = https://alerts.example/x\ninsecure = true\n"),
              HasSubstr("insecure = true is for http:// URLs only"));
  EXPECT_THAT(ErrorOf("[health.webhook.pager]\nurl = http://x\ninsecure = true\nca_file = /ca.pem\n"),
              HasSubstr("ca_file is for https:// URLs only"));
  EXPECT_THAT(ErrorOf("[health.webhook.pager]\nurl = https://x\nsecret_file = relative\n"),
              HasSubstr("an absolute path"));
  EXPECT_THAT(ErrorOf("[health.webhook.pager]\nurl = http://alerts.example:99999/x\n"), HasSubstr("port must be in 1..65535"));
  EXPECT_THAT(ErrorOf("[health.webhook.pager]\nurl = http://x\nbackoff_initial_ms = 100\nbackoff_max_ms = 10\n"),
              HasSubstr("backoff_max_ms (10) is less than backoff_initial_ms (100)"));
  EXPECT_THAT(ErrorOf("[health.webhook.pager]\nurl = http://x\nkinds = health-raised, nope\n"),
              HasSubstr("unknown event kind 'nope'"));
  EXPECT_THAT(ErrorOf("[health.webhook.pager]\nurl = http://x\nmax_attempts = 0\n"), HasSubstr("max_attempts"));
}

TEST(HealthPolicyConfigTest, EmptyListsAreAllowedWhereTheyMeanSomething) {
  auto config = Parse("[health]\nnever_fence =\n[health.xid]\napplication =\n");
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_TRUE(config->never_fence.empty());
  EXPECT_TRUE(config->xid.application.empty());
}

TEST(HttpUrlTest, ParsesHostPortAndPath) {
  auto url = ParseHttpUrl("http://127.0.0.1:8080/a/b?c=d");
  ASSERT_TRUE(url.ok());
  EXPECT_EQ(url->host, "127.0.0.1");
  EXPECT_EQ(url->port, 8080);
  EXPECT_EQ(url->path, "/a/b?c=d");
  url = ParseHttpUrl("http://alerts.example");
  ASSERT_TRUE(url.ok());
  EXPECT_EQ(url->host, "alerts.example");
  EXPECT_EQ(url->port, 80);
  EXPECT_EQ(url->path, "/");
  EXPECT_FALSE(url->tls);
  url = ParseHttpUrl("https://alerts.example/hook");
  ASSERT_TRUE(url.ok());
  EXPECT_TRUE(url->tls);
  EXPECT_EQ(url->port, 443);
  EXPECT_EQ(url->path, "/hook");
  url = ParseHttpUrl("http://[::1]:9000/x");
  ASSERT_TRUE(url.ok());
  EXPECT_EQ(url->host, "::1");
  EXPECT_EQ(url->port, 9000);
  for (std::string_view bad : {"ftp://x", "http://", "http://:80/", "http://u@h/", "http://h:/", "http://h/#frag",
                               "http://[::1/", "http://h:0/"}) {
    EXPECT_FALSE(ParseHttpUrl(bad).ok()) << bad;
  }
}

}  // namespace
}  // namespace gpool::health
