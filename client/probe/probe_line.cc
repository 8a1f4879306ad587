#include "client/probe/probe_line.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <limits>

namespace gpool::probe {

namespace {

// Rounded to 0.1, so lines stay short and diffs of logs readable.
double Tenths(double value) { return static_cast<double>(static_cast<int64_t>(value * 10 + 0.5)) / 10; }

bool NumberField(const nlohmann::json& object, const char* key, double& out) {
  auto it = object.find(key);
  if (it == object.end() || !it->is_number()) return false;
  out = it->get<double>();
  return out >= 0 && out < std::numeric_limits<double>::infinity();
}

}  // namespace

std::string FormatNetworkLine(const NetworkLine& line) {
  nlohmann::ordered_json j = {{"probe", "network"},
                      {"bandwidth_mib_s", Tenths(line.bandwidth_mib_s)},
                      {"latency_us", Tenths(line.latency_us)},
                      {"peer", line.peer}};
  return j.dump();
}

std::string FormatGpuLine(const GpuLine& line) {
  nlohmann::ordered_json j = {{"probe", "gpu"},
                      {"device", line.device},
                      {"name", line.name},
                      {"h2d_mib_s", Tenths(line.h2d_mib_s)},
                      {"d2h_mib_s", Tenths(line.d2h_mib_s)},
                      {"bandwidth_mib_s", Tenths(std::min(line.h2d_mib_s, line.d2h_mib_s))}};
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string FormatErrorLine(std::string_view kind, std::string_view error) {
  nlohmann::ordered_json j = {{"probe", std::string(kind)}, {"error", std::string(error)}};
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

Result<NodeMeasurement> ParseProbeOutput(std::string_view kind, std::string_view log) {
  NodeMeasurement m;
  size_t gpus = 0;
  bool network_seen = false;
  std::string error;
  size_t start = 0;
  while (start < log.size()) {
    size_t end = log.find('\n', start);
    if (end == std::string_view::npos) end = log.size();
    std::string_view line = log.substr(start, end - start);
    start = end + 1;
    if (line.empty() || line.front() != '{') continue;
    auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object()) continue;
    auto probe = j.find("probe");
    if (probe == j.end() || !probe->is_string() || probe->get<std::string>() != kind) continue;
    if (auto e = j.find("error"); e != j.end()) {
      error = e->is_string() ? e->get<std::string>() : e->dump();
      continue;
    }
    double bandwidth = 0;
    if (!NumberField(j, "bandwidth_mib_s", bandwidth)) {
      return Status::Malformed("probe line without a bandwidth_mib_s: " + std::string(line.substr(0, 200)));
    }
    if (kind == "gpu") {
      m.bandwidth_mib_s = gpus == 0 ? bandwidth : std::min(m.bandwidth_mib_s, bandwidth);
      ++gpus;
    } else {
      // The last network line wins (there is one per run).
      m.bandwidth_mib_s = bandwidth;
      if (!NumberField(j, "latency_us", m.latency_us)) m.latency_us = 0;
      auto peer = j.find("peer");
      m.detail = peer != j.end() && peer->is_string() ? peer->get<std::string>() : "";
      network_seen = true;
    }
  }
  if (kind == "gpu" && gpus > 0) {
    m.detail = std::to_string(gpus) + (gpus == 1 ? " GPU" : " GPUs");
    return m;
  }
  if (network_seen) return m;
  if (!error.empty()) return Status::FailedPrecondition(error);
  return Status::NotFound("no " + std::string(kind) + " probe result in the task's output");
}

}  // namespace gpool::probe
