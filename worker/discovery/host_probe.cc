#include "worker/discovery/host_probe.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "topology/cpulist.h"

namespace gpool::worker {
namespace {

namespace fs = std::filesystem;

bool ReadFirstLine(const std::string& path, std::string* out) {
  std::ifstream in(path);
  if (!in) return false;
  std::getline(in, *out);
  return true;
}

// Finds "<key> <number> kB" in a meminfo-style file (the key may be
// preceded by "Node N "). Returns MiB, or -1.
int64_t ReadMemInfoMib(const std::string& path, std::string_view key) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    const size_t at = line.find(key);
    if (at == std::string::npos) continue;
    std::istringstream fields(line.substr(at + key.size()));
    uint64_t kib = 0;
    std::string unit;
    if (fields >> kib >> unit && unit == "kB") return static_cast<int64_t>(kib / 1024);
  }
  return -1;
}

}  // namespace

int64_t CountCpuList(std::string_view list) {
  while (!list.empty() && (list.back() == '\n' || list.back() == ' ')) list.remove_suffix(1);
  if (list.empty()) return 0;
  int64_t total = 0;
  while (!list.empty()) {
    const size_t comma = list.find(',');
    std::string_view range = list.substr(0, comma);
    list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
    const size_t dash = range.find('-');
    uint64_t first = 0;
    uint64_t last = 0;
    std::string_view a = range.substr(0, dash);
    auto r1 = std::from_chars(a.data(), a.data() + a.size(), first);
    if (r1.ec != std::errc() || r1.ptr != a.data() + a.size() || a.empty()) return -1;
    last = first;
    if (dash != std::string_view::npos) {
      std::string_view b = range.substr(dash + 1);
      auto r2 = std::from_chars(b.data(), b.data() + b.size(), last);
      if (r2.ec != std::errc() || r2.ptr != b.data() + b.size() || b.empty() || last < first) return -1;
    }
    total += static_cast<int64_t>(last - first + 1);
  }
  return total;
}

std::string LocalHostname() {
  char buffer[256] = {};
  if (gethostname(buffer, sizeof(buffer) - 1) != 0 || buffer[0] == '\0') return "localhost";
  return buffer;
}

Result<HostInfo> ProbeHost(const HostProbeOptions& options) {
  HostInfo info;
  info.hostname = LocalHostname();

  std::string online;
  int64_t cpus = -1;
  if (ReadFirstLine(options.sys_root + "/devices/system/cpu/online", &online)) cpus = CountCpuList(online);
  if (cpus <= 0) cpus = sysconf(_SC_NPROCESSORS_ONLN);
  if (cpus <= 0) return Status::IoError("cannot count CPUs (" + options.sys_root + "/devices/system/cpu/online)");
  info.cpu_milli = static_cast<uint64_t>(cpus) * 1000;

  const int64_t memory = ReadMemInfoMib(options.proc_root + "/meminfo", "MemTotal:");
  if (memory <= 0) return Status::IoError("cannot read MemTotal from " + options.proc_root + "/meminfo");
  info.memory_mib = static_cast<uint64_t>(memory);

  std::error_code ec;
  const fs::path node_dir = fs::path(options.sys_root) / "devices/system/node";
  for (const auto& entry : fs::directory_iterator(node_dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.size() < 5 || name.rfind("node", 0) != 0) continue;
    int32_t id = 0;
    auto r = std::from_chars(name.data() + 4, name.data() + name.size(), id);
    if (r.ec != std::errc() || r.ptr != name.data() + name.size()) continue;
    NumaInfo numa;
    numa.id = id;
    std::string cpulist;
    if (ReadFirstLine(entry.path() / "cpulist", &cpulist)) {
      const int64_t n = CountCpuList(cpulist);
      if (n > 0) numa.cpu_milli = static_cast<uint64_t>(n) * 1000;
      // Kept for pinning tasks to the node (numa_pinning.h); a list the
      // worker cannot parse is left out rather than failing discovery.
      if (auto ids = topology::ParseCpuList(cpulist)) numa.cpus = topology::FormatCpuList(*ids);
    }
    const int64_t mib = ReadMemInfoMib(entry.path() / "meminfo", "MemTotal:");
    if (mib > 0) numa.memory_mib = static_cast<uint64_t>(mib);
    info.numa.push_back(numa);
  }
  std::sort(info.numa.begin(), info.numa.end(), [](const NumaInfo& a, const NumaInfo& b) { return a.id < b.id; });

  const fs::path net_dir = fs::path(options.sys_root) / "class/net";
  for (const auto& entry : fs::directory_iterator(net_dir, ec)) {
    if (!fs::exists(entry.path() / "device", ec)) continue;  // virtual interface
    NicInfo nic;
    nic.name = entry.path().filename().string();
    std::string speed;
    int64_t mbps = 0;
    if (ReadFirstLine(entry.path() / "speed", &speed)) {
      std::from_chars(speed.data(), speed.data() + speed.size(), mbps);
    }
    if (mbps > 0) nic.speed_gbps = static_cast<uint32_t>(mbps / 1000);
    info.nics.push_back(std::move(nic));
  }
  std::sort(info.nics.begin(), info.nics.end(), [](const NicInfo& a, const NicInfo& b) { return a.name < b.name; });
  return info;
}

}  // namespace gpool::worker
