// The text-table layouts: npu-smi, mx-smi and efsmi print each device as two
// rows of a '|' table; xpu-smi prints one whitespace-separated row per
// device. One reader finds the rows, one small function per tool reads its
// columns.
#include <algorithm>
#include <cctype>
#include <string>

#include "worker/discovery/vendor_smi.h"

namespace gpool::worker {
namespace {

std::string VendorTrimCell(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

std::vector<std::string> VendorSplitWords(std::string_view s) {
  std::vector<std::string> words;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    size_t j = i;
    while (j < s.size() && !std::isspace(static_cast<unsigned char>(s[j]))) ++j;
    if (j > i) words.emplace_back(s.substr(i, j - i));
    i = j;
  }
  return words;
}

bool VendorAllDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
}

std::vector<std::string> VendorSplitLines(std::string_view text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    lines.emplace_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

// A device of a two-row table: the cells of both rows, trimmed.
struct TwoRowDevice {
  uint32_t index = 0;
  std::vector<std::string> first, second;
  size_t line = 0;  // 1-based, of the first row
};

// Rows "| ... | ... |" whose first cell starts with a number open a device;
// the next table row is its second. Separator rows (+---, |===) are skipped.
Result<std::vector<TwoRowDevice>> ReadTwoRowTable(std::string_view text, std::string_view tool, size_t min_cells) {
  std::vector<std::vector<std::string>> rows;
  std::vector<size_t> row_lines;
  const std::vector<std::string> lines = VendorSplitLines(text);
  for (size_t n = 0; n < lines.size(); ++n) {
    const std::string line = VendorTrimCell(lines[n]);
    if (line.size() < 2 || line.front() != '|' || line.find_first_not_of("|=-+ ") == std::string::npos) continue;
    std::vector<std::string> cells;
    size_t start = 1;
    while (start < line.size()) {
      size_t bar = line.find('|', start);
      if (bar == std::string::npos) bar = line.size();
      cells.push_back(VendorTrimCell(std::string_view(line).substr(start, bar - start)));
      start = bar + 1;
    }
    rows.push_back(std::move(cells));
    row_lines.push_back(n + 1);
  }
  std::vector<TwoRowDevice> devices;
  for (size_t r = 0; r < rows.size(); ++r) {
    const std::vector<std::string> words = rows[r].empty() ? std::vector<std::string>{} : VendorSplitWords(rows[r][0]);
    if (rows[r].size() < min_cells || words.empty() || !VendorAllDigits(words[0])) continue;
    if (r + 1 >= rows.size() || rows[r + 1].size() < min_cells) {
      return Status::InvalidArgument(std::string(tool) + " line " + std::to_string(row_lines[r]) + ": device " +
                                     words[0] + " has no second row");
    }
    devices.push_back({static_cast<uint32_t>(std::stoul(words[0])), rows[r], rows[r + 1], row_lines[r]});
    ++r;  // the second row is consumed (its first cell may be a number too: npu-smi's chip)
  }
  if (devices.empty()) return Status::NotFound(std::string(tool) + " lists no device");
  return devices;
}

// The total of the last "used / total" pair in `cell` ("3161 / 65536",
// "858/65536 MiB"); 0 when there is none.
uint64_t VendorLastTotal(std::string_view cell) {
  const size_t slash = cell.rfind('/');
  if (slash == std::string_view::npos) return 0;
  size_t b = slash + 1;
  while (b < cell.size() && cell[b] == ' ') ++b;
  size_t e = b;
  while (e < cell.size() && std::isdigit(static_cast<unsigned char>(cell[e]))) ++e;
  return e > b ? std::stoull(std::string(cell.substr(b, e - b))) : 0;
}

// The leading number of a word ("49120MiB" -> 49120); 0 when none.
uint64_t VendorLeadingNumber(std::string_view word) {
  size_t e = 0;
  while (e < word.size() && std::isdigit(static_cast<unsigned char>(word[e]))) ++e;
  return e > 0 ? std::stoull(std::string(word.substr(0, e))) : 0;
}

// The words of a cell after the first ("0  MetaX C500" -> "MetaX C500").
std::string VendorAfterFirstWord(const std::string& cell) {
  const std::vector<std::string> words = VendorSplitWords(cell);
  std::string out;
  for (size_t i = 1; i < words.size(); ++i) out += (out.empty() ? "" : " ") + words[i];
  return out;
}

Result<std::vector<GpuInfo>> SortedByIndex(std::vector<GpuInfo> gpus) {
  std::sort(gpus.begin(), gpus.end(), [](const GpuInfo& a, const GpuInfo& b) { return a.index < b.index; });
  return gpus;
}

}  // namespace

// | NPU Name | Health | Power Temp Hugepages |
// | Chip     | Bus-Id | AICore Memory-Usage HBM-Usage |
Result<std::vector<GpuInfo>> ParseNpuSmi(std::string_view output) {
  GPOOL_ASSIGN_OR_RETURN(std::vector<TwoRowDevice> rows, ReadTwoRowTable(output, "npu-smi info", 3));
  std::vector<GpuInfo> gpus;
  for (const TwoRowDevice& d : rows) {
    GpuInfo gpu;
    gpu.index = d.index;
    gpu.vendor = "huawei";
    const std::string name = VendorAfterFirstWord(d.first[0]);
    gpu.model = name.rfind("Ascend", 0) == 0 ? name : "Ascend" + name;
    gpu.uuid = "ascend-" + d.second[1];
    gpu.memory_mib = VendorLastTotal(d.second[2]);
    // npu-smi's states: OK, Warning, Alarm (a major alarm, still serving),
    // Critical (the chip cannot run work).
    gpu.healthy = d.first[1] != "Critical";
    gpus.push_back(std::move(gpu));
  }
  return SortedByIndex(std::move(gpus));
}

// | GPU NAME      | Bus-id       | GPU-Util |
// | Temp Pwr      | Memory-Usage |          |
Result<std::vector<GpuInfo>> ParseMxSmi(std::string_view output) {
  GPOOL_ASSIGN_OR_RETURN(std::vector<TwoRowDevice> rows, ReadTwoRowTable(output, "mx-smi", 3));
  std::vector<GpuInfo> gpus;
  for (const TwoRowDevice& d : rows) {
    GpuInfo gpu;
    gpu.index = d.index;
    gpu.vendor = "metax";
    gpu.model = VendorAfterFirstWord(d.first[0]);
    gpu.uuid = "metax-" + d.first[1];
    gpu.memory_mib = VendorLastTotal(d.second[1]);
    gpus.push_back(std::move(gpu));
  }
  return SortedByIndex(std::move(gpus));
}

// | DEV NAME        | FW VER        | BUS-ID ECC  |
// | TEMP Dpm Pwr    | Mem GCU Virt  | DUsed SN    |
Result<std::vector<GpuInfo>> ParseEfsmi(std::string_view output) {
  GPOOL_ASSIGN_OR_RETURN(std::vector<TwoRowDevice> rows, ReadTwoRowTable(output, "efsmi", 3));
  std::vector<GpuInfo> gpus;
  for (const TwoRowDevice& d : rows) {
    GpuInfo gpu;
    gpu.index = d.index;
    gpu.vendor = "enflame";
    std::string name = VendorAfterFirstWord(d.first[0]);
    if (name.rfind("Enflame ", 0) == 0) name = name.substr(8);
    gpu.model = name;
    const std::vector<std::string> serial = VendorSplitWords(d.second[2]);
    const std::vector<std::string> bus = VendorSplitWords(d.first[2]);
    gpu.uuid = "enflame-" + (!serial.empty() ? serial.back() : !bus.empty() ? bus.front() : std::to_string(d.index));
    const std::vector<std::string> mem = VendorSplitWords(d.second[1]);
    gpu.memory_mib = mem.empty() ? 0 : VendorLeadingNumber(mem.front());
    gpus.push_back(std::move(gpu));
  }
  return SortedByIndex(std::move(gpus));
}

// DEVID  PCI-Addr  Model  SN  INODE  State  UseRate  L3 (u / t MB)  Memory (u / t MB) ...
Result<std::vector<GpuInfo>> ParseXpuSmi(std::string_view output) {
  std::vector<GpuInfo> gpus;
  const std::vector<std::string> lines = VendorSplitLines(output);
  for (size_t n = 0; n < lines.size(); ++n) {
    const std::vector<std::string> w = VendorSplitWords(lines[n]);
    const auto inode = std::find_if(w.begin(), w.end(), [](const std::string& s) { return s.rfind("/dev/xpu", 0) == 0; });
    if (w.empty() || !VendorAllDigits(w[0]) || inode == w.end()) continue;  // headers, process table
    if (inode - w.begin() != 4) {
      return Status::InvalidArgument("xpu-smi line " + std::to_string(n + 1) +
                                     ": expected DEVID, PCI address, model and serial before the device node");
    }
    GpuInfo gpu;
    gpu.index = static_cast<uint32_t>(std::stoul(w[0]));
    gpu.vendor = "kunlunxin";
    gpu.model = w[2];
    gpu.uuid = "kunlun-" + w[3];
    // Two "used / total MB" groups follow: L3, then device memory.
    for (size_t i = 1; i + 2 < w.size(); ++i) {
      if (w[i] == "/" && VendorAllDigits(w[i + 1]) && w[i + 2] == "MB") gpu.memory_mib = std::stoull(w[i + 1]);
    }
    gpus.push_back(std::move(gpu));
  }
  if (gpus.empty()) return Status::NotFound("xpu-smi lists no device");
  return SortedByIndex(std::move(gpus));
}

}  // namespace gpool::worker
