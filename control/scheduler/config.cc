#include "control/scheduler/config.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <limits>
#include <map>
#include <span>
#include <sstream>
#include <utility>

#include "protocol/base/text.h"

namespace gpool::scheduler {
namespace {

// The file is read on every SIGHUP; a bound keeps a wrong path (a log, a
// device) from being slurped into memory.
constexpr size_t kMaxConfigBytes = size_t{1} << 20;
constexpr int64_t kMaxWeight = 1'000'000;
constexpr int64_t kMaxCandidates = 100'000;
constexpr int64_t kMaxMinGpus = 1'000'000;
// Multiplied by a node's free GPU count; the bound keeps the product far from
// overflow, and matches the largest CPU/memory quantity a node may report.
constexpr int64_t kMaxPerFreeGpu = int64_t{1} << 40;
constexpr int64_t kMaxDuration = std::numeric_limits<int64_t>::max();
// Values are echoed back in errors; a long one would swamp the message.
constexpr size_t kMaxEchoed = 64;

constexpr std::array<std::pair<Action, std::string_view>, 5> kActionNames = {{
    {Action::kEnqueue, "enqueue"},
    {Action::kAllocate, "allocate"},
    {Action::kBackfill, "backfill"},
    {Action::kPreempt, "preempt"},
    {Action::kReclaim, "reclaim"},
}};

std::string Clip(std::string_view s) {
  return s.size() <= kMaxEchoed ? std::string(s) : std::string(s.substr(0, kMaxEchoed)) + "...";
}

Status LineError(size_t line, std::string_view section, std::string_view why) {
  std::string where = "line " + std::to_string(line) + ": ";
  if (!section.empty()) where += "[" + std::string(section) + "] ";
  return Status::InvalidArgument(where + std::string(why));
}

// One `key = value` line; carries its position so every check can name it.
struct Entry {
  size_t line = 0;
  std::string_view section;  // empty at top level
  std::string_view key;
  std::string_view value;
};

Status Fail(const Entry& e, std::string_view why) {
  return LineError(e.line, e.section, Clip(e.key) + ": " + std::string(why));
}

std::string RangeText(int64_t min, int64_t max) {
  if (max == kMaxDuration) return "must be >= " + std::to_string(min);
  return "must be in " + std::to_string(min) + ".." + std::to_string(max);
}

// Parsed as signed so that "-1" reads as out of range rather than as junk.
Result<int64_t> ParseInt(const Entry& e, int64_t min, int64_t max) {
  const char* end = e.value.data() + e.value.size();
  int64_t value = 0;
  const auto [ptr, ec] = std::from_chars(e.value.data(), end, value);
  if (ec == std::errc::invalid_argument || ptr != end) {
    return Fail(e, "'" + Clip(e.value) + "' is not a whole number");
  }
  if (ec == std::errc::result_out_of_range || value < min || value > max) {
    return Fail(e, "'" + Clip(e.value) + "' " + RangeText(min, max));
  }
  return value;
}

template <typename T>
Status SetInt(const Entry& e, int64_t min, int64_t max, T* out) {
  GPOOL_ASSIGN_OR_RETURN(int64_t value, ParseInt(e, min, max));
  *out = static_cast<T>(value);
  return Status::Ok();
}

Status SetBool(const Entry& e, bool* out) {
  if (e.value == "true" || e.value == "false") {
    *out = e.value == "true";
    return Status::Ok();
  }
  return Fail(e, "'" + Clip(e.value) + "' is not true or false");
}

Status SetStrategy(const Entry& e, Strategy* out) {
  auto strategy = StrategyFromName(e.value);
  if (!strategy.ok()) return Fail(e, strategy.status().message());
  *out = *strategy;
  return Status::Ok();
}

Status SetActions(const Entry& e, std::vector<Action>* out) {
  std::vector<Action> actions;
  std::string_view rest = e.value;
  for (size_t index = 1;; ++index) {
    const size_t comma = rest.find(',');
    const std::string_view name = TrimSpace(rest.substr(0, comma));
    if (name.empty()) return Fail(e, "entry " + std::to_string(index) + " is empty");
    auto action = ActionFromName(name);
    if (!action.ok()) return Fail(e, action.status().message());
    if (std::find(actions.begin(), actions.end(), *action) != actions.end()) {
      return Fail(e, "'" + std::string(name) + "' is listed twice");
    }
    actions.push_back(*action);
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  if (std::find(actions.begin(), actions.end(), Action::kAllocate) == actions.end()) {
    return Fail(e, "must include allocate, or no job is ever placed");
  }
  *out = std::move(actions);
  return Status::Ok();
}

struct Key {
  std::string_view name;
  Status (*apply)(const Entry&, SchedulerConfig*);
};

constexpr Key kTopKeys[] = {
    {"actions", [](const Entry& e, SchedulerConfig* c) { return SetActions(e, &c->actions); }},
};

constexpr Key kNodeOrderKeys[] = {
    {"strategy", [](const Entry& e, SchedulerConfig* c) { return SetStrategy(e, &c->node_order.strategy); }},
    {"gpu_weight", [](const Entry& e, SchedulerConfig* c) { return SetInt(e, 0, kMaxWeight, &c->node_order.gpu_weight); }},
    {"cpu_weight", [](const Entry& e, SchedulerConfig* c) { return SetInt(e, 0, kMaxWeight, &c->node_order.cpu_weight); }},
    {"memory_weight",
     [](const Entry& e, SchedulerConfig* c) { return SetInt(e, 0, kMaxWeight, &c->node_order.memory_weight); }},
    {"prefer_label_weight",
     [](const Entry& e, SchedulerConfig* c) { return SetInt(e, 0, kMaxWeight, &c->node_order.prefer_label_weight); }},
    {"candidates",
     [](const Entry& e, SchedulerConfig* c) { return SetInt(e, 1, kMaxCandidates, &c->node_order.candidates); }},
};

constexpr Key kFairnessKeys[] = {
    {"drf", [](const Entry& e, SchedulerConfig* c) { return SetBool(e, &c->fairness.drf); }},
};

constexpr Key kGpuCpuRatioKeys[] = {
    {"cpu_milli_per_free_gpu",
     [](const Entry& e, SchedulerConfig* c) {
       return SetInt(e, 0, kMaxPerFreeGpu, &c->gpu_cpu_ratio.cpu_milli_per_free_gpu);
     }},
    {"memory_mib_per_free_gpu",
     [](const Entry& e, SchedulerConfig* c) {
       return SetInt(e, 0, kMaxPerFreeGpu, &c->gpu_cpu_ratio.memory_mib_per_free_gpu);
     }},
};

constexpr Key kReservationKeys[] = {
    {"enabled", [](const Entry& e, SchedulerConfig* c) { return SetBool(e, &c->reservation.enabled); }},
    {"min_gpus", [](const Entry& e, SchedulerConfig* c) { return SetInt(e, 1, kMaxMinGpus, &c->reservation.min_gpus); }},
    {"small_job_bound_ms",
     [](const Entry& e, SchedulerConfig* c) { return SetInt(e, 0, kMaxDuration, &c->reservation.small_job_bound_ms); }},
    {"starve_after_ms",
     [](const Entry& e, SchedulerConfig* c) { return SetInt(e, 0, kMaxDuration, &c->reservation.starve_after_ms); }},
    {"max_per_pool",
     [](const Entry& e, SchedulerConfig* c) { return SetInt(e, 1, kMaxMinGpus, &c->reservation.max_per_pool); }},
};

struct Section {
  std::string_view name;  // empty: the top level, before any header
  std::span<const Key> keys;
};

constexpr Section kSections[] = {
    {"", kTopKeys},
    {"nodeorder", kNodeOrderKeys},
    {"fairness", kFairnessKeys},
    {"gpu_cpu_ratio", kGpuCpuRatioKeys},
    {"reservation", kReservationKeys},
};

const Section* FindSection(std::string_view name) {
  for (const Section& section : kSections) {
    if (section.name == name) return &section;
  }
  return nullptr;
}

std::string KnownSections() {
  std::string list;
  for (const Section& section : kSections) {
    if (section.name.empty()) continue;
    list += (list.empty() ? "" : ", ") + std::string(section.name);
  }
  return list;
}

std::string KnownKeys(const Section& section) {
  std::string list;
  for (const Key& key : section.keys) list += (list.empty() ? "" : ", ") + std::string(key.name);
  return list;
}

Result<const Key*> FindKey(const Section& section, const Entry& e) {
  for (const Key& key : section.keys) {
    if (key.name == e.key) return &key;
  }
  // A misplaced `actions` would otherwise read as a typo; say where it goes.
  if (!section.name.empty() && e.key == "actions") {
    return Fail(e, "only valid at the top of the file, before any [section]");
  }
  return Fail(e, "unknown key (known: " + KnownKeys(section) + ")");
}

// Holds what a line may depend on from earlier lines: the open section and
// what has been set, so repeats are caught with the line that set them first.
class Parser {
 public:
  Status Line(size_t number, std::string_view text);
  SchedulerConfig& config() { return config_; }

 private:
  Status Header(size_t number, std::string_view text);
  Status Assignment(size_t number, std::string_view text);

  SchedulerConfig config_;
  const Section* section_ = &kSections[0];
  bool skipping_ = false;  // inside a [health...] section
  std::map<std::string, size_t, std::less<>> seen_sections_;
  std::map<std::string, size_t, std::less<>> seen_keys_;  // "section.key" -> line
};

Status Parser::Line(size_t number, std::string_view text) {
  text = TrimSpace(text.substr(0, text.find('#')));
  if (text.empty()) return Status::Ok();
  if (text.front() == '[') return Header(number, text);
  return Assignment(number, text);
}

Status Parser::Header(size_t number, std::string_view text) {
  if (text.back() != ']') return LineError(number, "", "'" + Clip(text) + "': a section header ends with ]");
  const std::string_view name = TrimSpace(text.substr(1, text.size() - 2));
  // [health], [health.xid], [health.webhook.<name>]: the health policy's, parsed
  // and validated by control/health/policy_config.h from the same file.
  skipping_ = name == "health" || name.substr(0, 7) == "health.";
  if (skipping_) return Status::Ok();
  const Section* section = name.empty() ? nullptr : FindSection(name);
  if (section == nullptr) {
    return LineError(number, "", "[" + Clip(name) + "]: unknown section (known: " + KnownSections() + ")");
  }
  const auto [it, fresh] = seen_sections_.emplace(std::string(name), number);
  if (!fresh) {
    return LineError(number, "", "[" + std::string(name) + "]: section appears twice (first on line " +
                                     std::to_string(it->second) + ")");
  }
  section_ = section;
  return Status::Ok();
}

Status Parser::Assignment(size_t number, std::string_view text) {
  if (skipping_) return Status::Ok();
  const size_t eq = text.find('=');
  if (eq == std::string_view::npos) {
    return LineError(number, section_->name, "'" + Clip(text) + "': expected key = value");
  }
  Entry e{number, section_->name, TrimSpace(text.substr(0, eq)), TrimSpace(text.substr(eq + 1))};
  if (e.key.empty()) return LineError(number, section_->name, "'" + Clip(text) + "': missing key before =");
  GPOOL_ASSIGN_OR_RETURN(const Key* key, FindKey(*section_, e));
  const auto [it, fresh] = seen_keys_.emplace(std::string(e.section) + "." + std::string(e.key), number);
  if (!fresh) return Fail(e, "set twice (first on line " + std::to_string(it->second) + ")");
  if (e.value.empty()) return Fail(e, "missing value");
  return key->apply(e, &config_);
}

Result<std::string> ReadBounded(const std::string& path, size_t limit) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT) return Status::NotFound("no scheduler config at " + path);
    return Status::IoError("open " + path + ": " + std::strerror(err));
  }
  std::string data;
  char buffer[64 * 1024];
  while (data.size() <= limit) {
    const ssize_t n = read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      close(fd);
      return Status::IoError("read " + path + ": " + std::strerror(err));
    }
    if (n == 0) break;
    data.append(buffer, static_cast<size_t>(n));
  }
  close(fd);
  return data;
}

