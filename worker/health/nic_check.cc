#include "worker/health/nic_check.h"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <system_error>

#include "protocol/base/text.h"
#include "protocol/health.h"

namespace gpool::worker {
namespace {

namespace fs = std::filesystem;

// The first line of a sysfs file without surrounding whitespace; nullopt when
// it cannot be opened or read (a link without carrier answers `speed` with
// EINVAL).
std::optional<std::string> NicReadFile(const fs::path& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::string line;
  if (!std::getline(in, line)) return std::nullopt;
  return std::string(TrimSpace(line));
}

// The names in a directory, sorted; empty when it cannot be listed.
std::vector<std::string> NicListDir(const fs::path& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  if (ec) return names;
  for (const fs::directory_iterator end; it != end; it.increment(ec)) {
    if (ec) break;
    names.push_back(it->path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

bool NicExists(const fs::path& path) {
  std::error_code ec;
  return fs::exists(fs::symlink_status(path, ec));
}

// "4: ACTIVE" -> "ACTIVE"; a bare word as it is.
std::string_view NicStateWord(std::string_view text) {
  const size_t colon = text.find(':');
  return TrimSpace(colon == std::string_view::npos ? text : text.substr(colon + 1));
}

struct NicIbPort {
  std::string key;  // "<dev>/<port>"
  bool readable = false;
  std::string state;
  std::string phys_state;
  std::string rate;
  bool active() const { return NicStateWord(state) == "ACTIVE" && NicStateWord(phys_state) == "LinkUp"; }
};

// SR-IOV virtual functions come and go with containers; only physical
// functions are watched.
bool NicIsVirtualFunction(const fs::path& class_entry) { return NicExists(class_entry / "device" / "physfn"); }

std::map<std::string, NicIbPort> NicScanIb(const std::string& root) {
  std::map<std::string, NicIbPort> ports;
  const fs::path base = fs::path(root) / "class" / "infiniband";
  for (const std::string& dev : NicListDir(base)) {
    if (NicIsVirtualFunction(base / dev)) continue;
    const fs::path ports_dir = base / dev / "ports";
    for (const std::string& port : NicListDir(ports_dir)) {
      NicIbPort p;
      p.key = dev + "/" + port;
      auto state = NicReadFile(ports_dir / port / "state");
      auto phys = NicReadFile(ports_dir / port / "phys_state");
      auto rate = NicReadFile(ports_dir / port / "rate");
      p.readable = state.has_value() && phys.has_value();
      if (state) p.state = *state;
      if (phys) p.phys_state = *phys;
      if (rate) p.rate = *rate;
      ports.emplace(p.key, std::move(p));
    }
  }
  return ports;
}

struct NicEth {
  std::optional<std::string> operstate;
  int64_t speed_mbps = -1;  // -1: unreadable or unknown
};

std::map<std::string, NicEth> NicScanEth(const std::string& root) {
  std::map<std::string, NicEth> ifs;
  const fs::path base = fs::path(root) / "class" / "net";
  for (const std::string& name : NicListDir(base)) {
    if (!NicExists(base / name / "device") || NicIsVirtualFunction(base / name)) continue;
    NicEth e;
    e.operstate = NicReadFile(base / name / "operstate");
    if (auto speed = NicReadFile(base / name / "speed")) {
      int64_t value = -1;
      auto [ptr, ec] = std::from_chars(speed->data(), speed->data() + speed->size(), value);
      if (ec == std::errc() && ptr == speed->data() + speed->size() && value > 0) e.speed_mbps = value;
    }
    ifs.emplace(name, std::move(e));
  }
  return ifs;
}

std::string NicQuoted(std::string_view s) { return "\"" + std::string(s) + "\""; }

}  // namespace

int64_t ParseIbRateMbps(std::string_view rate) {
  rate = TrimSpace(rate);
  size_t digits = 0;
  while (digits < rate.size() && ((rate[digits] >= '0' && rate[digits] <= '9') || rate[digits] == '.')) ++digits;
  if (digits == 0) return -1;
  // Locale-free: integer and fractional parts by hand ("2.5", "200", "53.125").
  const std::string_view number = rate.substr(0, digits);
  const size_t dot = number.find('.');
  const std::string_view whole = number.substr(0, dot);
  const std::string_view frac = dot == std::string_view::npos ? std::string_view() : number.substr(dot + 1);
  if (frac.find('.') != std::string_view::npos || (whole.empty() && frac.empty())) return -1;
  int64_t gbps = 0;
  if (!whole.empty()) {
    auto [ptr, ec] = std::from_chars(whole.data(), whole.data() + whole.size(), gbps);
    if (ec != std::errc() || ptr != whole.data() + whole.size() || gbps > 1'000'000'000) return -1;
  }
  int64_t mbps = gbps * 1000;
  int64_t scale = 100;  // Mb/s per digit: the first fractional digit is 100 Mb/s
  for (size_t i = 0; i < frac.size() && scale > 0; ++i, scale /= 10) mbps += (frac[i] - '0') * scale;
  std::string_view unit = TrimSpace(rate.substr(digits));
  if (unit.rfind("Gb/s", 0) != 0) return -1;  // "Gb/sec" and "Gb/s"
  return mbps;
}

NicCheck::NicCheck(NicCheckOptions options) : options_(std::move(options)) {
  for (const auto& [key, port] : NicScanIb(options_.sysfs_root)) {
    if (!port.readable || !port.active()) continue;
    ib_[key] = IbBase{ParseIbRateMbps(port.rate), port.rate};
  }
  for (const auto& [name, e] : NicScanEth(options_.sysfs_root)) {
    if (e.operstate == "up") eth_[name] = EthBase{e.speed_mbps};
  }
}

std::vector<HealthKind> NicCheck::kinds() const {
  return {HealthKind::kIbPortDown, HealthKind::kIbRateDegraded, HealthKind::kEthDown, HealthKind::kEthSpeedDegraded};
}

std::vector<std::string> NicCheck::baseline() const {
  std::vector<std::string> out;
  for (const auto& [key, base] : ib_) out.push_back("ib/" + key);
  for (const auto& [name, base] : eth_) out.push_back("eth/" + name);
  return out;
}

std::vector<HealthFinding> NicCheck::Run(int64_t /*wall_ms*/) {
  std::vector<HealthFinding> findings;
  RunIb(&findings);
  RunEth(&findings);
  return findings;
}

void NicCheck::RunIb(std::vector<HealthFinding>* findings) {
  const auto ports = NicScanIb(options_.sysfs_root);
  // A baseline port whose directory is gone: its adapter left the bus (or its
  // driver was unloaded); either way the node lost that link.
  for (const auto& [key, base] : ib_) {
    if (ports.count(key) != 0) continue;
    findings->push_back(HealthFinding{HealthKind::kIbPortDown, "ib/" + key, HealthSeverity::kFatal,
                                      "port no longer present in sysfs (was ACTIVE/LinkUp)"});
  }
  for (const auto& [key, port] : ports) {
    if (!port.readable) continue;  // cannot look: report nothing for it
    auto base = ib_.find(key);
    if (!port.active()) {
      if (base == ib_.end()) continue;  // down at baseline: never cabled
      findings->push_back(HealthFinding{
          HealthKind::kIbPortDown, "ib/" + key, HealthSeverity::kFatal,
          "state=" + NicQuoted(port.state) + " phys_state=" + NicQuoted(port.phys_state) + " (was ACTIVE/LinkUp)"});
      continue;
    }
    const int64_t rate = ParseIbRateMbps(port.rate);
    if (base == ib_.end()) {
      ib_[key] = IbBase{rate, port.rate};  // came up later: joins the baseline
      continue;
    }
    if (rate < 0) continue;  // rate unreadable now: nothing to compare
    if (base->second.rate_mbps < 0 || rate > base->second.rate_mbps) {
      base->second = IbBase{rate, port.rate};
      continue;
    }
    if (rate < base->second.rate_mbps) {
      findings->push_back(HealthFinding{HealthKind::kIbRateDegraded, "ib/" + key, HealthSeverity::kDegraded,
                                        "rate=" + NicQuoted(port.rate) + " below baseline " +
                                            NicQuoted(base->second.rate_text)});
    }
  }
}

void NicCheck::RunEth(std::vector<HealthFinding>* findings) {
  const auto ifs = NicScanEth(options_.sysfs_root);
  // Interfaces that vanished (renamed, moved to another namespace, unplugged
  // VFs) leave the baseline without a finding.
  for (auto it = eth_.begin(); it != eth_.end();) {
    it = ifs.count(it->first) == 0 ? eth_.erase(it) : std::next(it);
  }
  for (const auto& [name, e] : ifs) {
    if (!e.operstate) continue;  // cannot look
    auto base = eth_.find(name);
    if (*e.operstate != "up") {
      if (base == eth_.end()) continue;  // not up at baseline
      findings->push_back(HealthFinding{HealthKind::kEthDown, "eth/" + name, HealthSeverity::kDegraded,
                                        "operstate=" + NicQuoted(*e.operstate) + " (was up)"});
      continue;
    }
    if (base == eth_.end()) {
      eth_[name] = EthBase{e.speed_mbps};  // came up later: joins the baseline
      continue;
    }
    if (e.speed_mbps < 0) continue;  // unreadable speed is ignored
    if (base->second.speed_mbps < 0 || e.speed_mbps > base->second.speed_mbps) {
      base->second.speed_mbps = e.speed_mbps;
      continue;
    }
    if (e.speed_mbps < base->second.speed_mbps) {
      findings->push_back(HealthFinding{HealthKind::kEthSpeedDegraded, "eth/" + name, HealthSeverity::kDegraded,
                                        "speed=" + std::to_string(e.speed_mbps) + " Mb/s below baseline " +
                                            std::to_string(base->second.speed_mbps) + " Mb/s"});
    }
  }
}

}  // namespace gpool::worker
