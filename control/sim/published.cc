#include "control/sim/published.h"

#include <array>

namespace gpool::sim {

namespace {

struct Row {
  std::string_view variant;
  std::array<double, 6> alloc;  // random, dot-product, gpu-clustering, gpu-packing, best-fit, fgd
};

constexpr std::array<std::string_view, 6> kColumns = {"random",      "dot-product", "gpu-clustering",
                                                      "gpu-packing", "best-fit",    "fgd"};
constexpr Row kRows[] = {
    {"default", {87.47, 90.85, 91.88, 92.00, 93.08, 95.39}},
    {"cpu050", {91.24, 93.27, 93.79, 93.72, 93.79, 95.21}},
    {"cpu200", {83.77, 87.70, 89.92, 90.22, 92.40, 95.05}},
    {"gpushare40", {86.00, 89.56, 90.02, 90.03, 91.69, 94.15}},
    {"gpushare80", {81.22, 84.49, 84.85, 85.00, 87.01, 89.30}},
    {"gpuspec10", {87.43, 90.39, 92.18, 92.46, 93.30, 94.95}},
    {"gpuspec25", {86.94, 89.63, 92.08, 92.98, 93.23, 94.74}},
    {"multigpu20", {88.69, 92.06, 93.56, 93.71, 93.93, 95.65}},
    {"multigpu40", {90.09, 94.19, 95.50, 95.74, 95.23, 96.99}},
};

}  // namespace

std::optional<double> PublishedAllocPct(std::string_view variant, std::string_view policy) {
  for (const auto& row : kRows) {
    if (row.variant != variant) continue;
    for (size_t c = 0; c < kColumns.size(); ++c) {
      if (kColumns[c] == policy) return row.alloc[c];
    }
  }
  return std::nullopt;
}

std::string_view VariantOfPodFile(std::string_view path) {
  constexpr std::string_view kPrefix = "openb_pod_list_";
  const size_t slash = path.find_last_of('/');
  std::string_view name = slash == std::string_view::npos ? path : path.substr(slash + 1);
  if (name.substr(0, kPrefix.size()) != kPrefix) return "";
  name.remove_prefix(kPrefix.size());
  const size_t dot = name.find('.');
  return name.substr(0, dot);
}

}  // namespace gpool::sim