std::string JoinActions(const std::vector<Action>& actions) {
  std::string list;
  for (Action action : actions) list += (list.empty() ? "" : ", ") + std::string(ActionName(action));
  return list;
}

}  // namespace

constexpr std::pair<Strategy, std::string_view> kStrategyNames[] = {
    {Strategy::kBinpack, "binpack"},
    {Strategy::kSpread, "spread"},
    {Strategy::kFragmentation, "fragmentation"},
    {Strategy::kFgd, "fgd"},
    {Strategy::kRandom, "random"},
    {Strategy::kDotProduct, "dot-product"},
    {Strategy::kGpuPacking, "gpu-packing"},
    {Strategy::kGpuClustering, "gpu-clustering"},
    {Strategy::kBestFit, "best-fit"},
};

std::string_view StrategyName(Strategy strategy) {
  for (const auto& [value, name] : kStrategyNames) {
    if (value == strategy) return name;
  }
  return "unknown";
}

Result<Strategy> StrategyFromName(std::string_view name) {
  std::string known;
  for (const auto& [value, candidate] : kStrategyNames) {
    if (candidate == name) return value;
    known += (known.empty() ? "" : ", ") + std::string(candidate);
  }
  return Status::InvalidArgument("unknown placement strategy '" + Clip(name) + "' (expected one of " + known + ")");
}

