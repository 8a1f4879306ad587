// The FGD paper's published allocation ratios at 130 % arrival (mean of 10
// seeds, from its artifact; ../shared/data/alibaba-gpu-v2023/README.md),
// printed beside gpool-sim's own runs.
#pragma once

#include <optional>
#include <string_view>

namespace gpool::sim {

// nullopt when the paper has no figure for this trace variant and policy.
std::optional<double> PublishedAllocPct(std::string_view variant, std::string_view policy);
// The variant a pod list file name names ("openb_pod_list_gpushare40.csv" -> "gpushare40"); "" if none.
std::string_view VariantOfPodFile(std::string_view path);

}  // namespace gpool::sim
