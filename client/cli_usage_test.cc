// `gpool usage`, `gpool invoice` and `gpool prices` against a FakeCluster:
// what they ask, what they print, the price file and the invoice arithmetic
// (totals equal usage x prices, exactly, in micro-units).
#include <filesystem>
#include <fstream>

#include "client/cli_test_fixture.h"
#include "client/invoice.h"
#include "client/price_file.h"
#include "client/usage_time.h"
#include "protocol/messages_usage.h"
#include "protocol/model/prices.h"

namespace gpool::client::testing {
namespace {

using cli::FormatMoney;
using cli::ParsePriceYaml;
using cli::ParseScaledDecimal;
using cli::ParseUsageTime;

constexpr uint64_t kGpuHour = 3'600'000'000;  // milli-GPU x ms

constexpr char kPrices[] = R"(currency: EUR
gpu_hour:
  A100: 2.50
  H100: 4
  default: 1.00
share_gpu_hour:
  A100: 2.00
pool_multiplier:
  exclusive: 1.3
class_multiplier:
  high: 1.5
cpu_core_hour: 0.01
memory_gib_hour: 0.002
)";

UsageRow Row(std::string user, std::string queue, std::string model, std::string pool, std::string klass,
             uint64_t gpu_mms, uint64_t share_mms = 0) {
  UsageRow row;
  row.user = std::move(user);
  row.queue = std::move(queue);
  row.model = std::move(model);
  row.pool = std::move(pool);
  row.priority_class = std::move(klass);
  row.gpu_mms = gpu_mms;
  row.share_gpu_mms = share_mms;
  row.records = 1;
  return row;
}

class UsageCliTest : public CliTest {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/gpool-usage-cli-" + std::to_string(getpid());
    std::filesystem::create_directories(dir_);
    std::ofstream(dir_ + "/prices.yaml") << kPrices;
    cluster_->usage.now_ms = 1'700'000'000'000;
    cluster_->usage.rows = {Row("alice", "ml", "A100", "public", "medium", 10 * kGpuHour),
                            Row("bob", "web", "H100", "exclusive", "high", 2 * kGpuHour),
                            Row("carol", "ml", "A100", "pooled", "medium", 3 * kGpuHour, 3 * kGpuHour)};
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_;
};

TEST_F(UsageCliTest, UsageSendsTheRangeAndDimensionAndPrintsATable) {
  ASSERT_EQ(Run({"usage", "--from", "2026-10-01", "--to", "2026-10-02T00:00:00Z", "--by", "queue", "--queue", "ml"}),
            0)
      << err_.str();
  ASSERT_EQ(cluster_->usage_requests.size(), 1u);
  const GetUsage& sent = cluster_->usage_requests[0];
  EXPECT_EQ(sent.from_ms, 1'790'812'800'000);  // 2026-10-01T00:00:00Z
  EXPECT_EQ(sent.to_ms, 1'790'812'800'000 + 86'400'000);
  EXPECT_EQ(sent.by, "queue");
  EXPECT_EQ(sent.queue, "ml");
  EXPECT_TRUE(sent.include_running);
  EXPECT_NE(out_.str().find("GPU-HOURS"), std::string::npos);
  EXPECT_NE(out_.str().find("10.000"), std::string::npos);
  EXPECT_NE(out_.str().find("TOTAL GPU-HOURS 15.000"), std::string::npos);
}

TEST_F(UsageCliTest, UsageCsvAndJson) {
  ASSERT_EQ(Run({"usage", "--from", "1790812800000", "--to", "1790816400000", "--csv", "--no-running"}), 0);
  EXPECT_FALSE(cluster_->usage_requests.back().include_running);
  EXPECT_EQ(out_.str().substr(0, out_.str().find('\n')),
            "user,gpu_hours,share_gpu_hours,running_gpu_hours,records,running,cpu_core_hours,memory_gib_hours,"
            "estimated,gpu_mms");
  EXPECT_NE(out_.str().find("alice,10.000,0.000,0.000,1,0,0.000,0.000,0,36000000000"), std::string::npos);
  ASSERT_EQ(Run({"--json", "usage", "--from", "2026-10-01", "--to", "2026-10-02"}), 0);
  EXPECT_NE(out_.str().find("\"gpu_mms\":36000000000"), std::string::npos) << out_.str();
}

TEST_F(UsageCliTest, BadTimesAndRangesAreRefusedBeforeAsking) {
  EXPECT_EQ(Run({"usage", "--from", "2026-13-01"}), kExitUsage);
  EXPECT_NE(err_.str().find("--from: expected a date"), std::string::npos) << err_.str();
  EXPECT_EQ(Run({"usage", "--from", "2026-10-02", "--to", "2026-10-01"}), kExitUsage);
  EXPECT_TRUE(cluster_->usage_requests.empty());
  EXPECT_EQ(*ParseUsageTime("--from", "2026-10-01T02:00:00+02:00"), 1'790'812'800'000);
  EXPECT_EQ(*ParseUsageTime("--from", "2026-10-01T00:00:00.250Z"), 1'790'812'800'250);
  EXPECT_FALSE(ParseUsageTime("--from", "2026-02-30").ok());
  EXPECT_FALSE(ParseUsageTime("--from", "2026-10-01T25:00:00Z").ok());
}

TEST_F(UsageCliTest, ThePriceFileIsReadExactly) {
  auto table = ParsePriceYaml(kPrices);
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  EXPECT_EQ(table->currency, "EUR");
  ASSERT_EQ(table->models.size(), 3u);
  EXPECT_EQ(table->models[0].model, "A100");
  EXPECT_EQ(table->models[0].gpu_hour_micro, 2'500'000);
  EXPECT_EQ(table->models[0].share_gpu_hour_micro, 2'000'000);
  EXPECT_EQ(table->models[1].gpu_hour_micro, 4'000'000);
  EXPECT_EQ(table->pool_permille.at("exclusive"), 1300u);
  EXPECT_EQ(table->memory_gib_hour_micro, 2000);
  EXPECT_EQ(*ParseScaledDecimal("x", "0.1", 6), 100'000);
  EXPECT_FALSE(ParseScaledDecimal("x", "0.1234567", 6).ok());
  EXPECT_FALSE(ParseScaledDecimal("x", "-1", 6).ok());
  EXPECT_FALSE(ParseScaledDecimal("x", "1e3", 6).ok());
  // A round trip through `prices show`'s YAML.
  auto again = ParsePriceYaml(cli::FormatPriceYaml(*table));
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->models[0].share_gpu_hour_micro, 2'000'000);
  const auto bad = ParsePriceYaml("currency: EUR\ngpu_hour: {A100: 2.5}\npool_multipler: {x: 1}\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("pool_multipler"), std::string::npos) << bad.status().ToString();
  EXPECT_FALSE(ParsePriceYaml("gpu_hour: {A100: cheap}\n").ok());
  EXPECT_FALSE(ParsePriceYaml("currency: EUR\n").ok());  // no gpu_hour
}

TEST_F(UsageCliTest, InvoiceTotalsAreUsageTimesPrices) {
  const PriceTable prices = *ParsePriceYaml(kPrices);
  GetUsageReply usage = cluster_->usage;
  usage.rows[0].cpu_core_ms = 7 * 3'600'000;  // 7 core-hours
  usage.rows[0].memory_mib_s = 3 * 1024 * 3600;  // 3 GiB-hours
  const cli::Invoice invoice = cli::PriceUsage(usage, prices, "2026-10");
  ASSERT_EQ(invoice.lines.size(), 3u);
  // alice: 10 A100-hours x 2.50 + 7 x 0.01 + 3 x 0.002.
  EXPECT_EQ(invoice.lines[0].user, "alice");
  EXPECT_EQ(invoice.lines[0].gpu_micro, 25'000'000);
  EXPECT_EQ(invoice.lines[0].cpu_micro, 70'000);
  EXPECT_EQ(invoice.lines[0].memory_micro, 6'000);
  // carol: 3 hours of A100 shares' compute at the share price.
  EXPECT_EQ(invoice.lines[1].user, "carol");
  EXPECT_EQ(invoice.lines[1].gpu_micro, 6'000'000);
  // bob: 2 H100-hours x 4 x 1.3 (exclusive) x 1.5 (high).
  EXPECT_EQ(invoice.lines[2].user, "bob");
  EXPECT_EQ(invoice.lines[2].gpu_micro, 15'600'000);
  EXPECT_EQ(invoice.total_micro, 25'076'000 + 6'000'000 + 15'600'000);
  int64_t by_queue = 0;
  for (const auto& [queue, micro] : cli::Subtotals(invoice, "queue")) by_queue += micro;
  EXPECT_EQ(by_queue, invoice.total_micro);
  EXPECT_EQ(FormatMoney(invoice.total_micro), "46.68");
}

TEST_F(UsageCliTest, InvoiceRoundsEachChargeOnceHalfUp) {
  PriceTable prices;
  prices.models = {ModelPrice{"A100", 1'000'000, 0}};  // 1 per GPU-hour: 1 micro is 3.6 ms of a GPU
  GetUsageReply usage;
  usage.rows = {Row("a", "q", "A100", "public", "medium", 1800), Row("b", "q", "A100", "public", "medium", 1799),
                Row("c", "q", "T4", "public", "medium", 5000)};
  const cli::Invoice invoice = cli::PriceUsage(usage, prices, "x");
  EXPECT_EQ(invoice.lines[0].gpu_micro, 1);  // 0.5 micro rounds up
  EXPECT_EQ(invoice.lines[1].gpu_micro, 0);
  EXPECT_TRUE(invoice.lines[2].unpriced);  // no T4 price and no default
  EXPECT_EQ(invoice.total_micro, 1);
}

TEST_F(UsageCliTest, InvoiceUsesTheCommittedTableOrAWhatIfFile) {
  EXPECT_EQ(Run({"invoice", "--month", "2026-10"}), kExitError);
  EXPECT_NE(err_.str().find("no price table"), std::string::npos) << err_.str();
  ASSERT_EQ(Run({"prices", "set", dir_ + "/prices.yaml"}), 0) << err_.str();
  ASSERT_TRUE(cluster_->prices.has_value());
  EXPECT_EQ(cluster_->prices->currency, "EUR");
  ASSERT_EQ(Run({"invoice", "--month", "2026-10", "--csv"}), 0) << err_.str();
  const GetUsage& sent = cluster_->usage_requests.back();
  EXPECT_EQ(sent.by, "detail");
  EXPECT_EQ(sent.from_ms, 1'790'812'800'000);
  EXPECT_EQ(sent.to_ms, 1'793'491'200'000);  // 2026-11-01
  EXPECT_NE(out_.str().find("TOTAL,,,,,15.000,,,,,,,,,,,46600000,46.60,"), std::string::npos) << out_.str();
  // What if H100s were cheaper: the file wins, the committed table stays.
  std::ofstream(dir_ + "/cheap.yaml") << "currency: EUR\ngpu_hour:\n  A100: 2.50\n  H100: 1\n";
  ASSERT_EQ(Run({"invoice", "--month", "2026-10", "--prices", dir_ + "/cheap.yaml"}), 0) << err_.str();
  EXPECT_NE(out_.str().find("TOTAL 34.50 EUR"), std::string::npos) << out_.str();
  EXPECT_EQ(Run({"invoice", "--month", "2026-13"}), 2);
  EXPECT_EQ(Run({"invoice", "--month", "2026-10", "--csv", "--html"}), kExitUsage);
}

TEST_F(UsageCliTest, InvoiceHtmlIsAPrintablePageWithEscapedNames) {
  cluster_->usage.rows.push_back(Row("<script>", "ml", "A100", "public", "medium", kGpuHour));
  cluster_->prices = *ParsePriceYaml(kPrices);
  const std::string path = dir_ + "/invoice.html";
  ASSERT_EQ(Run({"invoice", "--month", "2026-10", "--html", "-o", path}), 0) << err_.str();
  std::ifstream file(path);
  const std::string html((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(html.find("<style>"), std::string::npos);
  EXPECT_EQ(html.find("<script>"), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;"), std::string::npos);
  EXPECT_NE(html.find("id=\"by-queue\""), std::string::npos);
  EXPECT_NE(html.find("id=\"total\">49.10 EUR"), std::string::npos) << html;
  EXPECT_NE(out_.str().find("wrote " + path), std::string::npos);
}

TEST_F(UsageCliTest, PricesShowAndRefusals) {
  ASSERT_EQ(Run({"prices", "show"}), 0);
  EXPECT_EQ(out_.str(), "no price table is set (`gpool prices set FILE`)\n");
  EXPECT_EQ(Run({"prices", "set"}), kExitUsage);
  EXPECT_EQ(Run({"prices", "drop"}), kExitUsage);
  EXPECT_EQ(Run({"prices", "set", dir_ + "/missing.yaml"}), 2);
  EXPECT_FALSE(cluster_->prices.has_value());
  cluster_->prices = *ParsePriceYaml(kPrices);
  cluster_->prices->set_by = "root";
  ASSERT_EQ(Run({"prices", "show"}), 0);
  EXPECT_NE(out_.str().find("# set by root"), std::string::npos);
  EXPECT_NE(out_.str().find("  A100: 2.50\n"), std::string::npos) << out_.str();
}

// Issue 50: the billing rules of a price file, read exactly and shown back.
TEST_F(UsageCliTest, ThePriceFileReadsBillingRules) {
  const std::string yaml = std::string(kPrices) +
                           "min_period_minutes:\n  class: {high: 10}\n  queue: {web: 5}\n"
                           "off_peak: {from_hour: 22, to_hour: 6, multiplier: 0.6}\n"
                           "volume_discount:\n  - {gpu_hours: 1000, multiplier: 0.9}\n"
                           "  - {gpu_hours: 5000, multiplier: 0.8}\n";
  auto table = ParsePriceYaml(yaml);
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  EXPECT_EQ(table->billing.min_period_ms_by_class.at("high"), 600'000);
  EXPECT_EQ(table->billing.min_period_ms_by_queue.at("web"), 300'000);
  EXPECT_EQ(table->billing.off_peak, (OffPeakWindow{22, 6, 600}));
  EXPECT_EQ(table->billing.volume, (std::vector<VolumeTier>{{1000, 900}, {5000, 800}}));
  auto again = ParsePriceYaml(cli::FormatPriceYaml(*table));
  ASSERT_TRUE(again.ok()) << again.status().ToString() << cli::FormatPriceYaml(*table);
  EXPECT_EQ(again->billing, table->billing);
  struct Bad {
    std::string yaml, message;
  };
  for (const Bad& bad : std::vector<Bad>{
           {"off_peak: {from_hour: 22, to_hour: 25, multiplier: 0.5}\n", "off_peak: hours are 0-23"},
           {"off_peak: {from_hour: 22, to_hour: 6, multiplier: 1.5}\n", "off_peak.multiplier"},
           {"off_peak: {from_hour: 22, multiplier: 0.5}\n", "off_peak.to_hour"},
           {"volume_discount:\n  - {gpu_hours: 10, multiplier: 0.9}\n  - {gpu_hours: 5, multiplier: 0.8}\n",
            "ascending"},
           {"min_period_minutes:\n  class: {urgent: 5}\n", "min_period.class.urgent"},
           {"min_period_minutes:\n  clas: {high: 5}\n", "clas"},
       }) {
    auto parsed = ParsePriceYaml(std::string(kPrices) + bad.yaml);
    ASSERT_FALSE(parsed.ok()) << bad.yaml;
    EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument) << parsed.status().ToString();
    EXPECT_NE(parsed.status().message().find(bad.message), std::string::npos) << parsed.status().ToString();
  }
}

// Issue 50: the invoice shows each queue's bill (list, top-ups, discounts,
// charged, who paid) and the credit balances the coordinator reported.
TEST_F(UsageCliTest, InvoiceShowsDiscountsAndTheBalance) {
  cluster_->prices = *ParsePriceYaml(kPrices);
  BillingMonth ml{1'698'796'800'000, "ml", "ml", 13 * kGpuHour, 32'500'000, 1'000'000, 2'000'000, 500'000, 31'000'000};
  BillingMonth web{1'698'796'800'000, "web", "", 2 * kGpuHour, 8'000'000, 0, 0, 0, 8'000'000};
  cluster_->usage.billing = {ml, web};
  cluster_->usage.credits = {CreditAccount{"ml", 40'000'000, 31'000'000}};
  ASSERT_EQ(Run({"invoice", "--month", "2023-11"}), 0) << err_.str();
  const std::string text = out_.str();
  EXPECT_NE(text.find("QUEUE  LIST   MIN-PERIOD  OFF-PEAK  VOLUME  CHARGED  PAID BY"), std::string::npos) << text;
  EXPECT_NE(text.find("ml     32.50  +1.00       -2.00     -0.50   31.00    ml"), std::string::npos) << text;
  EXPECT_NE(text.find("web    8.00   +0.00       -0.00     -0.00   8.00     (no credit account)"), std::string::npos)
      << text;
  EXPECT_NE(text.find("CHARGED 39.00 EUR"), std::string::npos) << text;
  EXPECT_NE(text.find("ml       40.00     31.00    9.00"), std::string::npos) << text;
  ASSERT_EQ(Run({"invoice", "--month", "2023-11", "--csv"}), 0) << err_.str();
  EXPECT_NE(out_.str().find("BILLED,ml,ml,32500000,1000000,2000000,500000,31000000\n"), std::string::npos)
      << out_.str();
  EXPECT_NE(out_.str().find("CREDIT,ml,40000000,31000000,9000000\n"), std::string::npos) << out_.str();
  ASSERT_EQ(Run({"invoice", "--month", "2023-11", "--html"}), 0) << err_.str();
  EXPECT_NE(out_.str().find("<pre id=\"billing\">"), std::string::npos) << out_.str();
  EXPECT_NE(out_.str().find("(no credit account)"), std::string::npos) << out_.str();
}

// Issue 50: `gpool credit add|show`.
TEST_F(UsageCliTest, CreditAddAndShow) {
  QueueSummary ml;
  ml.spec.name = "ml";
  cluster_->queues["ml"] = ml;
  ASSERT_EQ(Run({"credit", "add", "ml", "250.5", "--note", "PO 4711"}), 0) << err_.str();
  ASSERT_EQ(cluster_->credit_requests.size(), 1u);
  const gpool::Credit sent = cluster_->credit_requests[0];
  EXPECT_EQ(sent.op, CreditOp::kAdd);
  EXPECT_EQ(sent.amount_micro, 250'500'000);
  EXPECT_EQ(sent.note, "PO 4711");
  EXPECT_FALSE(sent.idempotency_key.empty()) << "every add carries a key, so a re-send adds once";
  EXPECT_NE(out_.str().find("added 250.50 to the credit of queue ml"), std::string::npos) << out_.str();
  cluster_->credit_accounts["ml"].debited_micro = 300'000'000;
  ASSERT_EQ(Run({"credit", "show"}), 0) << err_.str();
  EXPECT_NE(out_.str().find("ml       250.50    300.00   -49.50   out of credit: admits no new work"),
            std::string::npos)
      << out_.str();
  const size_t sent_before = cluster_->credit_requests.size();
  EXPECT_EQ(Run({"credit", "add", "ml", "-5"}), kExitUsage);
  EXPECT_EQ(Run({"credit", "add", "ml", "0"}), kExitUsage);
  EXPECT_EQ(Run({"credit", "add", "ml"}), kExitUsage);
  EXPECT_EQ(Run({"credit", "take", "ml", "5"}), kExitUsage);
  EXPECT_EQ(cluster_->credit_requests.size(), sent_before) << "refused before anything is sent";
  EXPECT_EQ(Run({"credit", "add", "nowhere", "5"}), kExitNotFound);
}

}  // namespace
}  // namespace gpool::client::testing