std::string_view ActionName(Action action) {
  for (const auto& [value, name] : kActionNames) {
    if (value == action) return name;
  }
  return "unknown";
}

Result<Action> ActionFromName(std::string_view name) {
  for (const auto& [value, known] : kActionNames) {
    if (known == name) return value;
  }
  return Status::InvalidArgument("unknown action '" + Clip(name) +
                                 "' (expected enqueue, allocate, backfill, preempt or reclaim)");
}

Result<SchedulerConfig> ParseSchedulerConfig(std::string_view text) {
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
  return std::move(parser.config());
}

Result<SchedulerConfig> LoadSchedulerConfig(const std::string& path) {
  // One byte past the limit is enough for the parser to refuse it.
  GPOOL_ASSIGN_OR_RETURN(std::string text, ReadBounded(path, kMaxConfigBytes));
  auto config = ParseSchedulerConfig(text);
  if (!config.ok()) return config.status().WithContext(path);
  return config;
}

std::string RenderSchedulerConfig(const SchedulerConfig& config) {
  const NodeOrderConfig& order = config.node_order;
  std::ostringstream out;
  out << "actions = " << JoinActions(config.actions) << "\n"
      << "\n[nodeorder]\n"
      << "strategy = " << StrategyName(order.strategy) << "\n"
      << "gpu_weight = " << order.gpu_weight << "\n"
      << "cpu_weight = " << order.cpu_weight << "\n"
      << "memory_weight = " << order.memory_weight << "\n"
      << "prefer_label_weight = " << order.prefer_label_weight << "\n"
      << "candidates = " << order.candidates << "\n"
      << "\n[fairness]\n"
      << "drf = " << (config.fairness.drf ? "true" : "false") << "\n"
      << "\n[gpu_cpu_ratio]\n"
      << "cpu_milli_per_free_gpu = " << config.gpu_cpu_ratio.cpu_milli_per_free_gpu << "\n"
      << "memory_mib_per_free_gpu = " << config.gpu_cpu_ratio.memory_mib_per_free_gpu << "\n"
      << "\n[reservation]\n"
      << "enabled = " << (config.reservation.enabled ? "true" : "false") << "\n"
      << "min_gpus = " << config.reservation.min_gpus << "\n"
      << "small_job_bound_ms = " << config.reservation.small_job_bound_ms << "\n"
      << "starve_after_ms = " << config.reservation.starve_after_ms << "\n"
      << "max_per_pool = " << config.reservation.max_per_pool << "\n";
  return out.str();
}

}  // namespace gpool::scheduler
