#include "client/probe/probe_args.h"

#include <cstdint>
#include <optional>
#include <utility>

namespace gpool::probe {

namespace {

Status Bad(std::string_view flag, const std::string& why) {
  return Status::InvalidArgument(std::string(flag) + ": " + why);
}

Result<uint64_t> ParseCount(std::string_view flag, const std::string& text, uint64_t min, uint64_t max) {
  const std::string range = "expected an integer from " + std::to_string(min) + " to " + std::to_string(max) +
                            ", got '" + text + "'";
  if (text.empty() || text.size() > 19) return Bad(flag, range);
  uint64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return Bad(flag, range);
    value = value * 10 + static_cast<uint64_t>(c - '0');
  }
  if (value < min || value > max) return Bad(flag, range);
  return value;
}

// Bytes: digits with an optional Ki, Mi or Gi.
Result<uint64_t> ParseBytes(std::string_view flag, const std::string& text) {
  const std::string why = "expected bytes from 1 to 16Gi (e.g. 67108864 or 64Mi), got '" + text + "'";
  uint64_t unit = 1;
  std::string digits = text;
  for (auto [suffix, scale] : {std::pair{"Ki", uint64_t{1} << 10}, {"Mi", uint64_t{1} << 20}, {"Gi", uint64_t{1} << 30}}) {
    const std::string s = suffix;
    if (digits.size() > s.size() && digits.compare(digits.size() - s.size(), s.size(), s) == 0) {
      unit = scale;
      digits.resize(digits.size() - s.size());
      break;
    }
  }
  auto value = ParseCount(flag, digits, 1, kMaxBulkBytes);
  if (!value.ok() || *value > kMaxBulkBytes / unit) return Bad(flag, why);
  return *value * unit;
}

}  // namespace

Result<ProbeArgs> ParseProbeArgs(const std::vector<std::string>& args) {
  ProbeArgs parsed;
  if (args.empty()) return Status::InvalidArgument("missing the probe: network or gpu");
  if (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
    parsed.help = true;
    return parsed;
  }
  parsed.kind = args[0];
  if (parsed.kind != "network" && parsed.kind != "gpu") {
    return Status::InvalidArgument("unknown probe '" + parsed.kind + "': expected network or gpu");
  }
  const bool network = parsed.kind == "network";
  std::optional<uint64_t> rank;
  bool ring_given = false;
  for (size_t i = 1; i < args.size(); ++i) {
    std::string flag = args[i];
    std::optional<std::string> value;
    if (flag == "-h" || flag == "--help") {
      parsed.help = true;
      return parsed;
    }
    if (auto eq = flag.find('='); flag.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = flag.substr(eq + 1);
      flag.resize(eq);
    }
    auto take = [&]() -> Result<std::string> {
      if (value) return *value;
      if (i + 1 >= args.size()) return Bad(flag, "missing its value");
      return args[++i];
    };
    if (flag == "--bytes") {
      GPOOL_ASSIGN_OR_RETURN(std::string text, take());
      GPOOL_ASSIGN_OR_RETURN(uint64_t bytes, ParseBytes(flag, text));
      parsed.network.link.bytes = bytes;
      parsed.gpu.bytes = bytes;
    } else if (flag == "--rounds") {
      GPOOL_ASSIGN_OR_RETURN(std::string text, take());
      GPOOL_ASSIGN_OR_RETURN(uint64_t rounds, ParseCount(flag, text, 1, 1000));
      parsed.network.link.rounds = static_cast<uint32_t>(rounds);
      parsed.gpu.rounds = static_cast<uint32_t>(rounds);
    } else if (network && flag == "--rank") {
      GPOOL_ASSIGN_OR_RETURN(std::string text, take());
      GPOOL_ASSIGN_OR_RETURN(rank, ParseCount(flag, text, 0, 1'000'000));
    } else if (network && flag == "--ring") {
      GPOOL_ASSIGN_OR_RETURN(std::string text, take());
      GPOOL_ASSIGN_OR_RETURN(parsed.network.ring, ParseRing(text));
      ring_given = true;
    } else if (network && flag == "--pings") {
      GPOOL_ASSIGN_OR_RETURN(std::string text, take());
      GPOOL_ASSIGN_OR_RETURN(uint64_t pings, ParseCount(flag, text, 1, 1'000'000));
      parsed.network.link.pings = static_cast<uint32_t>(pings);
    } else if (network && flag == "--timeout-ms") {
      GPOOL_ASSIGN_OR_RETURN(std::string text, take());
      GPOOL_ASSIGN_OR_RETURN(uint64_t ms, ParseCount(flag, text, 1, 86'400'000));
      parsed.network.timeout_ms = static_cast<int64_t>(ms);
    } else {
      return Status::InvalidArgument("unknown flag '" + args[i] + "' for the " + parsed.kind + " probe");
    }
  }
  if (network) {
    if (!rank) return Status::InvalidArgument("--rank: required for the network probe");
    if (!ring_given) return Status::InvalidArgument("--ring: required for the network probe");
    if (*rank >= parsed.network.ring.size()) {
      return Bad("--rank", std::to_string(*rank) + " is not below the ring's size, " +
                               std::to_string(parsed.network.ring.size()));
    }
    parsed.network.rank = static_cast<size_t>(*rank);
  }
  return parsed;
}

std::string ProbeUsage() {
  return "usage:\n"
         "  gpool-probe network --rank I --ring HOST:PORT,HOST:PORT,... [--bytes N] [--rounds N] [--pings N]\n"
         "                      [--timeout-ms N]\n"
         "      listen on ring[I]'s port, measure TCP latency (median of --pings round trips, default 100)\n"
         "      and bandwidth (best of --rounds transfers of --bytes, default 3 x 64Mi) to ring[I+1],\n"
         "      serve ring[I-1]; give up after --timeout-ms (default 60000)\n"
         "  gpool-probe gpu [--bytes N] [--rounds N]\n"
         "      host-to-device and device-to-host copy bandwidth of every visible GPU (default 3 x 256Mi)\n"
         "Prints one JSON line per result. Sizes: bytes, or 512Ki, 64Mi, 1Gi.\n"
         "Exit: 0 measured (or no CUDA driver), 1 the probe failed, 2 bad arguments.\n";
}

}  // namespace gpool::probe
