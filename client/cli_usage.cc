// `gpool usage`, `gpool invoice` and `gpool prices` (issue 34): reports of
// the committed usage records (and running work up to now) summed by one
// dimension, an invoice of a month priced by the committed price table (or a
// what-if file), and showing or setting that table.
#include "client/cli_internal.h"

#include <cstdio>
#include <fstream>

#include "client/format.h"
#include "client/invoice.h"
#include "client/price_file.h"
#include "client/usage_time.h"
#include "protocol/messages_usage.h"
#include "protocol/model/prices.h"

namespace gpool::cli {
namespace {

void UsageOptions(cxxopts::Options& o) {
  o.add_options("usage")
      ("from", "start: a date (2026-10-01), RFC 3339 time or ms since 1970 (default: the first of this month, UTC)",
       cxxopts::value<std::string>(), "TIME")
      ("to", "end, exclusive (default: now); both are rounded out to whole hours", cxxopts::value<std::string>(), "TIME")
      ("by", "sum by user, queue, model, pool, job, class or detail (default user)",
       cxxopts::value<std::string>()->default_value("user"), "DIM")
      ("queue", "only this queue and the queues below it", cxxopts::value<std::string>(), "Q")
      ("no-running", "leave out tasks still running (default: counted up to now)",
       cxxopts::value<bool>()->default_value("false"))
      ("csv", "print CSV", cxxopts::value<bool>()->default_value("false"));
}

// The row's key cells for `by`.
std::vector<std::string> KeyCells(const UsageRow& row, const std::string& by) {
  if (by == "user") return {row.user};
  if (by == "queue") return {row.queue};
  if (by == "model") return {row.model.empty() ? "-" : row.model};
  if (by == "pool") return {row.pool};
  if (by == "class") return {row.priority_class};
  if (by == "job") return {std::to_string(row.job), row.user, row.queue};
  return {row.user, row.queue, row.pool, row.model.empty() ? "-" : row.model, row.priority_class};
}

std::vector<std::string> KeyHeader(const std::string& by) {
  if (by == "job") return {"JOB", "USER", "QUEUE"};
  if (by == "detail") return {"USER", "QUEUE", "POOL", "MODEL", "CLASS"};
  std::string upper = by;
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return {upper};
}

std::string Hours(uint64_t value, double per_hour) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.3f", static_cast<double>(value) / per_hour);
  return text;
}

std::vector<std::string> FigureCells(const UsageRow& row) {
  return {FormatGpuHours(row.gpu_mms), FormatGpuHours(row.share_gpu_mms), FormatGpuHours(row.running_gpu_mms),
          std::to_string(row.records), std::to_string(row.running), Hours(row.cpu_core_ms, 3.6e6),
          Hours(row.memory_mib_s, 1024.0 * 3600.0), std::to_string(row.estimated)};
}

std::string UsageCsv(const GetUsageReply& reply) {
  std::string out;
  auto join = [&](const std::vector<std::string>& cells) {
    for (size_t i = 0; i < cells.size(); ++i) out += (i ? "," : "") + cells[i];
    out += "\n";
  };
  std::vector<std::string> header = KeyHeader(reply.by);
  for (auto& h : header) {
    for (char& c : h) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  for (const char* h : {"gpu_hours", "share_gpu_hours", "running_gpu_hours", "records", "running", "cpu_core_hours",
                        "memory_gib_hours", "estimated", "gpu_mms"}) {
    header.push_back(h);
  }
  join(header);
  for (const auto& row : reply.rows) {
    std::vector<std::string> cells = KeyCells(row, reply.by);
    for (auto& cell : cells) {
      if (cell.find_first_of(",\"\n") != std::string::npos) cell = "\"" + cell + "\"";
    }
    for (auto& cell : FigureCells(row)) cells.push_back(std::move(cell));
    cells.push_back(std::to_string(row.gpu_mms));
    join(cells);
  }
  return out;
}

std::string UsageTable(const GetUsageReply& reply) {
  std::vector<std::string> header = KeyHeader(reply.by);
  for (const char* h : {"GPU-HOURS", "SHARE-GPU-H", "RUNNING-GPU-H", "RECORDS", "RUNNING", "CPU-CORE-H", "MEM-GIB-H",
                        "ESTIMATED"}) {
    header.push_back(h);
  }
  Table table(header);
  uint64_t total = 0;
  for (const auto& row : reply.rows) {
    std::vector<std::string> cells = KeyCells(row, reply.by);
    for (auto& cell : FigureCells(row)) cells.push_back(std::move(cell));
    table.AddRow(std::move(cells));
    total += row.gpu_mms;
  }
  std::string out = "Usage " + FormatUtc(reply.from_ms) + " to " + FormatUtc(reply.to_ms) + " by " + reply.by +
                    " (running tasks counted up to " + FormatUtc(reply.now_ms) + ")\n";
  if (reply.rows.empty()) return out + "no usage\n";
  out += table.Render() + "TOTAL GPU-HOURS " + FormatGpuHours(total) + "\n";
  if (reply.by == "job" && reply.records_kept_from_ms > reply.from_ms) {
    out += "(records before " + FormatUtc(reply.records_kept_from_ms) +
           " are no longer kept one by one: --by job misses them; other reports do not)\n";
  }
  return out;
}

int RunUsage(Session& s, const Invocation& inv) {
  const auto& f = inv.flags;
  GetUsage request;
  const int64_t now = s.WallMs();
  request.to_ms = now;
  request.from_ms = ParseMonth(FormatUtc(now, true).substr(0, 7))->first;
  if (f.count("from")) {
    auto from = ParseUsageTime("--from", f["from"].as<std::string>());
    if (!from.ok()) return s.Fail(from.status());
    request.from_ms = *from;
  }
  if (f.count("to")) {
    auto to = ParseUsageTime("--to", f["to"].as<std::string>());
    if (!to.ok()) return s.Fail(to.status());
    request.to_ms = *to;
  }
  request.by = f["by"].as<std::string>();
  if (f.count("queue")) request.queue = f["queue"].as<std::string>();
  request.include_running = !f["no-running"].as<bool>();
  if (request.to_ms <= request.from_ms) return s.Usage("--to must be after --from");
  auto client = s.client();
  if (!client.ok()) return s.Fail(client.status());
  auto reply = (*client)->GetUsage(request);
  if (!reply.ok()) return s.Fail(reply.status());
  if (s.json) {
    s.out << ToJson(*reply) << "\n";
  } else {
    s.out << (f["csv"].as<bool>() ? UsageCsv(*reply) : UsageTable(*reply));
  }
  return kExitOk;
}

void InvoiceOptions(cxxopts::Options& o) {
  o.add_options("invoice")
      ("month", "the month to invoice, YYYY-MM (UTC)", cxxopts::value<std::string>(), "YYYY-MM")
      ("queue", "only this queue and the queues below it", cxxopts::value<std::string>(), "Q")
      ("prices", "price with this YAML file instead of the cluster's table (what-if)", cxxopts::value<std::string>(),
       "FILE")
      ("csv", "print CSV (exact micro-units per line)", cxxopts::value<bool>()->default_value("false"))
      ("html", "print a printable HTML page", cxxopts::value<bool>()->default_value("false"))
      ("o,output", "write to FILE instead of standard output", cxxopts::value<std::string>(), "FILE");
}

int RunInvoice(Session& s, const Invocation& inv) {
  const auto& f = inv.flags;
  if (!f.count("month")) return s.Usage("invoice needs --month YYYY-MM");
  if (f["csv"].as<bool>() && f["html"].as<bool>()) return s.Usage("--csv and --html are alternatives");
  auto month = ParseMonth(f["month"].as<std::string>());
  if (!month.ok()) return s.Fail(month.status());
  std::optional<PriceTable> what_if;
  if (f.count("prices")) {
    auto table = ReadPriceFile(f["prices"].as<std::string>());
    if (!table.ok()) return s.Fail(table.status());
    what_if = std::move(table).value();
  }
  auto client = s.client();
  if (!client.ok()) return s.Fail(client.status());
  PriceTable prices;
  if (what_if) {
    prices = *what_if;
  } else {
    auto committed = (*client)->UpdatePrices(gpool::UpdatePrices{PricesOp::kShow, {}});
    if (!committed.ok()) return s.Fail(committed.status());
    if (!committed->set) {
      return s.Fail(Status::FailedPrecondition(
          "the cluster has no price table: an admin sets one with `gpool prices set FILE`, or pass --prices FILE"));
    }
    prices = committed->table;
  }
  GetUsage request{.from_ms = month->first, .to_ms = month->second, .by = "detail"};
  if (f.count("queue")) request.queue = f["queue"].as<std::string>();
  auto usage = (*client)->GetUsage(request);
  if (!usage.ok()) return s.Fail(usage.status());
  const Invoice invoice = PriceUsage(*usage, prices, f["month"].as<std::string>());
  std::string text = s.json                  ? ToJson(*usage) + "\n"
                     : f["csv"].as<bool>()  ? InvoiceCsv(invoice)
                     : f["html"].as<bool>() ? InvoiceHtml(invoice)
                                            : InvoiceText(invoice);
  if (!f.count("output")) {
    s.out << text;
    return kExitOk;
  }
  const std::string path = f["output"].as<std::string>();
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file << text;
  file.close();
  if (!file) return s.Fail(Status::IoError(path + ": cannot write the invoice"));
  s.out << "wrote " << path << " (total " << FormatMoney(invoice.total_micro) << " " << invoice.currency << ")\n";
  return kExitOk;
}

int RunPrices(Session& s, const Invocation& inv) {
  const std::string& op = inv.positionals[0];
  if (op != "show" && op != "set") return s.Usage("prices: expected show or set FILE, got '" + op + "'");
  if (op == "set" && inv.positionals.size() != 2) return s.Usage("prices set needs a FILE");
  if (op == "show" && inv.positionals.size() != 1) return s.Usage("prices show takes no FILE");
  gpool::UpdatePrices request{op == "set" ? PricesOp::kSet : PricesOp::kShow, {}};
  if (op == "set") {
    auto table = ReadPriceFile(inv.positionals[1]);
    if (!table.ok()) return s.Fail(table.status());
    request.table = std::move(table).value();
  }
  auto client = s.client();
  if (!client.ok()) return s.Fail(client.status());
  auto reply = (*client)->UpdatePrices(request);
  if (!reply.ok()) return s.Fail(reply.status());
  if (s.json) {
    s.out << ToJson(*reply) << "\n";
  } else if (!reply->set) {
    s.out << "no price table is set (`gpool prices set FILE`)\n";
  } else {
    s.out << "# set by " << reply->table.set_by << " at " << FormatUtc(reply->table.set_ms) << "\n"
          << FormatPriceYaml(reply->table);
  }
  return kExitOk;
}

}  // namespace

const CommandDef kUsageCommand = {
    .name = "usage",
    .synopsis = "[--from TIME] [--to TIME] [--by user|queue|model|pool|job|class|detail] [--queue Q] [--csv]",
    .summary = "report GPU, CPU and memory usage (ended tasks and running ones up to now)",
    .min_args = 0,
    .max_args = 0,
    .add_options = UsageOptions,
    .run = RunUsage,
};

const CommandDef kInvoiceCommand = {
    .name = "invoice",
    .synopsis = "--month YYYY-MM [--queue Q] [--prices FILE] [--csv|--html] [-o FILE]",
    .summary = "price a month's usage with the cluster's price table (or --prices FILE)",
    .min_args = 0,
    .max_args = 0,
    .add_options = InvoiceOptions,
    .run = RunInvoice,
};

const CommandDef kPricesCommand = {
    .name = "prices",
    .synopsis = "show | set FILE",
    .summary = "show the cluster's price table, or set it from a YAML file (admins)",
    .min_args = 1,
    .max_args = 2,
    .add_options = NoOptions,
    .run = RunPrices,
};

}  // namespace gpool::cli
