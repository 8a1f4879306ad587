#include "client/invoice.h"

#include <algorithm>
#include <cstdio>
#include <map>

#include "client/format.h"
#include "client/usage_time.h"
#include "protocol/messages_usage.h"
#include "protocol/model/prices.h"

namespace gpool::cli {
namespace {

using Wide = unsigned __int128;

constexpr uint64_t kMmsPerGpuHour = 3'600'000'000;  // 1000 milli-GPUs x 3.6e6 ms

// num / den rounded half up (num, den > 0 fit: see invoice.h for the bounds).
int64_t RoundDiv(Wide num, Wide den) { return static_cast<int64_t>((num + den / 2) / den); }

uint64_t PermilleOf(const std::map<std::string, uint64_t>& table, const std::string& name) {
  auto it = table.find(name);
  return it == table.end() ? 1000 : it->second;
}

const ModelPrice* PriceOf(const PriceTable& prices, const std::string& model) {
  const ModelPrice* fallback = nullptr;
  for (const auto& price : prices.models) {
    if (price.model == model) return &price;
    if (price.model == "default") fallback = &price;
  }
  return fallback;
}

std::string CsvCell(const std::string& text) {
  if (text.find_first_of(",\"\n\r") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string Html(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

}  // namespace

std::string BillingText(const Invoice& invoice) {
  std::string out;
  if (!invoice.billing.empty()) {
    // A queue may have rows of two months when the range spans them; one line per queue.
    std::map<std::string, BillingMonth> by_queue;
    for (const auto& b : invoice.billing) {
      BillingMonth& sum = by_queue[b.queue];
      sum.queue = b.queue;
      sum.account = b.account;
      sum.list_micro += b.list_micro;
      sum.min_topup_micro += b.min_topup_micro;
      sum.off_peak_discount_micro += b.off_peak_discount_micro;
      sum.volume_discount_micro += b.volume_discount_micro;
      sum.charged_micro += b.charged_micro;
    }
    Table table({"QUEUE", "LIST", "MIN-PERIOD", "OFF-PEAK", "VOLUME", "CHARGED", "PAID BY"});
    int64_t charged = 0;
    for (const auto& [queue, b] : by_queue) {
      table.AddRow({queue, FormatMoney(b.list_micro), "+" + FormatMoney(b.min_topup_micro),
                    "-" + FormatMoney(b.off_peak_discount_micro), "-" + FormatMoney(b.volume_discount_micro),
                    FormatMoney(b.charged_micro), b.account.empty() ? "(no credit account)" : b.account});
      charged += b.charged_micro;
    }
    out += "\nBilled (minimum periods and discounts, at the prices in force as usage accrued):\n" + table.Render() +
           "CHARGED " + FormatMoney(charged) + " " + invoice.currency + "\n";
  }
  if (!invoice.credits.empty()) {
    Table table({"ACCOUNT", "CREDITED", "DEBITED", "BALANCE"});
    for (const auto& c : invoice.credits) {
      table.AddRow({c.queue, FormatMoney(c.credited_micro), FormatMoney(c.debited_micro), FormatMoney(c.balance_micro())});
    }
    out += "\nCredit balances (now):\n" + table.Render();
  }
  return out;
}

Invoice PriceUsage(const GetUsageReply& detail, const PriceTable& prices, std::string title) {
  Invoice invoice;
  invoice.title = std::move(title);
  invoice.from_ms = detail.from_ms;
  invoice.to_ms = detail.to_ms;
  invoice.now_ms = detail.now_ms;
  invoice.currency = prices.currency;
  for (const auto& row : detail.rows) {
    InvoiceLine line{row.queue, row.user, row.model, row.pool, row.priority_class};
    line.gpu_mms = row.gpu_mms;
    line.share_gpu_mms = std::min(row.share_gpu_mms, row.gpu_mms);
    line.cpu_core_ms = row.cpu_core_ms;
    line.memory_mib_s = row.memory_mib_s;
    line.records = row.records;
    line.running = row.running;
    const uint64_t multiplier = PermilleOf(prices.pool_permille, row.pool) * PermilleOf(prices.class_permille, row.priority_class);
    line.multiplier_permille = multiplier / 1000;
    const ModelPrice* price = row.gpu_mms == 0 ? nullptr : PriceOf(prices, row.model);
    line.unpriced = row.gpu_mms != 0 && price == nullptr;
    if (price != nullptr) {
      line.gpu_hour_micro = price->gpu_hour_micro;
      const int64_t share_price = price->share_gpu_hour_micro != 0 ? price->share_gpu_hour_micro : price->gpu_hour_micro;
      const Wide gpu = Wide{line.gpu_mms - line.share_gpu_mms} * static_cast<uint64_t>(price->gpu_hour_micro) +
                       Wide{line.share_gpu_mms} * static_cast<uint64_t>(share_price);
      line.gpu_micro = RoundDiv(gpu * multiplier, Wide{kMmsPerGpuHour} * 1'000'000);
    }
    line.cpu_micro = RoundDiv(Wide{line.cpu_core_ms} * static_cast<uint64_t>(prices.cpu_core_hour_micro) * multiplier,
                              Wide{3'600'000} * 1'000'000);
    line.memory_micro =
        RoundDiv(Wide{line.memory_mib_s} * static_cast<uint64_t>(prices.memory_gib_hour_micro) * multiplier,
                 Wide{1024 * 3600} * 1'000'000);
    line.total_micro = line.gpu_micro + line.cpu_micro + line.memory_micro;
    invoice.total_micro += line.total_micro;
    invoice.gpu_mms += line.gpu_mms;
    invoice.includes_running |= line.running != 0;
    invoice.lines.push_back(std::move(line));
  }
  invoice.billing = detail.billing;
  invoice.credits = detail.credits;
  std::sort(invoice.lines.begin(), invoice.lines.end(), [](const InvoiceLine& a, const InvoiceLine& b) {
    return std::tie(a.queue, a.user, a.model, a.pool, a.priority_class) <
           std::tie(b.queue, b.user, b.model, b.pool, b.priority_class);
  });
  return invoice;
}

std::vector<std::pair<std::string, int64_t>> Subtotals(const Invoice& invoice, std::string_view by) {
  std::map<std::string, int64_t> sums;
  for (const auto& line : invoice.lines) {
    const std::string& key = by == "queue" ? line.queue : by == "user" ? line.user : line.model;
    sums[key] += line.total_micro;
  }
  return {sums.begin(), sums.end()};
}

std::string FormatMoney(int64_t micro) {
  const bool negative = micro < 0;
  const uint64_t cents = ((negative ? 0 - static_cast<uint64_t>(micro) : static_cast<uint64_t>(micro)) + 5'000) / 10'000;
  char text[40];
  std::snprintf(text, sizeof(text), "%s%llu.%02llu", negative ? "-" : "", static_cast<unsigned long long>(cents / 100),
                static_cast<unsigned long long>(cents % 100));
  return text;
}

std::string FormatGpuHours(uint64_t gpu_mms) {
  const uint64_t milli_hours = (gpu_mms + kMmsPerGpuHour / 2000) / (kMmsPerGpuHour / 1000);
  char text[40];
  std::snprintf(text, sizeof(text), "%llu.%03llu", static_cast<unsigned long long>(milli_hours / 1000),
                static_cast<unsigned long long>(milli_hours % 1000));
  return text;
}

std::string InvoiceCsv(const Invoice& invoice) {
  std::string out =
      "queue,user,model,pool,class,gpu_hours,share_gpu_hours,cpu_core_hours,memory_gib_hours,records,running,"
      "gpu_hour_price_micro,multiplier_permille,gpu_micro,cpu_micro,memory_micro,total_micro,total," +
      CsvCell(invoice.currency) + "\n";
  for (const auto& l : invoice.lines) {
    char hours[96];
    std::snprintf(hours, sizeof(hours), "%.6f,%.6f", static_cast<double>(l.cpu_core_ms) / 3.6e6,
                  static_cast<double>(l.memory_mib_s) / (1024.0 * 3600.0));
    out += CsvCell(l.queue) + "," + CsvCell(l.user) + "," + CsvCell(l.model) + "," + CsvCell(l.pool) + "," +
           CsvCell(l.priority_class) + "," + FormatGpuHours(l.gpu_mms) + "," + FormatGpuHours(l.share_gpu_mms) + "," +
           hours + "," + std::to_string(l.records) + "," + std::to_string(l.running) + "," +
           (l.unpriced ? std::string("unpriced") : std::to_string(l.gpu_hour_micro)) + "," +
           std::to_string(l.multiplier_permille) + "," + std::to_string(l.gpu_micro) + "," +
           std::to_string(l.cpu_micro) + "," + std::to_string(l.memory_micro) + "," + std::to_string(l.total_micro) +
           "," + FormatMoney(l.total_micro) + ",\n";
  }
  out += "TOTAL,,,,," + FormatGpuHours(invoice.gpu_mms) + ",,,,,,,,,,," + std::to_string(invoice.total_micro) + "," +
         FormatMoney(invoice.total_micro) + ",\n";
  // Issue 50: the billed figures, in micro-units, after the usage lines.
  if (!invoice.billing.empty()) {
    out += "billing_queue,account,list_micro,min_topup_micro,off_peak_discount_micro,volume_discount_micro,"
           "charged_micro\n";
    for (const auto& b : invoice.billing) {
      out += "BILLED," + CsvCell(b.queue) + "," + CsvCell(b.account) + "," + std::to_string(b.list_micro) + "," +
             std::to_string(b.min_topup_micro) + "," + std::to_string(b.off_peak_discount_micro) + "," +
             std::to_string(b.volume_discount_micro) + "," + std::to_string(b.charged_micro) + "\n";
    }
  }
  for (const auto& c : invoice.credits) {
    out += "CREDIT," + CsvCell(c.queue) + "," + std::to_string(c.credited_micro) + "," +
           std::to_string(c.debited_micro) + "," + std::to_string(c.balance_micro()) + "\n";
  }
  return out;
}

std::string InvoiceText(const Invoice& invoice) {
  std::string out = "Invoice " + invoice.title + " (" + FormatUtc(invoice.from_ms) + " to " + FormatUtc(invoice.to_ms) +
                    "), " + invoice.currency + "\n\n";
  Table table({"QUEUE", "USER", "MODEL", "POOL", "CLASS", "GPU-HOURS", "AMOUNT"});
  for (const auto& l : invoice.lines) {
    table.AddRow({l.queue, l.user, l.model.empty() ? "-" : l.model, l.pool, l.priority_class,
                  FormatGpuHours(l.gpu_mms), l.unpriced ? "unpriced" : FormatMoney(l.total_micro)});
  }
  out += table.Render() + "\n";
  Table queues({"QUEUE", "SUBTOTAL"});
  for (const auto& [queue, micro] : Subtotals(invoice, "queue")) queues.AddRow({queue, FormatMoney(micro)});
  out += queues.Render() + "\nTOTAL " + FormatMoney(invoice.total_micro) + " " + invoice.currency + "\n";
  if (invoice.includes_running) out += "(includes tasks still running, counted up to " + FormatUtc(invoice.now_ms) + ")\n";
  out += BillingText(invoice);
  return out;
}

std::string InvoiceHtml(const Invoice& invoice) {
  const std::string currency = Html(invoice.currency);
  std::string out =
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>gpool invoice " +
      Html(invoice.title) +
      "</title>\n<style>\n"
      "body{font-family:system-ui,sans-serif;margin:2em;color:#111}\n"
      "h1{font-size:1.4em;margin-bottom:0}.sub{color:#555;margin-top:.2em}\n"
      "table{border-collapse:collapse;margin:1em 0;width:100%}\n"
      "th,td{border-bottom:1px solid #ccc;padding:.3em .6em;text-align:left}\n"
      "td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}\n"
      "tfoot td{font-weight:bold;border-top:2px solid #111}\n"
      ".totals{display:flex;gap:2em}.totals table{width:auto}\n"
      "@media print{body{margin:0}a{color:inherit}}\n"
      "</style></head><body>\n<h1>GPU usage invoice " +
      Html(invoice.title) + "</h1>\n<p class=\"sub\">" + Html(FormatUtc(invoice.from_ms)) + " to " +
      Html(FormatUtc(invoice.to_ms)) + " &middot; amounts in " + currency + "</p>\n";
  out += "<table id=\"lines\"><thead><tr><th>Queue</th><th>User</th><th>Model</th><th>Pool</th><th>Class</th>"
         "<th class=\"n\">GPU-hours</th><th class=\"n\">Price/GPU-h</th><th class=\"n\">Multiplier</th>"
         "<th class=\"n\">GPU</th><th class=\"n\">CPU</th><th class=\"n\">Memory</th><th class=\"n\">Amount</th>"
         "</tr></thead><tbody>\n";
  for (const auto& l : invoice.lines) {
    out += "<tr><td>" + Html(l.queue) + "</td><td>" + Html(l.user) + "</td><td>" + Html(l.model) + "</td><td>" +
           Html(l.pool) + "</td><td>" + Html(l.priority_class) + "</td><td class=\"n\">" + FormatGpuHours(l.gpu_mms) +
           "</td><td class=\"n\">" + (l.unpriced ? std::string("unpriced") : FormatMoney(l.gpu_hour_micro)) +
           "</td><td class=\"n\">" + std::to_string(l.multiplier_permille / 1000) + "." +
           std::to_string(l.multiplier_permille % 1000 + 1000).substr(1) + "</td><td class=\"n\">" +
           FormatMoney(l.gpu_micro) + "</td><td class=\"n\">" + FormatMoney(l.cpu_micro) + "</td><td class=\"n\">" +
           FormatMoney(l.memory_micro) + "</td><td class=\"n\">" + FormatMoney(l.total_micro) + "</td></tr>\n";
  }
  out += "</tbody><tfoot><tr><td colspan=\"5\">Total</td><td class=\"n\">" + FormatGpuHours(invoice.gpu_mms) +
         "</td><td colspan=\"5\"></td><td class=\"n\" id=\"total\">" + FormatMoney(invoice.total_micro) + " " +
         currency + "</td></tr></tfoot></table>\n<div class=\"totals\">\n";
  for (const auto& [by, heading] : {std::pair{"queue", "Queue"}, std::pair{"user", "User"}, std::pair{"model", "Model"}}) {
    out += "<table id=\"by-" + std::string(by) + "\"><thead><tr><th>" + heading +
           "</th><th class=\"n\">Amount</th></tr></thead><tbody>\n";
    for (const auto& [name, micro] : Subtotals(invoice, by)) {
      out += "<tr><td>" + Html(name.empty() ? "-" : name) + "</td><td class=\"n\">" + FormatMoney(micro) + "</td></tr>\n";
    }
    out += "</tbody></table>\n";
  }
  out += "</div>\n";
  // Issue 50: the billed figures and balances, as the terminal shows them.
  if (const std::string billed = BillingText(invoice); !billed.empty()) {
    out += "<pre id=\"billing\">" + Html(billed) + "</pre>\n";
  }
  out += "<p class=\"sub\">Each charge is rounded once to a millionth of the currency; totals are sums of "
         "the lines.";
  if (invoice.includes_running) out += " Includes tasks still running, counted up to " + Html(FormatUtc(invoice.now_ms)) + ".";
  out += "</p>\n</body></html>\n";
  return out;
}

}  // namespace gpool::cli
